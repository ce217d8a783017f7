"""Framework-free record access and sampling plans: random access to a split, P×K
class-balanced batches and triplets."""

from tfrecordkit.sampling._class_index import ClassIndex
from tfrecordkit.sampling._fetch import RecordFetcher, RecordLocations
from tfrecordkit.sampling._order import EpochOrder, ShuffleMode, fingerprint
from tfrecordkit.sampling._plan import EpochUnit, PKSampler, TripletSampler
from tfrecordkit.sampling._split import SplitLocations, SplitRecords, open_split, split_locations
from tfrecordkit.sampling._state import MAX_EPOCH, check_state, state_int

__all__ = [
    "MAX_EPOCH",
    "ClassIndex",
    "EpochOrder",
    "EpochUnit",
    "PKSampler",
    "RecordFetcher",
    "RecordLocations",
    "ShuffleMode",
    "SplitLocations",
    "SplitRecords",
    "TripletSampler",
    "check_state",
    "fingerprint",
    "open_split",
    "split_locations",
    "state_int",
]
