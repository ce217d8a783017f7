"""Framework-free sampling plans: epoch orders, P×K class-balanced batches and triplets (pure
functions of seed, epoch and step). Random access to a split lives in :mod:`tfrecordkit.store`
(re-exported here)."""

from tfrecordkit.codecs import (  # the crop arithmetic is a media step: it lives in codecs
    CROP_DRAWS,
    CROP_SALT,
    CROP_TRIES,
    EXP_TERMS,
    LN2_HI,
    LN2_LO,
    center_crop_box,
    center_crop_boxes,
    crop_draws,
    portable_exp,
    random_crop_box,
    random_crop_boxes,
    random_flips,
)
from tfrecordkit.sampling._class_index import ClassIndex
from tfrecordkit.sampling._mix import MixOrder, mix_weights
from tfrecordkit.sampling._order import EpochOrder, ShuffleMode, fingerprint
from tfrecordkit.sampling._plan import EpochUnit, PKSampler, TripletSampler
from tfrecordkit.sampling._state import MAX_EPOCH, check_state, state_int
from tfrecordkit.store import (  # random access lives with the dataset store
    RecordFetcher,
    RecordLocations,
    SplitLocations,
    SplitRecords,
    open_split,
    split_locations,
)

__all__ = [
    "CROP_DRAWS",
    "CROP_SALT",
    "CROP_TRIES",
    "EXP_TERMS",
    "LN2_HI",
    "LN2_LO",
    "MAX_EPOCH",
    "ClassIndex",
    "EpochOrder",
    "EpochUnit",
    "MixOrder",
    "PKSampler",
    "RecordFetcher",
    "RecordLocations",
    "ShuffleMode",
    "SplitLocations",
    "SplitRecords",
    "TripletSampler",
    "center_crop_box",
    "center_crop_boxes",
    "check_state",
    "crop_draws",
    "fingerprint",
    "mix_weights",
    "open_split",
    "portable_exp",
    "random_crop_box",
    "random_crop_boxes",
    "random_flips",
    "split_locations",
    "state_int",
]
