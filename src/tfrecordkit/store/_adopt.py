"""``adopt``: make TFRecord files that another tool wrote a tfrecordkit dataset, without
rewriting them: a ``dataset.json`` (schema inferred from a sample, counts, checksums, class
counts and, for one-class files, the per-class layout) and an ``.index`` per file."""

from __future__ import annotations

import logging
import os
import re
import shutil
from collections import Counter, deque
from collections.abc import Iterator, Sequence
from itertools import islice
from typing import Any

import numpy as np

from tfrecordkit.errors import DatasetError, SchemaError
from tfrecordkit.format import RecordReader, Storage
from tfrecordkit.format._crc import file_crc32c
from tfrecordkit.format._framing import FRAME_OVERHEAD
from tfrecordkit.format._index import INDEX_SUFFIX, write_index
from tfrecordkit.schema import (
    ClassLabel,
    Feature,
    FeatureProfile,
    Image,
    Scalar,
    Schema,
    Text,
    profile_records,
)
from tfrecordkit.schema import (
    Sequence as SequenceFeature,
)
from tfrecordkit.store._inputs import expand_record_paths
from tfrecordkit.store._labels import labels_of
from tfrecordkit.store._manifest import MANIFEST_NAME, Manifest, ShardInfo
from tfrecordkit.store._options import ShardOptions
from tfrecordkit.store._plan import finalize_manifest

__all__ = ["adopt"]

logger = logging.getLogger(__name__)

LABEL_NAMES = ("label", "labels", "class", "target", "y")
_SAMPLE_PER_FILE = 200
_SAMPLE_FILES = 8
_COMPRESSION = {".gz": "gzip", ".gzip": "gzip", ".zz": "zlib", ".zlib": "zlib"}


