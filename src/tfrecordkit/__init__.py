"""tfrecordkit: convert ML datasets into sharded TFRecord files and stream them back, fast.

Importing this package never imports TensorFlow, PyTorch or a distributed engine; the readers
for those (``load_tf_dataset``, ...) are imported on first use.
"""

from typing import TYPE_CHECKING, Any

from tfrecordkit.convert import ConversionResult, append, convert, open_source, write_dataset
from tfrecordkit.errors import (
    CorruptRecordError,
    DatasetError,
    IndexUnavailableError,
    MissingDependencyError,
    OptionError,
    OutOfRangeError,
    RecordFormatError,
    RepeatedEpochWarning,
    SchemaError,
    SourceError,
    StateError,
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
from tfrecordkit.schema import (
    Audio,
    Boxes,
    ClassLabel,
    FeatureList,
    Image,
    Scalar,
    Schema,
    Sequence,
    Tensor,
    Text,
    Vocabulary,
)
from tfrecordkit.sources import (
    AudioFolder,
    Coco,
    ImageFolder,
    NumpyArrays,
    Records,
    Table,
    TextLines,
)
from tfrecordkit.store import (
    Manifest,
    ShardOptions,
    SplitRecords,
    adopt,
    infer_schema,
    load_manifest,
    open_split,
)

if TYPE_CHECKING:  # real signatures for type checkers; imported on first use at run time
    from tfrecordkit.exporters import export
    from tfrecordkit.look import dataset_report, show_examples
    from tfrecordkit.readers.grain_source import load_grain_source
    from tfrecordkit.readers.numpy_data import (
        PK,
        DecodeOptions,
        InOrder,
        Mix,
        Partition,
        ReadOptions,
        Shuffled,
        Triplets,
        load_numpy_dataset,
    )
    from tfrecordkit.readers.tf_data import (
        batch_hard_triplet_loss,
        feature_description,
        load_tf_dataset,
        random_brightness,
        random_crop,
        random_flip,
    )
    from tfrecordkit.readers.torch_data import load_torch_dataset

from tfrecordkit._version import __version__

# Readers imported on first use (tf_data imports TensorFlow): name -> module.
_LAZY = {
    "load_tf_dataset": "tfrecordkit.readers.tf_data",
    "batch_hard_triplet_loss": "tfrecordkit.readers.tf_data",
    "feature_description": "tfrecordkit.readers.tf_data",
    "random_brightness": "tfrecordkit.readers.tf_data",
    "random_crop": "tfrecordkit.readers.tf_data",
    "random_flip": "tfrecordkit.readers.tf_data",
    "DecodeOptions": "tfrecordkit.readers.numpy_data",
    "Partition": "tfrecordkit.readers.numpy_data",
    "InOrder": "tfrecordkit.readers.numpy_data",
    "Shuffled": "tfrecordkit.readers.numpy_data",
    "PK": "tfrecordkit.readers.numpy_data",
    "Mix": "tfrecordkit.readers.numpy_data",
    "Triplets": "tfrecordkit.readers.numpy_data",
    "ReadOptions": "tfrecordkit.readers.numpy_data",
    "load_numpy_dataset": "tfrecordkit.readers.numpy_data",
    "load_torch_dataset": "tfrecordkit.readers.torch_data",
    "load_grain_source": "tfrecordkit.readers.grain_source",
    "show_examples": "tfrecordkit.look",
    "dataset_report": "tfrecordkit.look",
    "export": "tfrecordkit.exporters",
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import importlib

        module = importlib.import_module(_LAZY[name])
        return getattr(module, name)
    raise AttributeError(f"module 'tfrecordkit' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(__all__)


__all__ = [  # the readers among these are imported on first use (see _LAZY)
    "PK",
    "Audio",
    "AudioFolder",
    "Boxes",
    "ClassLabel",
    "Coco",
    "ConversionResult",
    "CorruptRecordError",
    "DatasetError",
    "DecodeOptions",
    "FeatureList",
    "Image",
    "ImageFolder",
    "InOrder",
    "IndexUnavailableError",
    "Manifest",
    "MissingDependencyError",
    "Mix",
    "NumpyArrays",
    "OptionError",
    "OutOfRangeError",
    "Partition",
    "ReadOptions",
    "RecordFormatError",
    "RecordReader",
    "RecordWriter",
    "Records",
    "RepeatedEpochWarning",
    "Scalar",
    "Schema",
    "SchemaError",
    "Sequence",
    "ShardOptions",
    "Shuffled",
    "SourceError",
    "SplitRecords",
    "StateError",
    "StorageError",
    "TFRecordKitError",
    "Table",
    "Tensor",
    "Text",
    "TextLines",
    "Triplets",
    "Vocabulary",
    "__version__",
    "adopt",
    "append",
    "batch_hard_triplet_loss",
    "build_index",
    "convert",
    "dataset_report",
    "decode_example",
    "decode_sequence_example",
    "encode_example",
    "encode_sequence_example",
    "export",
    "feature_description",
    "infer_schema",
    "load_grain_source",
    "load_manifest",
    "load_numpy_dataset",
    "load_tf_dataset",
    "load_torch_dataset",
    "open_source",
    "open_split",
    "random_brightness",
    "random_crop",
    "random_flip",
    "read_records",
    "show_examples",
    "write_dataset",
]
