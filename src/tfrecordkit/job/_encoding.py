"""What every engine shares for a conversion: the job, the encoding of source items into
framed records (in whichever worker runs it), the split assignment, and the schema refined from
what the images turned out to be."""

from __future__ import annotations

import dataclasses
import logging
import math
import os
from collections import Counter
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from tfrecordkit.codecs import image_header, sniff_bytes
from tfrecordkit.errors import OptionError, SchemaError, SourceError
from tfrecordkit.format import EncodedFrames
from tfrecordkit.job._append import AppendTarget
from tfrecordkit.job._order import shuffled_items
from tfrecordkit.schema import (
    SOURCE_FEATURE,
    ClassLabel,
    Image,
    ImageObservations,
    Observed,
    Schema,
    Text,
    observe_image,
)
from tfrecordkit.sources import Source, SourceItem, SourceTraits, SplitSources
from tfrecordkit.store import KnownRecords, ShardOptions, frame_ids, record_hash

__all__ = ["SKIP_HINT", "ConversionJob", "EncodeJob", "EncodedChunk", "SplitAssigner", "SplitSpec",
           "encode_items", "image_features"]

logger = logging.getLogger(__name__)

SplitSpec = str | Mapping[str, float]
"""One split name for every record, or split ratios (``{"train": 0.9, "val": 0.1}``)."""


