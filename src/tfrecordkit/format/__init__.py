"""The TF-free TFRecord format layer: framing with CRC checks, compression, Example codec, index.

Imports nothing heavier than NumPy and protobuf.
"""

from tfrecordkit.format._crc import masked_crc32c
from tfrecordkit.format._example import (
    DecodedValue,
    FeatureValue,
    decode_example,
    decode_sequence_example,
    encode_example,
    encode_sequence_example,
)
from tfrecordkit.format._framing import (
    ErrorPolicy,
    ReadStats,
    RecordReader,
    RecordWriter,
    check_frame,
    frame_record,
    read_records,
)
from tfrecordkit.format._index import build_index, index_path_for, load_index

__all__ = [
    "DecodedValue",
    "ErrorPolicy",
    "FeatureValue",
    "ReadStats",
    "RecordReader",
    "RecordWriter",
    "build_index",
    "check_frame",
    "decode_example",
    "decode_sequence_example",
    "encode_example",
    "encode_sequence_example",
    "frame_record",
    "index_path_for",
    "load_index",
    "masked_crc32c",
    "read_records",
]
