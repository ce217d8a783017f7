"""Profiling records of unknown layout: each feature's list kind, counts, presence and content.

This is what ``tfrecordkit inspect`` shows and what schema inference for foreign files uses.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np

from tfrecordkit.codecs import sniff_bytes
from tfrecordkit.format import KeySpec, SpecDtype, decode_tensor_proto, messages
from tfrecordkit.schema._observations import ImageObservations, observe_image

__all__ = ["FeatureProfile", "ListKind", "RecordProfile", "profile_records"]

ListKind = Literal["bytes", "float", "int64", "empty"]
_KIND_OF_ONEOF: dict[str | None, ListKind] = {
    "bytes_list": "bytes",
    "float_list": "float",
    "int64_list": "int64",
    None: "empty",
}
_TF_DTYPE = {"bytes": "tf.string", "float": "tf.float32", "int64": "tf.int64", "empty": "tf.string"}
_SPEC_DTYPE: dict[str, SpecDtype] = {"bytes": "string", "float": "float32", "int64": "int64",
                                     "empty": "string"}


@dataclass
class FeatureProfile:
    """What a sample of records shows about one feature."""

    name: str
    kind: ListKind = "empty"
    present: int = 0
    min_count: int = 0
    max_count: int = 0
    min_value: float | int | None = None
    max_value: float | int | None = None
    sequence: bool = False  # a SequenceExample feature list: counts are values per step
    min_steps: int = 0
    max_steps: int = 0
    contents: Counter[str] = field(default_factory=Counter)
    kinds_seen: set[str] = field(default_factory=set)
    lists_seen: int = 0  # value lists counted (records; for a feature list, its steps)
    #: What its JPEG/PNG values are (from their headers): formats, channels, one size.
    images: ImageObservations = field(default_factory=ImageObservations, repr=False)
    #: Its serialized tensors' dtypes, ranks and shape (``None`` where they differ), and how
    #: many values looked like one but did not parse.
    tensor_dtypes: set[str] = field(default_factory=set)
    tensor_shape: tuple[int | None, ...] | None = None
    tensor_ranks: set[int] = field(default_factory=set)
    broken_tensors: int = 0

    def _add(self, kind: ListKind, values: Any) -> None:
        count = len(values)
        if self.lists_seen == 0:
            self.min_count = self.max_count = count
        else:
            self.min_count = min(self.min_count, count)
            self.max_count = max(self.max_count, count)
        self.lists_seen += 1
        self.present += 1
        if kind != "empty":
            self.kinds_seen.add(kind)
            if self.kind == "empty":
                self.kind = kind
        if kind == "bytes":
            for value in values:
                content = sniff_bytes(value)
                self.contents[content] += 1
                if content in ("jpeg", "png"):
                    self.images.add([observe_image(self.name, value)])
                elif content == "tensor":
                    self._add_tensor(value)
        elif kind in ("float", "int64") and count:
            array = np.asarray(values)
            low, high = array.min().item(), array.max().item()
            self.min_value = low if self.min_value is None else min(self.min_value, low)
            self.max_value = high if self.max_value is None else max(self.max_value, high)

    def _add_tensor(self, value: bytes) -> None:
        try:
            array = decode_tensor_proto(value)
        except ValueError:
            self.broken_tensors += 1
            return
        self.tensor_dtypes.add(array.dtype.name)
        self.tensor_ranks.add(array.ndim)
        shape = self.tensor_shape
        self.tensor_shape = (array.shape if shape is None
                             else tuple(a if a == b else None
                                        for a, b in zip(shape, array.shape, strict=False)))

    @property
    def only_images(self) -> bool:
        """Whether every value seen is a JPEG or PNG."""
        return bool(self.contents) and set(self.contents) <= {"jpeg", "png"}

    @property
    def content(self) -> str | None:
        """The commonest content of a bytes feature (``"jpeg"``, ``"text"``, ...), else None."""
        if not self.contents:
            return None
        return self.contents.most_common(1)[0][0]

    def is_fixed_length(self, records: int) -> bool:
        """Whether every one of ``records`` sampled records holds the same number of values."""
        return self.present == records and self.min_count == self.max_count

    def _add_steps(self, steps: Any) -> None:
        first = self.present == 0
        count = len(steps)
        self.min_steps = count if first else min(self.min_steps, count)
        self.max_steps = count if first else max(self.max_steps, count)
        before = self.present
        for step in steps:
            kind = _KIND_OF_ONEOF[step.WhichOneof("kind")]
            self._add(kind, getattr(step, f"{kind}_list").value if kind != "empty" else ())
        self.present = before + 1

    def key_spec(self, records: int) -> KeySpec:
        """How to parse this feature: fixed shape when every one of ``records`` sampled
        records held the same number of values, else variable length; for a feature list,
        one step's shape."""
        dtype = _SPEC_DTYPE[self.kind]
        if self.sequence:  # a feature list: one step's shape (None when steps vary)
            fixed = self.min_count == self.max_count and self.max_count > 0
            step = (() if self.max_count == 1 else (self.max_count,)) if fixed else None
            return KeySpec(self.name, dtype, step, sequence=True)
        if self.is_fixed_length(records) and self.max_count > 0:
            return KeySpec(self.name, dtype, () if self.max_count == 1 else (self.max_count,))
        return KeySpec(self.name, dtype, None)

    def parse_spec_code(self, records: int) -> str:
        """Source of the ``tf.io`` parsing spec that reads this feature."""
        dtype = _TF_DTYPE[self.kind]
        if self.sequence:
            if self.min_count == self.max_count and self.max_count > 0:
                shape = "[]" if self.max_count == 1 else f"[{self.max_count}]"
                return f"tf.io.FixedLenSequenceFeature({shape}, {dtype})"
            return f"tf.io.RaggedFeature({dtype})"
        spec = self.key_spec(records)
        if spec.shape is None:
            return f"tf.io.VarLenFeature({dtype})"
        return f"tf.io.FixedLenFeature({list(spec.shape)}, {dtype})"

    def to_dict(self, records: int) -> dict[str, Any]:
        """A JSON-ready summary."""
        out: dict[str, Any] = {
            "kind": self.kind,
            "min_values_per_record": self.min_count,
            "max_values_per_record": self.max_count,
            "present_in": self.present,
            "present_in_every_record": self.present == records,
            "parse_spec": self.parse_spec_code(records),
        }
        if self.kind == "bytes":
            out["content"] = self.content
            out["contents"] = dict(self.contents)
        if self.min_value is not None:
            out["min_value"] = self.min_value
            out["max_value"] = self.max_value
        if self.sequence:
            out["sequence"] = True
            out["min_steps"] = self.min_steps
            out["max_steps"] = self.max_steps
        if len(self.kinds_seen) > 1:
            out["conflicting_kinds"] = sorted(self.kinds_seen)
        return out


