"""``adopt``: make TFRecord files that another tool wrote a tfrecordkit dataset, without
rewriting them: a ``dataset.json`` (schema inferred from a sample, counts, checksums, class
counts and, for one-class files, the per-class layout) and an ``.index`` per file."""

from __future__ import annotations

import contextlib
import dataclasses
import itertools
import logging
import os
import shutil
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from itertools import islice
from typing import Any

import numpy as np

from tfrecordkit.errors import DatasetError, SchemaError, StorageError
from tfrecordkit.format import (
    FRAME_OVERHEAD,
    INDEX_SUFFIX,
    KeySpec,
    RecordReader,
    Storage,
    file_checksums,
    load_restarts,
    restarts_path_for,
    write_index,
)
from tfrecordkit.schema import (
    Image,
    ImageObservations,
    RecordProfile,
    Schema,
    observe_image,
    profile_records,
    schema_from_profile,
)
from tfrecordkit.store._adopt_labels import Labels, is_int_scalar
from tfrecordkit.store._inputs import expand_record_paths
from tfrecordkit.store._labels import scan_columns
from tfrecordkit.store._load import load_manifest
from tfrecordkit.store._manifest import MANIFEST_NAME, Manifest, ShardInfo
from tfrecordkit.store._options import ShardOptions
from tfrecordkit.store._tfds import TFDS_INFO, is_tfds_dir, tfds_manifest
from tfrecordkit.store._write_plan import finalize_manifest

__all__ = ["adopt"]

logger = logging.getLogger(__name__)

_SAMPLE_PER_FILE = 200
_SAMPLE_FILES = 8