@dataclass(frozen=True)
class ConversionJob:
    """One conversion, as :func:`~tfrecordkit.convert.convert` hands it to an engine."""

    source: Source
    out_dir: str  # a local folder or a URL
    schema: Schema
    split: SplitSpec
    options: ShardOptions
    label_feature: str | None
    on_error: str  # "raise" or "skip"
    overwrite: bool
    created_by: dict[str, Any] = field(default_factory=dict)
    storage_options: dict[str, Any] | None = None
    stratify: bool = False  # exact per-class split counts (else: by key and seed alone)
    #: Per class-label feature, the schema's id of each of the source's own class ids (a
    #: schema given for a source that numbers its own class names: mapped by name).
    relabel: Mapping[str, tuple[int, ...]] = field(default_factory=dict)
    #: The dataset an append adds to (its records are left out, its shards kept), if any.
    append: AppendTarget | None = None

    @classmethod
    def build(cls, source: Source, out_dir: str | os.PathLike[str], *, schema: Schema | None,
              split: SplitSpec, shards: ShardOptions | None, on_error: str,
              overwrite: bool, label_feature: str | None,
              storage_options: dict[str, Any] | None, stratify: bool = False
              ) -> ConversionJob:
        """The job for :func:`~tfrecordkit.convert.convert`'s arguments, checked."""
        if on_error not in ("raise", "skip"):
            raise OptionError(f"on_error must be 'raise' or 'skip'; got {on_error!r}")
        traits = SourceTraits.of(source)
        relabel = (class_ids_by_name(source.schema(), schema, source.description)
                   if schema is not None and traits.named_classes else {})
        schema = schema or source.schema()
        if schema.shard_label is not None:
            raise SchemaError(schema.shard_label, "ClassLabel(from_shard=True) describes "
                                                  "files whose records carry no label "
                                                  "(tfrecordkit adopt --class-pattern); "
                                                  "convert stores labels: use "
                                                  "ClassLabel(names)")
        if traits.provenance:
            schema = schema.with_source()  # each record's input, for provenance
        elif SOURCE_FEATURE in schema:
            raise SchemaError(SOURCE_FEATURE, "is each record's input, which conversion of a "
                                              "folder or table stores itself (provenance); "
                                              "these records can't give it: leave it out of "
                                              "the schema")
        if label_feature is None and (found := schema.class_label()) is not None:
            label_feature = found[0]
        options = shards if shards is not None else ShardOptions()
        if not isinstance(options, ShardOptions):
            raise OptionError(f"shards must be a ShardOptions; got {type(options).__name__}")
        SplitAssigner(split, options.seed)  # checks the ratios before any work
        made_split = _split_made(source, split, stratify)
        from tfrecordkit._version import __version__

        created_by: dict[str, Any] = {"tool": "tfrecordkit", "version": __version__,
                                      "source": source.description,
                                      "split": made_split}
        if traits.conversions:
            created_by["conversions"] = dict(traits.conversions)
        if getattr(source, "key_rule", None):  # how its records are keyed (appends key alike)
            created_by["keys"] = source.key_rule  # type: ignore[attr-defined]
        stratify = stratify and label_feature is not None
        if not isinstance(split, str):
            created_by["stratified"] = stratify
        return cls(source, os.fspath(out_dir), schema, split, options, label_feature, on_error,
                   overwrite, created_by, storage_options, stratify, relabel)

    def with_vocabularies(self) -> ConversionJob:
        """This job with every text vocabulary that has no tokens yet built from the
        training split (a pass that loads those items), so every engine encodes ids."""
        unbuilt = {name: f.vocabulary for name, f in self.schema.of_kind(Text).items()
                   if f.vocabulary is not None and not f.vocabulary.built}
        if not unbuilt:
            return self
        if not self.traits.reiterable:
            raise SourceError(self.source.description,
                              "building a vocabulary reads the records twice: give a list "
                              "(or anything iterable again), or a built Vocabulary(tokens)")
        counts, seen, first_error = self._count_tokens(unbuilt)
        if not seen:
            why = f"; none loaded, the first: {first_error}" if first_error else ""
            raise SourceError(self.source.description,
                              f"no records in the training split "
                              f"{_training_split(self.split)!r} to build the "
                              f"vocabulary of {sorted(unbuilt)} from{why}")
        features = dict(self.schema)
        for name, vocabulary in unbuilt.items():
            built = vocabulary.built_from(counts[name])
            features[name] = Text(vocabulary=built)
            logger.info("%s: vocabulary of %d ids from %d training records (%d distinct "
                        "tokens)", name, built.size, seen, len(counts[name]))
        return dataclasses.replace(self, schema=Schema(features))

    def _count_tokens(self, unbuilt: Mapping[str, Any]
                      ) -> tuple[dict[str, Counter[str]], int, str | None]:
        """Token counts of each unbuilt vocabulary's text over the training split's records,
        how many records they come from, and the first input that did not load."""
        training = _training_split(self.split)
        assign = self.split_assigner()
        counts: dict[str, Counter[str]] = {name: Counter() for name in unbuilt}
        seen = 0
        first_error: str | None = None
        for item in self.source.items():
            if not assign.stratifies(item) and assign(item) != training:
                continue
            try:
                record = self.source.load(item.item)
            except _ITEM_ERRORS as err:  # the encoding pass reports each one
                first_error = first_error or f"{self.source.describe(item)}: {_reason(err)}"
                continue
            if not self._in_training(assign, item, record, training):
                continue
            seen += 1
            for name, vocabulary in unbuilt.items():
                counts[name].update(vocabulary.tokenize(_text_of(record.get(name))))
        return counts, seen, first_error

    def _in_training(self, assign: SplitAssigner, item: SourceItem,
                     record: Mapping[str, Any], training: str) -> bool:
        """Whether a stratified item's record is in the training split (others are known
        before loading)."""
        if not (assign.stratifies(item) and self.label_feature is not None):
            return True
        try:
            label = self._label_of(record)
        except _ITEM_ERRORS:
            return False
        return assign(item, label) == training

    def _label_of(self, record: Mapping[str, Any]) -> int:
        assert self.label_feature is not None
        feature = self.schema.feature_as(self.label_feature, ClassLabel)
        return feature.index_of(self.label_feature, record[self.label_feature])

    def skipped(self, what: str, reason: str) -> dict[str, str]:
        """An input that failed: raised (``on_error="raise"``), else logged and returned as
        the manifest lists it. Every engine applies this one policy."""
        if self.on_error == "raise":
            # An input that can be kept another way says so; skipping is not the fix then.
            raise SourceError(what, reason if "to keep the rows" in reason else reason + SKIP_HINT)
        logger.info("skipping %s: %s", what, reason)
        return {"input": what, "reason": reason}

    @property
    def traits(self) -> SourceTraits:
        """What the source says about itself (resumable, threaded, reorderable, ...)."""
        return SourceTraits.of(self.source)

    def split_assigner(self) -> SplitAssigner:
        """A fresh assigner for this job's splits (stratified ones count from the start)."""
        return SplitAssigner(self.split, self.options.seed, stratify=self.stratify)

    def described(self, observations: ImageObservations) -> Schema:
        """The schema the manifest gives: refined by what the images turned out to be (one
        format, channel count or size where all agreed); for an append, the dataset's own,
        which describes the old records too (the new ones alone would narrow it)."""
        if self.append is not None:
            return observations.widen(self.append.base.schema, self.schema)
        return observations.refine(self.schema)

    @property
    def presorted(self) -> bool:
        """Whether the write-time shuffle is done by reading the source in shuffled order
        (a source that can be read in any order, written to shards cut by size as records
        come): one read and one write of each record, no spill."""
        options = self.options
        return (options.shuffle and self.traits.reorderable
                and options.streams(presorted=True))

    def items(self) -> Iterator[SourceItem]:
        """The source's items in the order they are read: shuffled when :attr:`presorted`."""
        if self.presorted:
            return shuffled_items(self.source.items, self.options.seed)
        return self.source.items()

    def encode_job(self) -> EncodeJob:
        """What the encoding workers need."""
        ordered = self.options.shuffle and not self.presorted
        return EncodeJob(self.source, self.schema, self.label_feature,
                         self.options.seed if ordered else None,
                         image_features(self.schema), dict(self.relabel),
                         self.append.known if self.append is not None else None)


