"""Readers: the read plan and the one batch layout every reader follows, and one back-end per
framework, each imported only when used.

- ``tfrecordkit.readers.tf_data``: ``tf.data`` pipelines (needs the ``tf`` extra).
- ``tfrecordkit.readers.numpy_data``: NumPy batches without any framework (P×K and triplets
  too); ``torch_data`` and ``grain_source`` wrap it.
"""

from tfrecordkit.readers._decoding import (
    DecodeOptions,
    RecordDecoder,
    decode_options,
    record_values,
)
from tfrecordkit.readers._keys import CLASS_ID, CLASS_POSITION, RECORD_ID, SOURCE, VALID
from tfrecordkit.readers._layout import BatchLayout, FeatureLayout, Kind
from tfrecordkit.readers._mix import Mix, MixPlan, refuse_mix
from tfrecordkit.readers._modes import (
    PK,
    InOrder,
    ReadOptions,
    Sampling,
    SamplingMode,
    Shuffled,
    Triplets,
    refuse_moved,
    refuse_untaken,
)
from tfrecordkit.readers._open import open_records
from tfrecordkit.readers._partition import Partition
from tfrecordkit.readers._read_plan import FilesArg, PathArg, ReadPlan, plan_read

__all__ = [
    "CLASS_ID",
    "CLASS_POSITION",
    "PK",
    "RECORD_ID",
    "SOURCE",
    "VALID",
    "BatchLayout",
    "DecodeOptions",
    "FeatureLayout",
    "FilesArg",
    "InOrder",
    "Kind",
    "Mix",
    "MixPlan",
    "Partition",
    "PathArg",
    "ReadOptions",
    "ReadPlan",
    "RecordDecoder",
    "Sampling",
    "SamplingMode",
    "Shuffled",
    "Triplets",
    "decode_options",
    "open_records",
    "plan_read",
    "record_values",
    "refuse_mix",
    "refuse_moved",
    "refuse_untaken",
]