def _layout_and_schema(existing: Manifest | None, schema: Schema | None, labels: Labels,  # noqa: PLR0917
                       scanned: Any, first: str, target: str) -> tuple[bool, Schema]:
    """Whether the adopted files are laid out one class per file, and the schema that
    describes them: the joined dataset's (with what the new files showed), the one given,
    or the one inferred from every record."""
    per_class = labels.label_feature is not None and all(
        s.class_id is not None for s in scanned.shards)
    if existing is not None:
        if existing.layout == "per_class" and not per_class:
            raise DatasetError(f"{target} has one class per file (per_class); some of these "
                               "files hold several classes")
        return existing.layout == "per_class", _joined_schema(existing.schema,
                                                              scanned.observations)
    if schema is not None:
        return per_class, labels.with_file_class(labels.as_class_label(schema))
    return per_class, labels.with_file_class(_whole_schema(scanned.whole, labels, first))


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
    schema: Schema | None = None,
) -> Manifest:
    """Describe existing TFRecord files of ``tf.train.Example`` records as one split of a
    dataset, so every reader (P×K and triplet sampling included) can use them.

    The files are neither rewritten nor re-encoded: those outside ``out_dir`` are linked into
    it (a hard link where the filesystem allows, else a byte copy). Every record is read once
    to check its CRCs, count it, index it, read its class and its images' sizes.

    When ``out_dir`` already holds a dataset, the files become its new split ``split``: its
    schema must read them (checked on a sample), and its label and class names apply.

    A TFDS-prepared version folder (one path holding ``dataset_info.json``) keeps its
    splits, shards and schema as TFDS describes them (see
    :func:`~tfrecordkit.store.load_manifest`); ``split`` and the label options do not apply.

    Args:
        paths: files, globs or directories (local or URLs).
        out_dir: the dataset directory (default: the folder holding the files).
        split: the split the files form.
        label_feature: the int64 feature holding class ids (default: one named ``label``,
            ``labels``, ``class``, ``target`` or ``y``, if there is one); with
            ``class_pattern``, the name the class taken from file names gets (default
            ``"label"``).
        class_names: names of classes ``0..n-1`` (default: ``"0"``, ``"1"``, ...; with
            ``class_pattern``, the texts found, numbered in numeric order when all are
            integers, else in sorted order).
        class_pattern: for records that carry no label, one class per file: a regular
            expression searched in each file's name, whose group ``class`` (else its first
            group, else the whole match) is the class, a number or a name (e.g.
            ``r"class_(\\d+)"``). Every reader then gives each record its file's class
            (a :class:`~tfrecordkit.schema.ClassLabel` with ``from_shard=True``).
        overwrite: replace an existing ``dataset.json`` (rather than add a split to it).
        storage_options: options for URLs' filesystem (fsspec).
        schema: the schema the records are read with (checked on a sample: keys it leaves
            out are not read, as with a loader's ``schema=``); default: inferred from every
            record by the rule globs use (see :func:`infer_schema`). Its class label, if
            any, is the label unless ``label_feature`` says otherwise.

    Returns:
        The manifest written (``dataset.json``, written last).

    Raises:
        DatasetError: no files, names that clash, compression that differs between files, a
            label outside the class names, files the dataset's schema can't read, a split the
            dataset already has; CorruptRecordError for a record that fails its checks
            (nothing is written).
    """
    inputs = [os.fspath(p) for p in ([paths] if isinstance(paths, str | os.PathLike)
                                     else paths)]
    tfds = _tfds_input(inputs, out_dir, overwrite=overwrite, storage_options=storage_options)
    if tfds is not None:
        return tfds
    files = expand_record_paths(inputs, storage_options, manifests=False)
    if not files:
        raise DatasetError(f"no TFRecord files in {inputs}")
    storage = Storage.of(files[0], storage_options)
    target = os.fspath(out_dir) if out_dir is not None else _common_folder(files)
    compression = _compression_of(files, storage)
    existing = None
    own = _own_classes(files, target, storage)
    if storage.exists(storage.join(target, MANIFEST_NAME)) and not overwrite:
        existing = load_manifest(target, storage=storage)
        label_feature, class_names = _join(existing, target, split, compression,
                                           label_feature=label_feature,
                                           class_names=class_names, class_pattern=class_pattern)
    if own is not None and class_pattern is None:
        class_names = _names_of_own(own, class_names, label_feature,
                                    target if existing is not None else None)
        if schema is not None:
            raise DatasetError(f"{target} already holds a dataset, whose schema its new split "
                               "is read with: leave out schema=, or pass overwrite=True")
    _check_names(files, target)
    # Joining a dataset (or given a schema): it must read the same sample the profile sees.
    reader = existing.schema if existing is not None else schema
    profile = profile_records(list(_sample(files, storage, _readable_by(reader)
                                           if reader is not None else None)), limit=None)
    if profile.unparsable:
        raise DatasetError(f"{files[0]}: {profile.unparsable} sampled record(s) are not "
                           "tf.train.Example messages")
    labels = Labels.resolve(files, profile, schema, label_feature=label_feature,
                             class_names=class_names, class_pattern=class_pattern)
    # A failure removes the links and index files made so far: a retry finds the folder as
    # it was (and nothing is written unless everything is).
    with _Undo(storage) as undo:
        scanned = _scan_files(files, target, split, storage, undo, compression=compression,
                              labels=labels, existing=existing,
                              whole=existing is None and schema is None)
        labels = labels.with_names_up_to(scanned.top)
        per_class, described = _layout_and_schema(existing, schema, labels, scanned,
                                                  files[0], target)
        shards = scanned.shards if per_class else [
            dataclasses.replace(s, class_id=None) for s in scanned.shards]
        options = ShardOptions(layout="per_class" if per_class else "mixed",
                               compression=compression, shuffle=False, index=True)
        manifest = _write_manifest(target, split, shards, existing=existing, inputs=inputs,
                                   storage=storage, schema=described, options=options,
                                   label_feature=labels.label_feature)
    logger.info("adopted %d file(s), %d records, as split %r of %s",
                len(shards), sum(s.records for s in shards), split, target)
    return manifest


def _tfds_input(inputs: list[str], out_dir: str | os.PathLike[str] | None, *, overwrite: bool,
                storage_options: dict[str, Any] | None) -> Manifest | None:
    """The manifest of a TFDS-prepared version folder, when ``inputs`` is one; else None."""
    if len(inputs) != 1:
        return None
    storage = Storage.of(inputs[0], storage_options)
    if not is_tfds_dir(inputs[0], storage):
        return None
    target = os.fspath(out_dir) if out_dir is not None else inputs[0]
    if storage.exists(storage.join(target, MANIFEST_NAME)) and not overwrite:
        raise DatasetError(f"{target} already holds {MANIFEST_NAME}; pass "
                           "overwrite=True (--overwrite) to replace it")
    return _adopt_tfds(inputs[0], target, storage)


