"""Converting sources into datasets: plan → write shards → finalize the manifest, on an engine
(:mod:`tfrecordkit.engines`). The job and encoding names are what engines build on."""

from tfrecordkit.convert._encoding import (
    SKIP_HINT,
    ConversionJob,
    EncodedChunk,
    EncodeJob,
    SplitAssigner,
    SplitSpec,
    encode_items,
    image_features,
)
from tfrecordkit.convert._pipeline import ConversionResult, convert, run_conversion, write_dataset
from tfrecordkit.convert._source_choice import SOURCE_KINDS, open_source

__all__ = ["SKIP_HINT", "SOURCE_KINDS", "ConversionJob", "ConversionResult", "EncodeJob",
           "EncodedChunk",
           "SplitAssigner", "SplitSpec", "convert", "encode_items",
           "image_features", "open_source", "run_conversion", "write_dataset"]
