"""``Schema``: named typed features, their Example encoding, parsing specs and JSON form."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any, TypeVar

import numpy as np

from tfrecordkit.errors import SchemaError
from tfrecordkit.format import (
    EncColumn,
    EncodedFrames,
    RecordSlices,
    decode_example_keys,
    encode_frames,
    feature_lists_wire,
    frame_record,
    parse_examples,
    parse_feature_lists,
    raw_column,
    varint,
)
from tfrecordkit.schema._base import ColumnEncoder, DecodeContext, EntryEncoder, Feature
from tfrecordkit.schema._features import (
    ClassLabel,
    FeatureList,
    KeySpec,
    Text,
    check_key,
    feature_from_json,
)

__all__ = ["RESERVED_PREFIX", "SOURCE_FEATURE", "Schema"]

F = TypeVar("F", bound=Feature)

#: Feature names starting with it are refused: readers add their own keys under it.
RESERVED_PREFIX = "__"
#: The one reserved feature a schema may hold: each record's input (a path relative to the
#: source's root, or ``file:row``), written by conversion for provenance (a :class:`Text`).
SOURCE_FEATURE = "__source"


class Schema(Mapping[str, Feature]):
    """An ordered mapping of feature name to :class:`Feature`.

    Example:
        >>> schema = Schema({"image": Image("jpeg"), "label": ClassLabel(["cat", "dog"])})
        >>> record = schema.encode({"image": jpeg_bytes, "label": "dog"})  # doctest: +SKIP
    """

    def __init__(self, features: Mapping[str, Feature]) -> None:
        self._features = dict(features)
        _check_features(self._features)
        self._encoders: dict[str, EntryEncoder] = {
            name: feature.entry_encoder(name) for name, feature in self._features.items()
        }
        self._column_encoders: dict[str, ColumnEncoder | None] = {
            name: feature.column_encoder(name) for name, feature in self._features.items()
        }
        # Feature lists: a record with any is a SequenceExample, its other features the context.
        self._steps_encoders = {name: feature.steps_encoder(name)
                                for name, feature in self._features.items()
                                if isinstance(feature, FeatureList)}
        # Parsing specs per feature, built once: decode checks them for every record.
        self._specs: dict[str, list[KeySpec]] = {
            name: feature.key_specs(name) for name, feature in self._features.items()
        }

    def __reduce__(self) -> tuple[type, tuple[dict[str, Feature]]]:
        # The compiled encoders are closures; rebuild them from the features on unpickling.
        return (Schema, (self._features,))

    def with_source(self) -> Schema:
        """This schema with :data:`SOURCE_FEATURE`: each record's input, as conversion
        stores it for provenance (readers return it only when asked)."""
        if SOURCE_FEATURE in self._features:
            return self
        return Schema({**self._features, SOURCE_FEATURE: Text()})

    @property
    def user_features(self) -> list[str]:
        """The feature names, without :data:`SOURCE_FEATURE` (what readers give by
        default)."""
        return [n for n in self._features if n != SOURCE_FEATURE]

    def __getitem__(self, name: str) -> Feature:
        return self._features[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._features)

    def __len__(self) -> int:
        return len(self._features)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Schema) and self._features == other._features

    def __hash__(self) -> int:
        return hash(tuple(self._features.items()))

    def __repr__(self) -> str:
        inner = ", ".join(f"{name!r}: {feature!r}" for name, feature in self._features.items())
        return f"Schema({{{inner}}})"

    # -- encoding -------------------------------------------------------------------------

    def encode(self, record: Mapping[str, Any], *, source: str | int | None = None) -> bytes:
        """Serialize one record (``{feature name: value}``) as a ``tf.train.Example`` (a
        ``tf.train.SequenceExample`` when the schema has :class:`FeatureList` features).

        Raises:
            SchemaError: a feature is missing, unknown, or its value does not fit
                (the message names the feature and ``source``).
        """
        if record.keys() != self._features.keys():
            missing = [n for n in self._features if n not in record]
            extra = [n for n in record if n not in self._features]
            name = (missing or extra)[0]
            problem = "missing from the record" if missing else "not in the schema"
            if missing and extra:  # a misspelt name, most likely: say both
                problem += f"; the record has {extra[0]!r}, which the schema does not know"
            raise SchemaError(name, problem, record=source)
        parts: list[bytes] = []
        lists = []
        try:
            for name, encode in self._encoders.items():
                parts += encode(record[name])
            for name, steps in self._steps_encoders.items():
                lists.append((name, steps(record[name])))
        except SchemaError as err:
            if source is not None and err.record is None:
                raise SchemaError(err.feature, err.reason, record=source) from None
            raise
        # Entries go in schema order: fixed, so records are deterministic; TF accepts any order.
        size = sum(map(len, parts))
        tail = [feature_lists_wire(lists)] if lists else []
        return b"".join([b"\x0a", varint(size), *parts, *tail])

    def encode_frames(self, records: Sequence[Mapping[str, Any]], *,
                      sources: Sequence[str | int] | None = None) -> EncodedFrames:
        """Serialize and frame a batch of records at once: the frames are byte-identical to
        ``frame_record(encode(record))`` for each record, back to back.

        Raises:
            SchemaError: as :meth:`encode`, for the first bad record (named by ``sources``,
                else by its index in the batch).
        """
        n = len(records)
        where = sources if sources is not None else range(n)
        names = self._features.keys()
        for i, record in enumerate(records):
            if record.keys() != names:
                self.encode(record, source=where[i])  # raises, naming the feature
        if self._steps_encoders:  # SequenceExamples: their feature lists follow the context
            frames = [frame_record(self.encode(record, source=where[i]))
                      for i, record in enumerate(records)]
            return EncodedFrames(b"".join(frames),
                                 np.array([len(f) for f in frames], dtype=np.int64))
        columns: list[EncColumn] = []
        try:
            for name in self._features:
                values = [record[name] for record in records]
                batch = self._column_encoders[name]
                encoded = None
                if batch is not None:
                    try:
                        encoded = batch(values)
                    except (TypeError, ValueError, OverflowError, KeyError):
                        encoded = None  # the record-by-record path reports the bad value
                if encoded is None:
                    encoded = [raw_column(self._entries(name, values, where))]
                columns.extend(encoded)
        except SchemaError:
            # Columns are checked one feature at a time; report the first bad record.
            for i, record in enumerate(records):
                self.encode(record, source=where[i])
            raise
        return encode_frames(columns, n)

    def _entries(self, name: str, values: list[Any], where: Sequence[str | int]
                 ) -> list[list[bytes]]:
        """Each value's map entries (as bytes parts) from the feature's entry encoder."""
        encode = self._encoders[name]
        out = []
        for i, value in enumerate(values):
            try:
                parts = encode(value)
            except SchemaError as err:
                raise SchemaError(err.feature, err.reason, record=where[i]) from None
            out.append([p if type(p) is bytes else bytes(p) for p in parts])
        return out

    def decode(self, data: bytes, *, source: str | int | None = None,
               features: Sequence[str] | None = None,
               image_min_size: tuple[int, int] | None = None,
               shard_class: int | None = None) -> dict[str, Any]:
        """Decode a serialized record into ``{feature name: value}`` without TensorFlow.

        Every key is checked against its parsing spec first: present (or defaulted), holding
        the right list type and, for fixed shapes, the right number of values. ``features``
        picks which to decode (default: all); ``image_min_size`` lets JPEGs decode at a
        reduced scale that stays at least that ``(height, width)``. ``shard_class`` is the
        class of the record's shard: the value of a label taken from the shard (see
        :class:`ClassLabel`; :meth:`SplitRecords.shard_classes
        <tfrecordkit.store.SplitRecords.shard_classes>` gives it).

        Raises:
            SchemaError: the record is not an Example, or a key is missing, of the wrong type
                or count, or undecodable (names the feature, and ``source``: which record).
        """
        try:
            keys = decode_example_keys(data)
        except ValueError as err:
            raise SchemaError("<record>", str(err), record=source) from None
        out: dict[str, Any] = {}
        chosen = self._features if features is None else {n: self[n] for n in features}
        context = DecodeContext(min_size=image_min_size, shard_classes=None
                                if shard_class is None else [shard_class])
        list_specs = [s for n in chosen for s in self._specs[n] if s.sequence]
        if list_specs:
            keys = {**keys, **{k: v[0] for k, v in parse_feature_lists(
                [data], list_specs, lambda _: source).items()}}
        for name, feature in chosen.items():
            for spec in self._specs[name]:
                problem = None if spec.sequence else check_key(spec, keys)
                if problem:
                    raise SchemaError(name, problem, record=source)
            try:
                out[name] = feature.decode_in(name, keys, context, 0)
            except SchemaError as err:
                if err.record is None and source is not None:
                    raise SchemaError(err.feature, err.reason, record=source) from None
                raise
            except (OSError, ValueError, RuntimeError, KeyError, IndexError) as err:
                raise SchemaError(name, f"cannot decode: {err}", record=source) from None
        return out

    def decode_batch(self, records: Sequence[bytes] | RecordSlices, *,
                     features: Sequence[str] | None = None,
                     where: Callable[[int], Any] | None = None,
                     context: DecodeContext | None = None) -> dict[str, Any]:
        """Decode a batch at once: ``{feature name: n values}`` (an array for numbers and
        class labels, a list otherwise), checked as :meth:`decode` checks each record, through
        the compiled columnar codec (see :func:`tfrecordkit.format.parse_examples`).
        ``context`` (:class:`DecodeContext`) holds what kinds take from the batch: the
        images' reduced-scale floor (see :meth:`decode`) and arrays to decode into (such a
        feature's value is that array when every image has a row's shape, else the list of
        images), the audio rate to resample to, the records' shard classes (see
        :meth:`decode`); with ``context.strict`` a record holding a key the schema does not
        describe is refused (records someone else wrote, read by a schema inferred from a
        sample).

        Raises:
            SchemaError: as :meth:`decode`; names the feature and the record (``where(i)``,
                default its index in the batch).
        """
        chosen = self._features if features is None else {n: self[n] for n in features}
        context = context or DecodeContext()
        strict = context.strict
        name_of = where if where is not None else (lambda i: i)
        specs = [spec for name in chosen for spec in self._specs[name]]
        # Strict: every key the schema describes is looked for, so that only others stand out.
        parsed = ([spec for name in self._features for spec in self._specs[name]] if strict
                  else specs)
        columns: dict[str, Any] = parse_examples(
            records, [s for s in parsed if not s.sequence], where=name_of, strict=strict,
            threads=context.threads)
        list_specs = [s for s in specs if s.sequence]
        if list_specs:  # SequenceExample feature lists, record by record
            listed = records.records() if isinstance(records, RecordSlices) else records
            columns.update(parse_feature_lists(listed, list_specs, name_of))
        n = len(records)
        return {name: feature.decode_column(name, columns, n, name_of, context)
                for name, feature in chosen.items()}

    # -- reading --------------------------------------------------------------------------

    def key_specs(self, names: list[str] | None = None) -> list[KeySpec]:
        """The parsing spec of every Example key the (selected) features write."""
        chosen = self._features if names is None else {n: self[n] for n in names}
        return [spec for name, feature in chosen.items() for spec in feature.key_specs(name)]

    def of_kind(self, *kinds: type[F]) -> dict[str, F]:
        """The features of the given kinds (e.g. ``Image``), by name, in order."""
        return {name: f for name, f in self._features.items()
                if isinstance(f, kinds)}

    def feature_as(self, name: str, kind: type[F]) -> F:
        """The feature ``name``, which must be a ``kind``.

        Raises:
            SchemaError: it is another kind (or missing).
        """
        feature = self._features.get(name)
        if not isinstance(feature, kind):
            found = type(feature).__name__ if feature is not None else "missing"
            raise SchemaError(name, f"expected a {kind.__name__} feature, found {found}")
        return feature

    def class_names(self, name: str | None) -> list[str]:
        """The class names of the feature ``name`` if it is a :class:`ClassLabel`, else []."""
        feature = self._features.get(name) if name is not None else None
        return list(feature.names) if isinstance(feature, ClassLabel) else []

    @property
    def format_needs(self) -> list[tuple[int, str]]:
        """The ``dataset.json`` format versions its features need, and what needs each."""
        return [need for f in self._features.values() if (need := f.format_need)]

    def class_label(self) -> tuple[str, ClassLabel] | None:
        """The first :class:`ClassLabel` feature (name, feature), if any."""
        for name, feature in self._features.items():
            if isinstance(feature, ClassLabel):
                return name, feature
        return None

    @property
    def shard_label(self) -> str | None:
        """The name of the class label taken from each record's shard (``from_shard``), if
        there is one."""
        return next((name for name, f in self._features.items()
                     if isinstance(f, ClassLabel) and f.from_shard), None)

    # -- JSON -----------------------------------------------------------------------------

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready description (the manifest's ``schema``)."""
        return {"features": {name: f.to_json() for name, f in self._features.items()}}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Schema:
        """Rebuild a schema from :meth:`to_json` output."""
        return cls({name: feature_from_json(f) for name, f in data["features"].items()})