def _check_names(files: list[str], target: str) -> None:
    names = [os.path.basename(f.rstrip("/")) for f in files]
    clashes = sorted(n for n, c in Counter(names).items() if c > 1)
    if clashes or MANIFEST_NAME in names:
        raise DatasetError(f"files would share a name in {target}: "
                           f"{clashes or [MANIFEST_NAME]}")


@dataclasses.dataclass
class _Scanned:
    shards: list[ShardInfo]
    top: int  # the highest class id read, -1 for none
    observations: ImageObservations
    whole: RecordProfile | None


def _scan_files(files: list[str], target: str, split: str, storage: Storage, undo: _Undo, *,
                compression: str | None, labels: Labels, existing: Manifest | None,
                whole: bool) -> _Scanned:
    """Every file placed in ``target``, read once (CRCs, count, index, classes, images'
    sizes, and with ``whole`` a profile of every record) and described as a shard."""
    placements = _placements(files, target, split, storage)
    placed = [_place(file, where, storage, undo) for file, where in placements]
    # Restart points written beside compressed files (by tfrecordkit's writer) come
    # along, so random access starts near each record; readers confirm each point
    # against the stream before its first use, and verify checks them all.
    restarts = ([_place_restarts(file, where, storage, undo)
                 for file, where in placements] if compression is not None
                else [None] * len(placed))
    # Joining a dataset: what its images are is checked against the new ones (a new
    # dataset's profile observes every image itself).
    images = tuple(existing.schema.of_kind(Image)) if existing is not None else ()
    # A new dataset's schema comes from every record, not the sample: a key first seen
    # late, or a list longer than the sample's, is described.
    result = _Scanned([], -1, ImageObservations(), RecordProfile() if whole else None)
    for number, file in enumerate(placed):
        undo.new(file + INDEX_SUFFIX)
        records, ids = _scan(file, storage, compression, label=labels.parsed, images=images,
                             observations=result.observations, profile=result.whole)
        counts: dict[str, int] = {}
        class_id = None
        if labels.file_classes is not None:
            class_id = labels.file_classes[number]
            counts = {str(class_id): records} if records else {}
        elif ids is not None:
            if ids.size and int(ids.min()) < 0:
                raise DatasetError(f"{file}: class id {int(ids.min())} is negative")
            found, n = np.unique(ids, return_counts=True)
            counts = {str(int(i)): int(c) for i, c in zip(found, n, strict=True)}
            result.top = max(result.top, int(found.max()) if found.size else -1)
            class_id = int(found[0]) if len(found) == 1 else None
        checksum, head_checksum = file_checksums(file, storage=storage)  # one read
        result.shards.append(ShardInfo(
            file=os.path.basename(file), records=records, bytes=storage.size(file),
            crc32c=checksum, head_crc32c=head_checksum,
            index=os.path.basename(file) + INDEX_SUFFIX,
            class_id=class_id, class_counts=counts, restarts=restarts[number]))
    return result


def _whole_schema(whole: RecordProfile | None, labels: Labels, first: str) -> Schema:
    """The schema of every record's profile (the rule globs use), the label a class label."""
    assert whole is not None
    if whole.unparsable:
        raise DatasetError(f"{whole.unparsable} record(s) are not tf.train.Example messages")
    if labels.parsed is not None and not is_int_scalar(whole.features.get(labels.parsed),
                                                        whole.records):
        raise DatasetError(f"{labels.parsed!r} is not one int64 in every record; name "
                           "the class feature with label_feature")
    try:
        return schema_from_profile(whole, complete=True, label_feature=labels.parsed,
                                   class_names=labels.class_names)
    except SchemaError as err:
        raise DatasetError(f"cannot describe the records of {first}: {err}") from None


def _write_manifest(target: str, split: str, shards: list[ShardInfo], *,
                    existing: Manifest | None, inputs: list[str], storage: Storage,
                    schema: Schema, label_feature: str | None,
                    options: ShardOptions) -> Manifest:
    """``dataset.json`` with the new split (beside the dataset's own, when joining one)."""
    from tfrecordkit._version import __version__

    sources = ", ".join(inputs)
    splits: dict[str, Sequence[ShardInfo]] = {split: shards}
    if existing is not None:
        splits.update({name: info.shards for name, info in existing.splits.items()})
        sources = f"{existing.created_by.get('source', '')}; {split}: {sources}"
    return finalize_manifest(
        target, splits, schema=schema, options=options, label_feature=label_feature,
        created_by={"tool": "tfrecordkit adopt", "version": __version__, "source": sources},
        storage=storage)