@dataclass(frozen=True)
class EncodeJob:
    """What every encoding worker needs, sent once per worker."""

    source: Source
    schema: Schema
    label_feature: str | None
    seed: int | None  # None: no write-time shuffle, so no order hash
    images: tuple[str, ...] = ()  # image features, observed for ImageObservations
    relabel: Mapping[str, tuple[int, ...]] = field(default_factory=dict)  # see ConversionJob
    known: KnownRecords | None = None  # an append's dataset: inputs it holds are left out


def class_ids_by_name(own: Schema, given: Schema, where: str) -> dict[str, tuple[int, ...]]:
    """For each class label a source numbers by its own names (``own``) that ``given``
    names differently, ``given``'s id of each of the source's ids, matched by name.

    Raises:
        SchemaError: a class of the source is not among ``given``'s names (naming both).
    """
    out = {}
    targets = given.of_kind(ClassLabel)
    for name, feature in own.of_kind(ClassLabel).items():
        target = targets.get(name)
        if target is None or target.from_shard:
            continue
        if tuple(feature.names) == tuple(target.names):
            continue
        unknown = [n for n in feature.names if n not in target.names]
        if unknown:
            known = list(target.names)
            shown = known if len(known) <= 20 else [*known[:20], f"... {len(known)} in all"]
            raise SchemaError(name, f"{where} has classes {unknown[:10]} that the schema's "
                                    f"class names {shown} lack: class ids are matched by "
                                    "name; add them to the schema (new names at the end, "
                                    "so no id moves)")
        out[name] = tuple(target.index_of(name, n) for n in feature.names)
    return out


def _relabelled(relabel: Mapping[str, tuple[int, ...]], record: Mapping[str, Any]
                ) -> Mapping[str, Any]:
    """``record`` with each class id of the source's numbering in the schema's."""
    changed = {}
    for name, ids in relabel.items():
        value = record.get(name)
        if isinstance(value, int | np.integer) and not isinstance(value, bool):
            if not 0 <= value < len(ids):
                raise SchemaError(name, f"class id {int(value)} outside the source's "
                                        f"{len(ids)} classes")
            changed[name] = ids[int(value)]
    return {**record, **changed} if changed else record


