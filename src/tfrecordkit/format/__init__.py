"""The TF-free TFRecord format layer: framing with CRC checks, compression, Example codec, index.

Imports nothing heavier than NumPy and protobuf.
"""

from tfrecordkit.format._columns import Column, RecordSlices, codec_name, parse_examples
from tfrecordkit.format._crc import (
    HEAD_BYTES,
    crc32c_hex,
    file_checksums,
    file_crc32c,
    head_crc32c,
    masked_crc32c,
)
from tfrecordkit.format._example import (
    DecodedValue,
    FeatureValue,
    decode_example,
    decode_sequence_example,
    encode_example,
    encode_sequence_example,
)
from tfrecordkit.format._filesystem import LOCAL, Storage
from tfrecordkit.format._framing import (
    FRAME_OVERHEAD,
    ErrorPolicy,
    ReadStats,
    RecordReader,
    RecordWriter,
    check_frame,
    frame_record,
    read_records,
)
from tfrecordkit.format._index import build_index, index_path_for, load_index
from tfrecordkit.format._spec import KeySpec, check_key

__all__ = [
    "FRAME_OVERHEAD",
    "HEAD_BYTES",
    "LOCAL",
    "Column",
    "DecodedValue",
    "ErrorPolicy",
    "FeatureValue",
    "KeySpec",
    "ReadStats",
    "RecordReader",
    "RecordSlices",
    "RecordWriter",
    "Storage",
    "build_index",
    "check_frame",
    "check_key",
    "codec_name",
    "crc32c_hex",
    "decode_example",
    "decode_sequence_example",
    "encode_example",
    "encode_sequence_example",
    "file_checksums",
    "file_crc32c",
    "frame_record",
    "head_crc32c",
    "index_path_for",
    "load_index",
    "masked_crc32c",
    "parse_examples",
    "read_records",
]