@dataclass
class RecordProfile:
    """Feature profiles over a sample of records, and how the records parsed."""

    records: int = 0
    features: dict[str, FeatureProfile] = field(default_factory=dict)
    unparsable: int = 0
    message_type: str = "Example"

    def add(self, data: bytes) -> None:
        """Take one more record into the profile (bytes that are no Example are counted in
        :attr:`unparsable`)."""
        # An Example parses as a SequenceExample (field 1 is Features in both); only a
        # SequenceExample has feature lists.
        try:
            message = messages["SequenceExample"].FromString(data)
        except Exception:  # any bytes that aren't an Example: counted, not fatal
            self.unparsable += 1
            return
        self.records += 1
        for name, feature in message.context.feature.items():
            kind = _KIND_OF_ONEOF[feature.WhichOneof("kind")]
            values = getattr(feature, f"{kind}_list").value if kind != "empty" else ()
            self._entry(name, False)._add(kind, values)
        for name, feature_list in message.feature_lists.feature_list.items():
            self.message_type = "SequenceExample"
            self._entry(name, True)._add_steps(feature_list.feature)

    def _entry(self, name: str, sequence: bool) -> FeatureProfile:
        found = self.features.get(name)
        if found is None:
            found = self.features[name] = FeatureProfile(name, sequence=sequence)
        return found

    def feature_description_code(self) -> str:
        """Python source of the ``feature_description`` dict for ``tf.io.parse_example``."""
        lines = ["import tensorflow as tf", ""]
        groups = [("feature_description", False)]
        if self.message_type == "SequenceExample":
            groups = [("context_features", False), ("sequence_features", True)]
        for variable, sequence in groups:
            lines.append(f"{variable} = {{")
            for name in sorted(self.features):
                feature = self.features[name]
                if feature.sequence == sequence:
                    lines.append(f"    {name!r}: {feature.parse_spec_code(self.records)},")
            lines.append("}")
        return "\n".join(lines)

    def parse_function_code(self) -> str:
        """Python source of a complete TensorFlow reader for these records: the
        ``feature_description``, a ``parse`` function that decodes single JPEG/PNG images as
        the library's readers do (accurate-DCT JPEGs, PNGs; their stored
        ``height``/``width``/``channels`` when the records carry them), densifies
        variable-length lists and parses serialized tensors, and the ``tf.data`` pipeline
        that applies it."""
        lines = [self.feature_description_code(), ""]
        if self.message_type == "SequenceExample":
            lines += ["", "def parse(serialized):",
                      '    """One serialized SequenceExample -> (context, feature lists)."""',
                      "    return tf.io.parse_single_sequence_example(",
                      "        serialized, context_features, sequence_features)"]
        else:
            lines += ["", "def parse(serialized):",
                      '    """One serialized record -> its decoded features."""',
                      "    example = tf.io.parse_single_example(serialized, "
                      "feature_description)"]
            names = set(self.features)
            for name in sorted(self.features):
                feature = self.features[name]
                single = self.is_single(feature)
                if feature.kind == "bytes" and single and feature.only_images:
                    dims = _dim_keys(name, names)
                    lines.append(f"    image = {_image_decode(name, set(feature.contents))}")
                    if dims:
                        shape = ", ".join(f"tf.cast(example[{d!r}], tf.int32)"
                                          if d else "-1" for d in dims)
                        lines.append(f"    image = tf.reshape(image, [{shape}])  "
                                     "# the stored dims")
                    lines.append(f"    example[{name!r}] = image")
                elif feature.kind == "bytes" and single and feature.content == "tensor":
                    lines.append(f"    example[{name!r}] = tf.io.parse_tensor("
                                 f"example[{name!r}], out_type=tf.float32)  "
                                 "# the dtype it was serialized with")
                elif not feature.sequence and feature.key_spec(self.records).shape is None:
                    lines.append(f"    example[{name!r}] = tf.sparse.to_dense("
                                 f"example[{name!r}])")
            lines.append("    return example")
        lines += ["", "", "def load(files):",
                  '    """A dataset of decoded records from TFRecord files."""',
                  "    return tf.data.TFRecordDataset(files).map(",
                  "        parse, num_parallel_calls=tf.data.AUTOTUNE)"]
        return "\n".join(lines) + "\n"

    def is_single(self, feature: FeatureProfile) -> bool:
        """Whether every sampled record holds exactly one value of ``feature``."""
        return (not feature.sequence and feature.is_fixed_length(self.records)
                and feature.max_count == 1)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready summary."""
        return {
            "message_type": self.message_type,
            "sampled_records": self.records,
            "unparsable_records": self.unparsable,
            "features": {
                name: self.features[name].to_dict(self.records) for name in sorted(self.features)
            },
        }


def _image_decode(name: str, formats: set[str]) -> str:
    """The TensorFlow expression decoding key ``name``'s JPEG and/or PNG bytes as
    tfrecordkit's readers do: JPEGs with the accurate integer DCT (TensorFlow's default fast
    DCT gives pixels up to 8 levels away from every other decoder), PNGs with decode_png,
    both through tf.io.is_jpeg when the key holds both."""
    value = f"example[{name!r}]"
    jpeg = f"tf.io.decode_jpeg({value}, dct_method=\"INTEGER_ACCURATE\")"
    png = f"tf.io.decode_png({value})"
    if formats == {"jpeg"}:
        return jpeg
    if formats == {"png"}:
        return png
    return (f"tf.cond(tf.io.is_jpeg({value}), lambda: {jpeg},\n"
            f"                    lambda: {png})")


def _dim_keys(name: str, names: set[str]) -> list[str | None] | None:
    """The keys holding an image's height, width (and channels), as tfrecordkit writes them
    (``<name>/height``) or the Object Detection API does (``image/height`` beside
    ``image/encoded``); None when the records hold none."""
    for prefix in (name, name.rpartition("/")[0]):
        if prefix and f"{prefix}/height" in names and f"{prefix}/width" in names:
            channels = f"{prefix}/channels" if f"{prefix}/channels" in names else None
            return [f"{prefix}/height", f"{prefix}/width", channels]
    return None


def profile_records(records: Iterable[bytes], limit: int | None = 1000) -> RecordProfile:
    """Profile the ``tf.train.Example`` records of ``records`` (the first ``limit`` of them)."""
    profile = RecordProfile()
    for i, data in enumerate(records):
        if limit is not None and i >= limit:
            break
        profile.add(data)
    return profile
