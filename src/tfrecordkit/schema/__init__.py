"""Typed features and their mapping to ``tf.train.Example``; profiling records of unknown layout."""

from tfrecordkit.schema._profile import FeatureProfile, ListKind, RecordProfile, profile_records
from tfrecordkit.schema._sniff import ContentType, sniff_bytes

__all__ = [
    "ContentType",
    "FeatureProfile",
    "ListKind",
    "RecordProfile",
    "profile_records",
    "sniff_bytes",
]
