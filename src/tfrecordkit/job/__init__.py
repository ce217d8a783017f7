"""The conversion job, framework- and engine-free: what to convert and how (schema, splits,
shard plan, vocabularies) and how source items become encoded records. Engines
(:mod:`tfrecordkit.engines`) run it; :func:`tfrecordkit.convert` builds it and picks the
engine."""

from tfrecordkit.job._append import AppendTarget, grown_schema, open_images
from tfrecordkit.job._encoding import (
    SKIP_HINT,
    ConversionJob,
    EncodedChunk,
    EncodeJob,
    SplitAssigner,
    SplitSpec,
    encode_items,
    image_features,
)

__all__ = ["SKIP_HINT", "AppendTarget", "ConversionJob", "EncodeJob", "EncodedChunk",
           "SplitAssigner", "SplitSpec", "encode_items", "grown_schema", "image_features",
           "open_images"]