@dataclass
class EncodedChunk:
    """A chunk of items, encoded: the good ones framed back to back, the bad ones with why."""

    frames: EncodedFrames
    kept: list[int]  # positions (in the chunk) of the framed items, in order
    labels: list[int | None]
    hashes: list[int] | None
    failures: list[tuple[int, str]]  # (position, reason), in order
    observed: set[Observed]  # what the chunk's images are (see ImageObservations)
    ids: np.ndarray  # RECORD_IDS of the framed items (key hash, content digest)
    present: list[int] = field(default_factory=list)  # positions already in the dataset


def _reason(err: Exception) -> str:
    if isinstance(err, SourceError):
        return err.reason
    if isinstance(err, SchemaError):
        return str(err)
    return f"{type(err).__name__}: {err}"


_ITEM_ERRORS = (SourceError, SchemaError, OSError, ValueError, KeyError, TypeError)
#: Said after an input's error when a conversion stops on it (on_error="raise").
SKIP_HINT = ("; on_error=\"skip\" (--on-error skip) skips such inputs and lists them in "
             "the result and dataset.json")


def encode_items(job: EncodeJob, chunk: list[SourceItem]) -> EncodedChunk:
    """Load, encode and frame a chunk of items: the good ones framed with their ids, labels
    and order hashes; each bad one with why; those an append's dataset holds, left out."""
    records, kept, failures = _loaded(job, chunk)
    frames, records, kept = _framed(job, records, kept, failures)
    with_source = SOURCE_FEATURE in job.schema
    ids = frame_ids([chunk[p].key for p in kept], frames.buffer, frames.offsets,
                    frames.lengths, provenance=with_source)
    present: list[int] = []
    if job.known is not None and len(job.known):
        frames, ids, records, kept, present = _leave_out_known(
            job, chunk, frames, ids, records, kept, failures)
    labels: list[int | None] = [None] * len(records)
    if job.label_feature is not None:
        labels = _class_ids(job.schema.feature_as(job.label_feature, ClassLabel),
                            job.label_feature, [r[job.label_feature] for r in records])
    hashes = (None if job.seed is None
              else [record_hash(chunk[p].key, job.seed) for p in kept])
    observations = ImageObservations()
    if job.images:
        observations.add(_observed(job.images, records))
    return EncodedChunk(frames, kept, labels, hashes, failures, observations.as_set(), ids,
                        present)


def _class_ids(feature: ClassLabel, name: str, values: list[Any]) -> list[int | None]:
    """Each value's class id (:meth:`ClassLabel.index_of`), checked at once when all are
    ints."""
    if values and all(type(v) is int for v in values) and (
            min(values) >= 0 and max(values) < feature.num_classes):
        return list(values)
    return [feature.index_of(name, v) for v in values]


def _loaded(job: EncodeJob, chunk: list[SourceItem]
            ) -> tuple[list[Mapping[str, Any]], list[int], list[tuple[int, str]]]:
    """Each item loaded as a record (relabelled, with its origin and image dims), with the
    positions of those that loaded and why the others did not."""
    records: list[Mapping[str, Any]] = []
    kept: list[int] = []
    failures: list[tuple[int, str]] = []
    images = job.schema.of_kind(Image)
    encoded_images = tuple(n for n in job.images if images[n].encoding != "raw")
    with_source = SOURCE_FEATURE in job.schema
    for position, item in enumerate(chunk):
        try:
            record = job.source.load(item.item)
            if job.relabel:
                record = _relabelled(job.relabel, record)
            if with_source:
                record = {**record, SOURCE_FEATURE: job.source.origin(item)}  # type: ignore[attr-defined]
            records.append(_with_image_dims(encoded_images, record) if encoded_images
                           else record)
            kept.append(position)
        except _ITEM_ERRORS as err:
            failures.append((position, _reason(err)))
    return records, kept, failures