def adopt(
    paths: str | os.PathLike[str] | Sequence[str | os.PathLike[str]],
    out_dir: str | os.PathLike[str] | None = None,
    *,
    split: str = "train",
    label_feature: str | None = None,
    class_names: Sequence[str] | None = None,
    class_pattern: str | None = None,
    overwrite: bool = False,
    storage_options: dict[str, Any] | None = None,
) -> Manifest:
    """Describe existing TFRecord files of ``tf.train.Example`` records as one split of a
    dataset, so every reader (P×K and triplet sampling included) can use them.

    The files are neither rewritten nor re-encoded: those outside ``out_dir`` are linked into
    it (a hard link where the filesystem allows, else a byte copy). Every record is read once
    to check its CRCs, count it, index it and read its class.

    Args:
        paths: files, globs or directories (local or URLs).
        out_dir: the dataset directory (default: the folder holding the files).
        split: the split the files form.
        label_feature: the int64 feature holding class ids (default: one named ``label``,
            ``labels``, ``class``, ``target`` or ``y``, if there is one); with
            ``class_pattern``, the name the class taken from file names gets (default
            ``"label"``).
        class_names: names of classes ``0..n-1`` (default: ``"0"``, ``"1"``, ...; with
            ``class_pattern``, the numbers or the sorted names found).
        class_pattern: for records that carry no label, one class per file: a regular
            expression searched in each file's name, whose group ``class`` (else its first
            group, else the whole match) is the class, a number or a name (e.g.
            ``r"class_(\\d+)"``). Every reader then gives each record its file's class
            (a :class:`~tfrecordkit.schema.ClassLabel` with ``from_shard=True``).
        overwrite: replace an existing ``dataset.json``.
        storage_options: options for URLs' filesystem (fsspec).

    Returns:
        The manifest written (``dataset.json``, written last).

    Raises:
        DatasetError: no files, names that clash, compression that differs between files, a
            label outside the class names; CorruptRecordError for a record that fails its
            checks (nothing is written).
    """
    inputs = [os.fspath(p) for p in ([paths] if isinstance(paths, str | os.PathLike)
                                     else paths)]
    files = expand_record_paths(inputs, storage_options, manifests=False)
    if not files:
        raise DatasetError(f"no TFRecord files in {inputs}")
    storage = Storage.of(files[0], storage_options)
    target = os.fspath(out_dir) if out_dir is not None else _common_folder(files)
    compression = _compression_of(files)
    manifest_path = storage.join(target, MANIFEST_NAME)
    if storage.exists(manifest_path) and not overwrite:
        raise DatasetError(f"{target} already holds a dataset; pass overwrite=True "
                           "(--overwrite) to replace it")
    names = [os.path.basename(f.rstrip("/")) for f in files]
    clashes = sorted(n for n, c in Counter(names).items() if c > 1)
    if clashes or MANIFEST_NAME in names:
        raise DatasetError(f"files would share a name in {target}: "
                           f"{clashes or [MANIFEST_NAME]}")
    profile = profile_records(_sample(files, storage), limit=None)
    if profile.message_type != "Example":
        raise DatasetError(f"{files[0]}: SequenceExample records; adopt describes Examples")
    if profile.unparsable:
        raise DatasetError(f"{files[0]}: {profile.unparsable} sampled record(s) are not "
                           "tf.train.Example messages")
    file_classes: list[int] | None = None
    if class_pattern is not None:
        file_classes, class_names = _classes_from_names(files, class_pattern, class_names)
        label_feature = label_feature or "label"
        if label_feature in profile.features:
            raise DatasetError(f"the records already hold a feature {label_feature!r}; name "
                               "the class taken from file names with label_feature")
    label_feature = label_feature or _label_candidate(profile)
    parsed_label = label_feature if file_classes is None else None
    if parsed_label is not None and not _is_int_scalar(profile.features.get(parsed_label),
                                                       profile.records):
        raise DatasetError(f"{parsed_label!r} is not one int64 per record in "
                           f"{files[0]}; name the class feature with label_feature")
    placed = [_place(file, target, storage) for file in files]
    shards, top = [], -1
    for number, file in enumerate(placed):
        # One CRC-checked pass gives the count, the offsets and the labels.
        offsets: list[tuple[int, int]] = []

        def records_of(file: str = file, offsets: list[tuple[int, int]] = offsets
                       ) -> Iterator[bytes]:
            for offset, record in RecordReader(file, storage=storage).iter_with_offsets():
                offsets.append((offset, len(record) + FRAME_OVERHEAD))
                yield record

        if parsed_label is not None:
            labels = labels_of(records_of(), parsed_label, file)
        else:
            deque(records_of(), maxlen=0)  # read (and check) every record
        records = len(offsets)
        if compression is None:
            write_index(np.array(offsets, np.int64).reshape(-1, 2), file + INDEX_SUFFIX,
                        storage)
        counts: dict[str, int] = {}
        class_id = None
        if file_classes is not None:
            class_id = file_classes[number]
            counts = {str(class_id): records} if records else {}
        elif parsed_label is not None:
            if labels.size and int(labels.min()) < 0:
                raise DatasetError(f"{file}: class id {int(labels.min())} is negative")
            ids, n = np.unique(labels, return_counts=True)
            counts = {str(int(i)): int(c) for i, c in zip(ids, n, strict=True)}
            top = max(top, int(ids.max()) if ids.size else -1)
            class_id = int(ids[0]) if len(ids) == 1 else None
        shards.append(ShardInfo(
            file=os.path.basename(file), records=records, bytes=storage.size(file),
            crc32c=file_crc32c(file, storage=storage),
            index=(os.path.basename(file) + INDEX_SUFFIX) if compression is None else None,
            class_id=class_id, class_counts=counts))
    per_class = label_feature is not None and all(s.class_id is not None for s in shards)
    if parsed_label is not None:
        if class_names is None:
            class_names = [str(i) for i in range(top + 1)]
        elif top >= len(class_names):
            raise DatasetError(f"class id {top} found, but only {len(class_names)} class "
                               "names given")
    schema = _schema_of(profile, parsed_label, class_names)
    if file_classes is not None:
        assert label_feature is not None and class_names is not None
        schema = Schema({**schema, label_feature: ClassLabel(class_names, from_shard=True)})
    if not per_class:
        shards = [ShardInfo(s.file, s.records, s.bytes, s.crc32c, s.index, None,
                            s.class_counts) for s in shards]
    options = ShardOptions(layout="per_class" if per_class else "mixed",
                           compression=compression, shuffle=False,
                           index=compression is None)
    from tfrecordkit import __version__

    manifest = finalize_manifest(
        target, {split: shards}, schema=schema, options=options, label_feature=label_feature,
        created_by={"tool": "tfrecordkit adopt", "version": __version__,
                    "source": ", ".join(inputs)}, storage=storage)
    logger.info("adopted %d file(s), %d records, as split %r of %s",
                len(shards), sum(s.records for s in shards), split, target)
    return manifest


