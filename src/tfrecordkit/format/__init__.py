"""The TF-free TFRecord format layer: framing with CRC checks, compression, Example codec, index.

Imports nothing heavier than NumPy and protobuf.
"""

from tfrecordkit.format._columns import (
    Column,
    RecordSlices,
    codec_name,
    compiled_codec,
    parse_example,
    parse_examples,
)
from tfrecordkit.format._compression import normalize_compression
from tfrecordkit.format._crc import (
    HEAD_BYTES,
    crc32c_hex,
    file_checksums,
    file_crc32c,
    head_crc32c,
    masked_crc32c,
)
from tfrecordkit.format._encode import (
    EncColumn,
    EncodedFrames,
    bytes_column,
    encode_frames,
    float_column,
    int64_column,
    ragged_column,
    raw_column,
)
from tfrecordkit.format._example import (
    DecodedValue,
    FeatureValue,
    decode_example,
    decode_example_keys,
    decode_sequence_example,
    encode_example,
    encode_sequence_example,
    messages,
)
from tfrecordkit.format._feature_lists import feature_lists_wire, parse_feature_lists
from tfrecordkit.format._filesystem import LOCAL, MERGE_GAP, READ_BLOCK, Storage
from tfrecordkit.format._framing import (
    FRAME_OVERHEAD,
    RESTART_EVERY,
    ErrorPolicy,
    ReadStats,
    RecordWriter,
    check_frame,
    frame_record,
    frame_slices,
    split_frames,
)
from tfrecordkit.format._index import (
    INDEX_SUFFIX,
    check_index_frames,
    index_path_for,
    load_index,
    parse_index,
    write_index,
)
from tfrecordkit.format._reader import RecordReader, build_index, read_records, scan_offsets
from tfrecordkit.format._restarts import (
    RESTARTS_SUFFIX,
    SNAPSHOT_EVERY,
    Inflater,
    Restarts,
    load_restarts,
    parse_restarts,
    restarts_path_for,
)
from tfrecordkit.format._spec import KeySpec, SpecDtype, check_key
from tfrecordkit.format._tensor import decode_tensor_proto, encode_tensor_proto
from tfrecordkit.format._wire import feature_wire, frame_entry, map_entry_prefix, varint

__all__ = [
    "FRAME_OVERHEAD",
    "HEAD_BYTES",
    "INDEX_SUFFIX",
    "LOCAL",
    "MERGE_GAP",
    "READ_BLOCK",
    "RESTARTS_SUFFIX",
    "RESTART_EVERY",
    "SNAPSHOT_EVERY",
    "Column",
    "DecodedValue",
    "EncColumn",
    "EncodedFrames",
    "ErrorPolicy",
    "FeatureValue",
    "Inflater",
    "KeySpec",
    "ReadStats",
    "RecordReader",
    "RecordSlices",
    "RecordWriter",
    "Restarts",
    "SpecDtype",
    "Storage",
    "build_index",
    "bytes_column",
    "check_frame",
    "check_index_frames",
    "check_key",
    "codec_name",
    "compiled_codec",
    "crc32c_hex",
    "decode_example",
    "decode_example_keys",
    "decode_sequence_example",
    "decode_tensor_proto",
    "encode_example",
    "encode_frames",
    "encode_sequence_example",
    "encode_tensor_proto",
    "feature_lists_wire",
    "feature_wire",
    "file_checksums",
    "file_crc32c",
    "float_column",
    "frame_entry",
    "frame_record",
    "frame_slices",
    "head_crc32c",
    "index_path_for",
    "int64_column",
    "load_index",
    "load_restarts",
    "map_entry_prefix",
    "masked_crc32c",
    "messages",
    "normalize_compression",
    "parse_example",
    "parse_examples",
    "parse_feature_lists",
    "parse_index",
    "parse_restarts",
    "ragged_column",
    "raw_column",
    "read_records",
    "restarts_path_for",
    "scan_offsets",
    "split_frames",
    "varint",
    "write_index",
]
