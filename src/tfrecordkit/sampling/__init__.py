"""Framework-free sampling plans: epoch orders, mixes of several sources, P×K class-balanced
batches and triplets (pure functions of seed, epoch and step; crop windows, keyed alike, are
a media step in :mod:`tfrecordkit.codecs`). Random access to a split lives in
:mod:`tfrecordkit.store`."""

from tfrecordkit.sampling._class_index import ClassIndex
from tfrecordkit.sampling._class_samplers import EpochUnit, PKSampler, TripletSampler
from tfrecordkit.sampling._mix import MixOrder, mix_weights
from tfrecordkit.sampling._order import EpochOrder, ShuffleMode, fingerprint
from tfrecordkit.sampling._state import MAX_EPOCH, check_state, state_int

__all__ = [
    "MAX_EPOCH",
    "ClassIndex",
    "EpochOrder",
    "EpochUnit",
    "MixOrder",
    "PKSampler",
    "ShuffleMode",
    "TripletSampler",
    "check_state",
    "fingerprint",
    "mix_weights",
    "state_int",
]