def _framed(job: EncodeJob, records: list[Mapping[str, Any]], kept: list[int],
            failures: list[tuple[int, str]]
            ) -> tuple[EncodedFrames, list[Mapping[str, Any]], list[int]]:
    """The records framed at once; if one is bad, each bad one found (added to
    ``failures``) and the rest framed."""
    try:
        return job.schema.encode_frames(records), records, kept
    except _ITEM_ERRORS:
        pass
    good: list[Mapping[str, Any]] = []
    good_positions: list[int] = []
    for position, record in zip(kept, records, strict=True):
        try:
            job.schema.encode(record)
        except _ITEM_ERRORS as err:
            failures.append((position, _reason(err)))
            continue
        good.append(record)
        good_positions.append(position)
    failures.sort()
    return job.schema.encode_frames(good), good, good_positions


def _leave_out_known(job: EncodeJob, chunk: list[SourceItem], frames: EncodedFrames,  # noqa: PLR0917
                     ids: np.ndarray, records: list[Mapping[str, Any]], kept: list[int],
                     failures: list[tuple[int, str]]
                     ) -> tuple[EncodedFrames, np.ndarray, list[Mapping[str, Any]], list[int],
                                list[int]]:
    """The chunk without the inputs the dataset holds already (same key, same content: left
    out, their positions returned); an input whose key the dataset holds with other content
    fails, naming the record it would shadow (added to ``failures``)."""
    assert job.known is not None
    found, same = job.known.lookup(ids)
    if not (found >= 0).any():
        return frames, ids, records, kept, []
    present = [kept[j] for j in np.flatnonzero(same).tolist()]
    for j in np.flatnonzero((found >= 0) & ~same).tolist():
        failures.append((kept[j], f"its key {chunk[kept[j]].key!r} is already in the "
                                  "dataset with other content "
                                  f"({job.known.where(int(found[j]))}); a key is the path "
                                  "under the folder, a table's row number or its key column "
                                  "(Table(key=...)), a record's position or its key feature "
                                  "(Records(key=...)): give the input another key, or "
                                  "convert the dataset anew"))
    failures.sort()
    stay = np.flatnonzero(found < 0)
    view = memoryview(frames.buffer)
    offsets, lengths = frames.offsets, frames.lengths
    buffer = b"".join([view[o : o + n] for o, n in zip(
        offsets[stay].tolist(), lengths[stay].tolist(), strict=True)])
    kept_records = [records[j] for j in stay.tolist()]
    return (EncodedFrames(buffer, lengths[stay]), ids[stay], kept_records,
            [kept[j] for j in stay.tolist()], present)


def image_features(schema: Schema) -> tuple[str, ...]:
    """The image features (what conversion observes to refine the schema)."""
    return tuple(schema.of_kind(Image))


def _with_image_dims(names: tuple[str, ...], record: Mapping[str, Any]
                     ) -> Mapping[str, Any]:
    """``record`` with each encoded image given as bytes carrying the dims its header gives,
    as sources give them: read once here, they serve both the encoder (which would otherwise
    read the header itself, record by record) and the observations."""
    dims = {}
    for name in names:
        value = record.get(name)
        if isinstance(value, bytes) and (header := image_header(value)) is not None:
            dims[name] = {"bytes": value, "height": header[0], "width": header[1],
                          "channels": header[2]}
    return {**record, **dims} if dims else record


def _observed(names: tuple[str, ...], records: list[Mapping[str, Any]]) -> set[Observed]:
    """What the records' images are (the distinct observations), read from their values (a
    source's dict, encoded bytes' header, or an array) without decoding."""
    seen: set[Observed] = set()
    kinds: dict[bytes, str] = {}  # a header's first bytes -> what they are
    for name in names:
        dicts: set[tuple[str, int, int, int]] = set()
        for record in records:
            value = record[name]
            if type(value) is dict or isinstance(value, Mapping):
                head = bytes(value["bytes"][:16])  # bytearray, memoryview: hashable
                kind = kinds.get(head)
                if kind is None:
                    kind = kinds[head] = sniff_bytes(head)
                dicts.add((kind, int(value["channels"]), int(value["height"]),
                           int(value["width"])))
            elif isinstance(value, bytes):
                seen.add(observe_image(name, value))
            elif isinstance(value, np.ndarray) and value.ndim in (2, 3):
                # Arrays are encoded as PNG when the encoding is left open.
                seen.add((name, "png", value.shape[2] if value.ndim == 3 else 1,
                          f"{value.shape[0]}x{value.shape[1]}"))
        seen.update((name, kind, channels, f"{height}x{width}")
                    for kind, channels, height, width in dicts)
    return seen


