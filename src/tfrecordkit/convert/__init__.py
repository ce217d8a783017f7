"""Converting sources into datasets: the front door (``convert``, ``write_dataset``) builds the
job (:mod:`tfrecordkit.job`) and runs it on an engine (:mod:`tfrecordkit.engines`): plan →
write shards → finalize the manifest. It sits above both, so neither imports it."""

from tfrecordkit.convert._append import append
from tfrecordkit.convert._pipeline import (
    ConversionResult,
    ConvertOptions,
    convert,
    run_conversion,
    write_dataset,
)
from tfrecordkit.convert._source_choice import SOURCE_KINDS, infer_kind, open_source

__all__ = [
    "SOURCE_KINDS",
    "ConversionResult",
    "ConvertOptions",
    "append",
    "convert",
    "infer_kind",
    "open_source",
    "run_conversion",
    "write_dataset",
]