def _adopt_tfds(root: str, target: str, storage: Storage) -> Manifest:
    """A TFDS-prepared version folder as a dataset: its schema, splits and shards as TFDS
    describes them, each shard checked (CRCs, count), indexed and checksummed."""
    implied = tfds_manifest(root, storage)
    label = implied.label_feature
    classes = len(implied.class_names) if label is not None else 0
    splits: dict[str, Sequence[ShardInfo]] = {}
    with _Undo(storage) as undo:
        for name, split in implied.splits.items():
            infos = []
            for shard in split.shards:
                placed = _place(storage.join(root, shard.file),
                                storage.join(target, shard.file), storage, undo)
                undo.new(placed + INDEX_SUFFIX)
                records, labels = _scan(placed, storage, None, label=label, images=(),
                                        observations=ImageObservations())
                if records != shard.records:
                    raise DatasetError(f"{placed}: {records} records; {TFDS_INFO} says "
                                       f"{shard.records}")
                counts: dict[str, int] = {}
                if labels is not None and labels.size:
                    bad = labels[(labels < 0) | (labels >= classes)]
                    if bad.size:
                        raise DatasetError(f"{placed}: class id {int(bad[0])} outside the "
                                           f"{classes} classes of {label!r}")
                    ids, n = np.unique(labels, return_counts=True)
                    counts = {str(int(i)): int(c) for i, c in zip(ids, n, strict=True)}
                checksum, head_checksum = file_checksums(placed, storage=storage)
                infos.append(ShardInfo(
                    file=shard.file, records=records, bytes=storage.size(placed),
                    crc32c=checksum, head_crc32c=head_checksum,
                    index=shard.file + INDEX_SUFFIX, class_counts=counts))
            splits[name] = infos
        from tfrecordkit._version import __version__

        return finalize_manifest(
            target, splits, schema=implied.schema,
            options=ShardOptions(layout="mixed", shuffle=False, index=True),
            label_feature=label, storage=storage,
            created_by={"tool": "tfrecordkit adopt", "version": __version__,
                        "source": f"tensorflow-datasets: {root}"})


def _own_classes(files: list[str], target: str, storage: Storage
                 ) -> tuple[str, str, tuple[str, ...]] | None:
    """Files that another conversion wrote beside its own ``dataset.json``: that manifest's
    path, its label feature and its class names (ids number them); None when the files
    carry no manifest of their own (or it names no classes).

    Raises:
        DatasetError: files from datasets whose class names differ.
    """
    found: dict[str, tuple[str, str, tuple[str, ...]]] = {}
    for folder in sorted({os.path.dirname(f.rstrip("/")) for f in files}):
        if folder.rstrip("/") == target.rstrip("/") or not storage.exists(
                storage.join(folder, MANIFEST_NAME)):
            continue
        try:
            manifest = load_manifest(folder, storage=storage)
        except (DatasetError, SchemaError, StorageError) as err:
            raise DatasetError(f"{storage.join(folder, MANIFEST_NAME)} beside these files "
                               f"does not load: {err}") from None
        listed = {shard.file for info in manifest.splits.values() for shard in info.shards}
        mine = {os.path.basename(f.rstrip("/")) for f in files
                if os.path.dirname(f.rstrip("/")) == folder}
        if not mine <= listed:  # a manifest that does not list these files says nothing of them
            continue
        if manifest.label_feature is not None and manifest.class_names:
            found[folder] = (storage.join(folder, MANIFEST_NAME), manifest.label_feature,
                             tuple(manifest.class_names))
    if len({names for _, _, names in found.values()}) > 1:
        raise DatasetError(f"these files come from datasets with different class names "
                           f"({', '.join(path for path, _, _ in found.values())}): adopt "
                           "each as its own split, or convert them again")
    return next(iter(found.values()), None)


