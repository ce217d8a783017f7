"""Converting sources into datasets: plan → write shards → finalize the manifest."""

from tfrecordkit.convert._pipeline import ConversionResult, SplitSpec, convert, write_dataset
from tfrecordkit.convert._source_choice import SOURCE_KINDS, open_source

__all__ = ["SOURCE_KINDS", "ConversionResult", "SplitSpec", "convert", "open_source",
           "write_dataset"]
