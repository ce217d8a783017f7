"""The one rule that turns a profile of records someone else wrote into a :class:`Schema`:
what globs, ``adopt`` and ``inspect`` read those records with."""

from __future__ import annotations

from collections.abc import Sequence

from tfrecordkit.errors import SchemaError
from tfrecordkit.schema._features import (
    Boxes,
    ClassLabel,
    Feature,
    FeatureList,
    Image,
    Scalar,
    Tensor,
    Text,
)
from tfrecordkit.schema._features import Sequence as SequenceFeature
from tfrecordkit.schema._profile import FeatureProfile, RecordProfile
from tfrecordkit.schema._schema import RESERVED_PREFIX, SOURCE_FEATURE, Schema

__all__ = ["schema_from_profile"]

_DTYPES = {"bytes": "string", "float": "float32", "int64": "int64", "empty": "string"}


def schema_from_profile(profile: RecordProfile, *, complete: bool, label_feature: str | None = None,
                 class_names: Sequence[str] | None = None) -> Schema:
    """The schema that reads the profiled records.

    One value in every record: a scalar, or an image (every value a JPEG or PNG; decoded to
    the most channels seen), a serialized tensor (``tf.io.serialize_tensor``: its dtype and
    rank, a dimension left open where values differ), text (UTF-8, when every record was
    seen) or bytes. The same number of
    values (more than one) in every record: a fixed-size vector. Anything else: a list of
    any length. A SequenceExample's feature lists: feature lists (steps of one shape when
    all agree). ``label_feature`` becomes a :class:`ClassLabel` of ``class_names``. Objects
    stored as the Object Detection API stores them (``P/bbox/xmin``, ``ymin``, ``xmax``,
    ``ymax``, ``P/class/label``, as many of each) become one :class:`Boxes` feature ``P``.

    ``complete`` says the profile saw every record: then an image's one format and one size
    are kept (readers batch such images as plain arrays) and text is read as text; from a
    sample, neither is promised, since a record outside it may differ. The same profile
    always gives the same schema: files read by glob with ``infer_schema(files,
    sample=None)`` and adopted files read alike.

    Raises:
        SchemaError: a key starts with ``__`` (readers keep such names for what they add),
            or no record was profiled.
    """
    if not profile.records:
        raise SchemaError("<records>", "no tf.train.Example or SequenceExample among them")
    reserved = [name for name in profile.features
                if name.startswith(RESERVED_PREFIX) and name != SOURCE_FEATURE]
    if reserved:
        raise SchemaError(reserved[0], f"starts with {RESERVED_PREFIX!r}, which readers keep "
                                       "for what they add beside the features (__id, __valid, "
                                       "__class); read the files with a schema= that leaves it "
                                       "out, or rewrite them under another name")
    features: dict[str, Feature] = {}
    boxes = _box_prefixes(profile, label_feature)
    grouped = {spec.key for prefix in boxes for spec in Boxes().key_specs(prefix)}
    for name, feature in sorted(profile.features.items()):
        if name == label_feature:
            features[name] = ClassLabel(list(class_names or ()))
        elif name not in grouped:
            features[name] = _feature(feature, profile.records, complete)
    features.update({prefix: Boxes() for prefix in boxes})
    return Schema(dict(sorted(features.items())))


def _box_prefixes(profile: RecordProfile, label_feature: str | None) -> list[str]:
    """Prefixes ``P`` under which the records hold objects as the Object Detection API
    writes them: float lists ``P/bbox/xmin``, ``ymin``, ``xmax``, ``ymax`` and an int64 list
    ``P/class/label``, as many values in each (as far as the profile shows)."""
    found = []
    for name in profile.features:
        if not name.endswith("/class/label") or name == label_feature:
            continue
        prefix = name[: -len("/class/label")]
        keys = [spec.key for spec in Boxes().key_specs(prefix)]
        parts = [profile.features.get(key) for key in keys]
        if prefix in profile.features or any(p is None or p.sequence for p in parts):
            continue
        kinds = [p.kind for p in parts if p is not None]
        counts = {(p.present, p.min_count, p.max_count) for p in parts if p is not None}
        if (all(k in ("float", "empty") for k in kinds[:4]) and kinds[4] in ("int64", "empty")
                and len(counts) == 1):
            found.append(prefix)
    return found


def _feature(p: FeatureProfile, records: int, complete: bool) -> Feature:
    dtype = _DTYPES[p.kind]
    if p.sequence:  # a SequenceExample feature list
        step = p.key_spec(records).shape
        if step is not None and (dtype != "string" or step == ()):
            return FeatureList(dtype, step)
        return FeatureList(dtype, (None,))
    every = p.present == records and p.min_count == p.max_count
    if every and p.max_count == 1 and p.kind == "bytes":
        return _one_value(p, complete)
    if every and p.max_count == 1:
        return Scalar(dtype)
    if every and p.max_count > 1 and p.kind in ("float", "int64"):
        return Tensor((p.max_count,), dtype, encoding="list")
    return SequenceFeature(Scalar(dtype))


def _one_value(p: FeatureProfile, complete: bool) -> Feature:
    """One bytes value per record: what its contents say it is."""
    if p.only_images:
        formats = {fmt for fmt, _, _ in p.images.seen.get(p.name, ())}
        channels = [c for _, c, _ in p.images.seen.get(p.name, ()) if c]
        return Image(formats.pop() if complete and len(formats) == 1 else "auto",
                     channels=max(channels) if channels else None, dims=False,
                     size=p.images.sizes().get(p.name) if complete else None)
    if (set(p.contents) == {"tensor"} and not p.broken_tensors and len(p.tensor_dtypes) == 1
            and len(p.tensor_ranks) == 1 and p.tensor_shape is not None):
        dtype = next(iter(p.tensor_dtypes))
        if dtype != "object":
            return Tensor(tuple(p.tensor_shape), dtype, encoding="proto")
    if complete and set(p.contents) <= {"text", "empty"} and "text" in p.contents:
        return Text()
    # From a sample, text stays bytes (as TensorFlow reads it): a value outside it may not
    # be UTF-8.
    return Scalar("string")