def _names_of_own(own: tuple[str, str, tuple[str, ...]], class_names: Sequence[str] | None,
                  label_feature: str | None, target: str | None) -> Sequence[str]:
    """The class names for files whose own ``dataset.json`` names their ids (``own``): those
    names, unless the dataset joined (``target``) or ``class_names`` give others; ids can't
    be renumbered without rewriting the files, so names that differ for an id are refused."""
    path, label, names = own
    if label_feature is not None and label_feature != label:
        return class_names if class_names is not None else names
    if class_names is None:
        return names
    given = tuple(class_names)
    differ = [(i, n, given[i] if i < len(given) else None) for i, n in enumerate(names)
              if i >= len(given) or given[i] != n]
    if differ:
        shown = ", ".join(f"id {i}: {a!r} there, {'no class' if b is None else repr(b)} "
                          f"{'in ' + target if target else 'in class_names'}"
                          for i, a, b in differ[:5])
        raise DatasetError(f"{path} numbers these files' classes by other names ({shown}"
                           f"{', …' if len(differ) > 5 else ''}; {len(differ)} ids differ): "
                           "adopting would read their labels under the wrong names. Convert "
                           "their source into the dataset (classes are matched by name), or "
                           "adopt them as a dataset of their own")
    return given


def _join(existing: Manifest, target: str, split: str, compression: str | None, *,
          label_feature: str | None, class_names: Sequence[str] | None,
          class_pattern: str | None) -> tuple[str | None, Sequence[str] | None]:
    """The label feature and class names that files joining ``existing`` as ``split`` take,
    after checking they can join it."""
    if split in existing.splits:
        raise DatasetError(f"{target} already holds a dataset with split {split!r}; adopt "
                           "these files as another split (split=...), or pass "
                           "overwrite=True (--overwrite) to replace the dataset")
    if compression != existing.compression:
        raise DatasetError(f"{target}: its shards are {existing.compression or 'uncompressed'}"
                           f"; these files are {compression or 'uncompressed'}")
    if label_feature is not None and label_feature != existing.label_feature:
        raise DatasetError(f"{target}: its label is {existing.label_feature!r}, not "
                           f"{label_feature!r}")
    if class_names is not None and tuple(class_names) != existing.class_names:
        raise DatasetError(f"{target}: class_names differ from the dataset's")
    from_names = existing.schema.shard_label is not None
    if from_names != (class_pattern is not None):
        raise DatasetError(f"{target}: its classes come from file names: give class_pattern"
                           if from_names else f"{target}: its records hold their labels: "
                           "leave out class_pattern")
    return existing.label_feature, existing.class_names or None


def _readable_by(schema: Schema) -> Callable[[str, list[bytes]], None]:
    """A check refusing a file whose sampled records ``schema`` can't decode."""
    names = [n for n in schema if n != schema.shard_label]

    def check(file: str, records: list[bytes]) -> None:
        try:
            schema.decode_batch(records, features=names, where=lambda i: f"sampled record {i}")
        except SchemaError as err:
            raise DatasetError(f"the dataset's schema can't read {file}'s records: "
                               f"{err}") from None

    return check


def _joined_schema(schema: Schema, observations: ImageObservations) -> Schema:
    """The dataset's schema, with an image size (or format) kept only if the new images have
    it too: a PNG-only promise would send JPEG bytes to TensorFlow's PNG decoder."""
    features = dict(schema)
    sizes = observations.sizes()
    for name, feature in schema.of_kind(Image).items():
        formats = {fmt for fmt, _, _ in observations.seen.get(name, ())}
        mixed = feature.encoding in ("jpeg", "png") and bool(formats - {feature.encoding})
        features[name] = dataclasses.replace(
            feature, size=feature.size if feature.size == sizes.get(name) else None,
            encoding="auto" if mixed else feature.encoding)
    return Schema(features)


def _scan(file: str, storage: Storage, compression: str | None, *, label: str | None,
          images: tuple[str, ...], observations: ImageObservations,
          profile: RecordProfile | None = None) -> tuple[int, np.ndarray | None]:
    """One CRC-checked pass over a file: its ``.index`` (of decompressed offsets, for a
    compressed file), its record count, its labels, what its images are (their headers,
    without decoding), and, into ``profile``, what every record holds."""
    offsets: list[tuple[int, int]] = []

    def records() -> Iterator[bytes]:
        for offset, record in RecordReader(file, storage=storage).iter_with_offsets():
            offsets.append((offset, len(record) + FRAME_OVERHEAD))
            if profile is not None:
                profile.add(record)
            yield record

    labels: list[np.ndarray] = []

    def on_batch(columns: dict[str, Any]) -> None:
        if label is not None:
            labels.append(columns[label].values.reshape(-1))
        for name in images:
            column = columns[name]
            observations.add({observe_image(name, column.values[a:b].tobytes())
                              for a, b in itertools.pairwise(column.offsets.tolist())})

    specs = ([KeySpec(label, "int64", ())] if label is not None else []) + [
        KeySpec(name, "string", ()) for name in images]
    # Without keys to read, every record is still read (and checked).
    count = (scan_columns(records(), specs, file, on_batch) if specs
             else sum(1 for _ in records()))
    write_index(np.array(offsets, np.int64).reshape(-1, 2), file + INDEX_SUFFIX, storage)
    if label is None:
        return count, None
    return count, np.concatenate(labels) if labels else np.zeros(0, np.int64)


