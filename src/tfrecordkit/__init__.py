"""tfrecordkit: convert ML datasets into sharded TFRecord files and stream them back, fast.

Importing this package never imports TensorFlow, PyTorch or a distributed engine; the readers
for those (``load_tf_dataset``, ...) are imported on first use.
"""

from typing import Any

from tfrecordkit.convert import ConversionResult, convert, open_source, write_dataset
from tfrecordkit.errors import (
    CorruptRecordError,
    DatasetError,
    IndexUnavailableError,
    MissingDependencyError,
    SchemaError,
    SourceError,
    StorageError,
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
from tfrecordkit.sampling import SplitRecords, open_split
from tfrecordkit.schema import (
    Audio,
    ClassLabel,
    Image,
    Scalar,
    Schema,
    Sequence,
    Tensor,
    Text,
)
from tfrecordkit.store import Manifest, load_manifest

__version__ = "0.1.0"

# Readers imported on first use (tf_data imports TensorFlow): name -> module.
_LAZY = {
    "load_tf_dataset": "tfrecordkit.readers.tf_data",
    "load_tf_pk_dataset": "tfrecordkit.readers.tf_data",
    "load_tf_triplet_dataset": "tfrecordkit.readers.tf_data",
    "iter_pk_batches": "tfrecordkit.readers.numpy_data",
    "iter_triplets": "tfrecordkit.readers.numpy_data",
    "load_numpy_dataset": "tfrecordkit.readers.numpy_data",
    "load_torch_dataset": "tfrecordkit.readers.torch_data",
    "load_torch_pk_dataset": "tfrecordkit.readers.torch_data",
    "load_torch_triplet_dataset": "tfrecordkit.readers.torch_data",
    "load_grain_source": "tfrecordkit.readers.grain_source",
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import importlib

        module = importlib.import_module(_LAZY[name])
        return getattr(module, name)
    raise AttributeError(f"module 'tfrecordkit' has no attribute {name!r}")


__all__ = [
    "Audio",
    "ClassLabel",
    "ConversionResult",
    "CorruptRecordError",
    "DatasetError",
    "Image",
    "IndexUnavailableError",
    "Manifest",
    "MissingDependencyError",
    "RecordReader",
    "RecordWriter",
    "Scalar",
    "Schema",
    "SchemaError",
    "Sequence",
    "SourceError",
    "SplitRecords",
    "StorageError",
    "TFRecordKitError",
    "Tensor",
    "Text",
    "__version__",
    "build_index",
    "convert",
    "decode_example",
    "decode_sequence_example",
    "encode_example",
    "encode_sequence_example",
    "load_manifest",
    "open_source",
    "open_split",
    "read_records",
    "write_dataset",
]
