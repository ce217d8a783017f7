"""tfrecordkit: convert ML datasets into sharded TFRecord files and stream them back, fast.

Importing this package never imports TensorFlow, PyTorch or a distributed engine; readers for
those live in ``tfrecordkit.readers`` and are imported only when asked for.
"""

from tfrecordkit.errors import (
    CorruptRecordError,
    DatasetError,
    IndexUnavailableError,
    MissingDependencyError,
    SchemaError,
    TFRecordKitError,
)
from tfrecordkit.format import (
    RecordReader,
    RecordWriter,
    build_index,
    decode_example,
    decode_sequence_example,
    encode_example,
    encode_sequence_example,
    read_records,
)

__version__ = "0.1.0"

__all__ = [
    "CorruptRecordError",
    "DatasetError",
    "IndexUnavailableError",
    "MissingDependencyError",
    "RecordReader",
    "RecordWriter",
    "SchemaError",
    "TFRecordKitError",
    "__version__",
    "build_index",
    "decode_example",
    "decode_sequence_example",
    "encode_example",
    "encode_sequence_example",
    "read_records",
]