def _classes_from_names(files: list[str], pattern: str, class_names: Sequence[str] | None
                        ) -> tuple[list[int], list[str]]:
    """Each file's class id, from the part of its name ``pattern`` picks, and the class
    names (given, else the numbers ``0..max`` or the sorted names found)."""
    try:
        regex = re.compile(pattern)
    except re.error as err:
        raise DatasetError(f"class_pattern {pattern!r} is not a regular expression: "
                           f"{err}") from None
    group: int | str = ("class" if "class" in regex.groupindex else 1 if regex.groups else 0)
    found = []
    for file in files:
        match = regex.search(os.path.basename(file.rstrip("/")))
        if match is None or not match.group(group):
            raise DatasetError(f"{file}: its name does not give a class by class_pattern "
                               f"{pattern!r}")
        found.append(match.group(group))
    if class_names is not None:
        names = [str(n) for n in class_names]
        lookup = {n: i for i, n in enumerate(names)}
        ids = []
        for file, text in zip(files, found, strict=True):
            if text in lookup:
                ids.append(lookup[text])
            elif text.isdigit() and int(text) < len(names):
                ids.append(int(text))
            else:
                raise DatasetError(f"{file}: class {text!r} (by class_pattern) is not among "
                                   f"the {len(names)} class names")
        return ids, names
    if all(text.isdigit() for text in found):
        ids = [int(text) for text in found]
        return ids, [str(i) for i in range(max(ids) + 1)]
    names = sorted(set(found))
    lookup = {n: i for i, n in enumerate(names)}
    return [lookup[text] for text in found], names


def _common_folder(files: list[str]) -> str:
    folders = {os.path.dirname(f) for f in files}
    if len(folders) != 1:
        raise DatasetError(f"the files lie in {len(folders)} folders; give out_dir "
                           "(files outside it are linked or copied in)")
    return folders.pop() or "."


def _compression_of(files: list[str]) -> str | None:
    found = {_COMPRESSION.get(os.path.splitext(f)[1]) for f in files}
    if len(found) != 1:
        raise DatasetError(f"the files mix compressions ({sorted(map(str, found))}); adopt "
                           "them as separate datasets")
    return found.pop()


def _sample(files: list[str], storage: Storage) -> Iterator[bytes]:
    """The first records of the first few files (and of the last one)."""
    chosen = files[:_SAMPLE_FILES] + ([files[-1]] if len(files) > _SAMPLE_FILES else [])
    for file in chosen:
        yield from islice(RecordReader(file, storage=storage), _SAMPLE_PER_FILE)


def _is_int_scalar(profile: FeatureProfile | None, records: int) -> bool:
    return (profile is not None and profile.kind == "int64" and profile.present == records
            and profile.min_count == profile.max_count == 1)


def _label_candidate(profile: Any) -> str | None:
    for name in LABEL_NAMES:
        if _is_int_scalar(profile.features.get(name), profile.records):
            return name
    return None


def _schema_of(profile: Any, label_feature: str | None,
               class_names: Sequence[str] | None) -> Schema:
    """Typed features for the sampled records: one value per record → a scalar (an image or
    text when the bytes say so); anything else → a sequence."""
    features: dict[str, Feature] = {}
    kinds = {"bytes": "string", "float": "float32", "int64": "int64", "empty": "string"}
    for name, p in sorted(profile.features.items()):
        if name == label_feature:
            features[name] = ClassLabel(list(class_names or ()))
            continue
        single = p.present == profile.records and p.min_count == p.max_count == 1
        if single and p.kind == "bytes" and p.content in ("jpeg", "png"):
            features[name] = Image(p.content, dims=False)
        elif single and p.kind == "bytes" and p.content == "text":
            features[name] = Text()
        elif single:
            features[name] = Scalar(kinds[p.kind])
        else:
            features[name] = SequenceFeature(Scalar(kinds[p.kind]))
    try:
        return Schema(features)
    except SchemaError as err:
        raise DatasetError(f"cannot describe the records: {err}") from None


def _place(file: str, target: str, storage: Storage) -> str:
    """``file`` inside ``target``: as it is, or hard-linked (else copied) in."""
    placed = storage.join(target, os.path.basename(file.rstrip("/")))
    if os.path.normpath(placed) == os.path.normpath(file):
        return file
    if storage.exists(placed):
        raise DatasetError(f"{placed} exists; adopt won't replace a file with {file}")
    if storage.local:
        os.makedirs(target, exist_ok=True)
        try:
            os.link(file, placed)
        except OSError:
            shutil.copyfile(file, placed)
            logger.info("copied %s into %s (no hard link across filesystems)", file, target)
    else:
        storage.fs.copy(file, placed)
    return placed
