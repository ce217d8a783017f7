"""Converting sources into datasets: the front door (``convert``, ``write_dataset``) builds the
job (:mod:`tfrecordkit.job`) and runs it on an engine (:mod:`tfrecordkit.engines`): plan →
write shards → finalize the manifest. It sits above both, so neither imports it."""

from tfrecordkit.convert._pipeline import (
    ConversionResult,
    ConvertOptions,
    convert,
    run_conversion,
    write_dataset,
)
from tfrecordkit.convert._source_choice import SOURCE_KINDS, infer_kind, open_source
from tfrecordkit.job import (
    SKIP_HINT,
    ConversionJob,
    EncodedChunk,
    EncodeJob,
    SplitAssigner,
    SplitSpec,
    encode_items,
    image_features,
)

__all__ = [
    "SKIP_HINT",
    "SOURCE_KINDS",
    "ConversionJob",
    "ConversionResult",
    "ConvertOptions",
    "EncodeJob",
    "EncodedChunk",
    "SplitAssigner",
    "SplitSpec",
    "convert",
    "encode_items",
    "image_features",
    "infer_kind",
    "open_source",
    "run_conversion",
    "write_dataset",
]