def _common_folder(files: list[str]) -> str:
    folders = {os.path.dirname(f) for f in files}
    if len(folders) != 1:
        raise DatasetError(f"the files lie in {len(folders)} folders; give out_dir "
                           "(files outside it are linked or copied in)")
    return folders.pop() or "."


def _compression_of(files: list[str], storage: Storage) -> str | None:
    """The files' one compression, from their first bytes (a name can say otherwise: TFX
    names ZLIB shards ``.gz`` too)."""
    found = {RecordReader(f, storage=storage).compression for f in files}
    if len(found) != 1:
        raise DatasetError(f"the files mix compressions ({sorted(map(str, found))}); adopt "
                           "them as separate datasets")
    return found.pop()


def _sample(files: list[str], storage: Storage,
            check: Callable[[str, list[bytes]], None] | None = None) -> Iterator[bytes]:
    """The first records of the first few files (and of the last one), each file's passed to
    ``check`` first."""
    chosen = files[:_SAMPLE_FILES] + ([files[-1]] if len(files) > _SAMPLE_FILES else [])
    for file in chosen:
        records = list(islice(RecordReader(file, storage=storage), _SAMPLE_PER_FILE))
        if check is not None:
            check(file, records)
        yield from records


def _placements(files: list[str], target: str, split: str, storage: Storage
                ) -> list[tuple[str, str]]:
    """Where each file goes in ``target``: where it is, or a new name there (its own, or
    ``<split>-<name>`` when another file has that name), checked before anything is placed."""
    out = []
    for file in files:
        name = os.path.basename(file.rstrip("/"))
        placed = storage.join(target, name)
        if os.path.normpath(placed) != os.path.normpath(file) and storage.exists(placed):
            placed = storage.join(target, f"{split}-{name}")
            if storage.exists(placed):
                raise DatasetError(f"{placed} exists; adopt won't replace it with {file}")
        out.append((file, placed))
    return out


class _Undo:
    """Files an adopt creates, removed again if it fails."""

    def __init__(self, storage: Storage) -> None:
        self.storage, self.paths = storage, list[str]()

    def new(self, path: str) -> None:
        """``path`` is about to be created (kept if it was there before)."""
        if not self.storage.exists(path):
            self.paths.append(path)

    def __enter__(self) -> _Undo:
        return self

    def __exit__(self, kind: Any, *_: Any) -> None:
        if kind is None:
            return
        for path in reversed(self.paths):
            with contextlib.suppress(OSError, StorageError):
                self.storage.remove(path)


def _place_restarts(file: str, placed: str, storage: Storage, undo: _Undo) -> str | None:
    """The name of ``file``'s restart-point sidecar placed beside ``placed`` (checked to
    parse, its offsets within the file), or None when it has none."""
    sidecar = restarts_path_for(file)
    if load_restarts(file, storage) is None:
        return None
    _place(sidecar, restarts_path_for(placed), storage, undo)
    return os.path.basename(restarts_path_for(placed))


def _place(file: str, placed: str, storage: Storage, undo: _Undo) -> str:
    """``file`` at ``placed``: as it is, or hard-linked (else copied) there."""
    if os.path.normpath(placed) == os.path.normpath(file):
        return file
    undo.new(placed)
    if storage.local:
        os.makedirs(os.path.dirname(placed) or ".", exist_ok=True)
        try:
            os.link(file, placed)
        except OSError:
            shutil.copyfile(file, placed)
            logger.info("copied %s to %s (no hard link across filesystems)", file, placed)
    else:
        storage.fs.copy(file, placed)
    return placed