def _text_of(value: Any) -> str:
    """A text feature's value as a string (``{"text": ...}``, bytes or str; else empty)."""
    text = value.get("text") if isinstance(value, Mapping) else value
    if isinstance(text, bytes):
        text = text.decode("utf-8", errors="replace")
    return text if isinstance(text, str) else ""


def _training_split(split: SplitSpec) -> str:
    """The split vocabularies are built from: ``"train"`` if there is one, else the first."""
    if isinstance(split, str):
        return split
    return "train" if "train" in split else next(iter(split))


def _split_made(source: Source, split: SplitSpec, stratify: bool) -> Any:
    """How a conversion's records were split, as the manifest records it (an append follows
    it): the split name, the ratios, or, for a split -> source mapping, its splits.

    Raises:
        OptionError: ratios or ``stratify`` given beside a mapping.
    """
    if isinstance(source, SplitSources):
        if not isinstance(split, str) or stratify:
            raise OptionError("a split -> source mapping gives each record its split: it "
                              "takes no split ratios or stratify (give each split its "
                              "source, or one source and the ratios)")
        return {"by_source": list(source.parts)}  # no rule an append could follow
    return split if isinstance(split, str) else dict(split)


class SplitAssigner:
    """Which split an item goes to: its own, the one name, or by split ratios.

    With ratios, an item with a class label is stratified: within its class, in input order,
    every ``1/share``-th item goes to a split, from a seeded random phase per class (systematic
    sampling, split by split), so every class's split counts are unbiased and stay within one
    record of the exact ratios with two splits, and within two with more. Items without a
    label go by the hash of their key alone.
    Stratified assignment is sequential: call it in input order.
    """

    def __init__(self, split: SplitSpec, seed: int, *, stratify: bool = True) -> None:
        self.seed = seed
        self.bounds: list[tuple[float, str]] = []
        self.single: str | None = None
        self.stratify = stratify
        self._counts: dict[int, list[int]] = {}
        if isinstance(split, str):
            self.single = split
            return
        total = sum(split.values())
        if not split or total <= 0 or any(v < 0 for v in split.values()):
            raise OptionError(f"split ratios must be non-negative and sum above 0; got {split}")
        self.names = list(split)
        self.shares = np.array([split[n] / total for n in self.names])
        acc = 0.0
        for name, ratio in split.items():
            acc += ratio / total
            self.bounds.append((acc, name))

    def stratifies(self, item: SourceItem) -> bool:
        """Whether ``item``'s split depends on its label and the items before it."""
        return self.stratify and self.single is None and item.split is None

    def __call__(self, item: SourceItem, label: int | None = None) -> str:
        if item.split is not None:
            return item.split
        if self.single is not None:
            return self.single
        u = record_hash(item.key, self.seed, "split") / 2**64
        if label is None or not self.stratify:
            return next((name for bound, name in self.bounds if u < bound),
                        self.bounds[-1][1])
        # Systematic sampling with a seeded phase per class, split by split: at level i the
        # items that reached it go to split i when floor(share * seen + phase) steps up.
        # Unbiased (the expected count is the exact share), and within one record of it.
        reached = self._counts.setdefault(label, [0] * len(self.names))
        for level in range(len(self.names) - 1):
            rest = float(self.shares[level:].sum())
            share = float(self.shares[level]) / rest if rest > 0 else 0.0
            phase = record_hash(f"{label}/{level}", self.seed, "stratify") / 2**64
            seen = reached[level]
            reached[level] += 1
            if math.floor(share * (seen + 1) + phase) > math.floor(share * seen + phase):
                return self.names[level]
        return self.names[-1]