def _check_features(features: Mapping[str, Feature]) -> None:
    """Refuse names that are empty or reserved, values that are not features, two features
    writing one Example key, and more than one label taken from the shard (or one named
    ``record``).

    Raises:
        SchemaError: naming the feature at fault.
    """
    keys: dict[str, str] = {}
    for name, feature in features.items():
        if not isinstance(name, str) or not name:
            raise SchemaError(str(name), "feature names must be non-empty strings")
        provenance = (name == SOURCE_FEATURE and isinstance(feature, Text)
                      and not feature.has_ids)  # see Schema.with_source
        if name.startswith(RESERVED_PREFIX) and not provenance:
            raise SchemaError(name, f"names starting with {RESERVED_PREFIX!r} are kept for "
                                    "what readers add beside the features (__id, __valid)")
        if not isinstance(feature, Feature):
            raise SchemaError(name, f"expected a Feature, got {type(feature).__name__}")
        for spec in feature.key_specs(name):
            if spec.key in keys:
                raise SchemaError(name, f"Example key {spec.key!r} is also written by "
                                        f"{keys[spec.key]!r}")
            keys[spec.key] = name
    from_shard = [n for n, f in features.items() if isinstance(f, ClassLabel) and f.from_shard]
    if from_shard and from_shard[0] == "record":
        raise SchemaError("record", "a label from the shard cannot be named 'record': "
                                    "readers put undecoded records under that key")
    if len(from_shard) > 1:
        raise SchemaError(from_shard[1], f"only one class label can come from the shard "
                                         f"({from_shard[0]!r} does)")
