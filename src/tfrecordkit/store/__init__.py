"""The dataset on disk: manifest (``dataset.json``), shard naming, the engine-neutral write
plan (``plan_split``, ``write_shard``, ``finalize_manifest``), the local sharded writer, and
random access to a split's records (``open_split``, ``RecordFetcher``)."""

from tfrecordkit.store._adopt import adopt
from tfrecordkit.store._digests import (
    DIGESTS_SUFFIX,
    RECORD_IDS,
    KnownRecords,
    content_digest,
    frame_ids,
    key_hash,
    read_digests,
)
from tfrecordkit.store._duplicates import Duplicates, find_duplicates
from tfrecordkit.store._expression import (
    SplitArg,
    SplitPart,
    is_expression,
    resolve_split,
    split_text,
)
from tfrecordkit.store._fetch import (
    REPLACED,
    RecordFetcher,
    RecordLocations,
    check_file_stamp,
    file_stamps,
)
from tfrecordkit.store._infer import infer_schema, profile_files, record_files
from tfrecordkit.store._inputs import expand_record_paths
from tfrecordkit.store._labels import scan_labels
from tfrecordkit.store._load import is_dataset_dir, load_manifest
from tfrecordkit.store._lock import OutputLock
from tfrecordkit.store._manifest import (
    MANIFEST_NAME,
    Manifest,
    ShardInfo,
    SplitInfo,
    check_split_name,
    shard_paths,
    text_of_name,
)
from tfrecordkit.store._naming import SHARD_PATTERN, append_tag, is_shard_file, shard_name
from tfrecordkit.store._options import DEFAULT_SHARD_SIZE, ShardOptions, record_hash
from tfrecordkit.store._shard import write_shard
from tfrecordkit.store._split import (
    SplitLocations,
    SplitRecords,
    joined_locations,
    open_split,
    split_locations,
    split_parts,
)
from tfrecordkit.store._verify import Verification, verify_file, verify_paths
from tfrecordkit.store._write_plan import (
    SKIPPED_LISTED,
    ShardSpec,
    SplitTotals,
    StreamCut,
    Tally,
    finalize_manifest,
    plan_split,
)
from tfrecordkit.store._writer import (
    ShardedWriter,
    listed_files,
    output_lock,
    prepare_output,
    remove_shards,
)

__all__ = [
    "DEFAULT_SHARD_SIZE",
    "DIGESTS_SUFFIX",
    "MANIFEST_NAME",
    "RECORD_IDS",
    "REPLACED",
    "SHARD_PATTERN",
    "SKIPPED_LISTED",
    "Duplicates",
    "KnownRecords",
    "Manifest",
    "OutputLock",
    "RecordFetcher",
    "RecordLocations",
    "ShardInfo",
    "ShardOptions",
    "ShardSpec",
    "ShardedWriter",
    "SplitArg",
    "SplitInfo",
    "SplitLocations",
    "SplitPart",
    "SplitRecords",
    "SplitTotals",
    "StreamCut",
    "Tally",
    "Verification",
    "adopt",
    "append_tag",
    "check_file_stamp",
    "check_split_name",
    "content_digest",
    "expand_record_paths",
    "file_stamps",
    "finalize_manifest",
    "find_duplicates",
    "frame_ids",
    "infer_schema",
    "is_dataset_dir",
    "is_expression",
    "is_shard_file",
    "joined_locations",
    "key_hash",
    "listed_files",
    "load_manifest",
    "open_split",
    "output_lock",
    "plan_split",
    "prepare_output",
    "profile_files",
    "read_digests",
    "record_files",
    "record_hash",
    "remove_shards",
    "resolve_split",
    "scan_labels",
    "shard_name",
    "shard_paths",
    "split_locations",
    "split_parts",
    "split_text",
    "text_of_name",
    "verify_file",
    "verify_paths",
    "write_shard",
]
