"""From batches of serialized records to batches in the layout's structure: parse the whole batch,
decode (vectorised, or per example), pad or ragged-batch as the layout says."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import tensorflow as tf

from tfrecordkit.errors import DatasetError
from tfrecordkit.readers._decoding import DecodeOptions
from tfrecordkit.readers._keys import CLASS_ID, CLASS_POSITION, RECORD_ID, VALID
from tfrecordkit.readers._layout import BatchLayout, FeatureLayout
from tfrecordkit.readers.tf_data._augment import (
    _compose,
)
from tfrecordkit.readers.tf_data._crop import CROP_KEY
from tfrecordkit.readers.tf_data._graph import graph_only, unbatched
from tfrecordkit.readers.tf_data._ops import (
    AUTOTUNE,
    Example,
    _scale_image,
    batch_windows,
    decode_feature,
    decode_parsed_example,
    per_example_decode,
)
from tfrecordkit.schema import (
    ClassLabel,
    Feature,
    Scalar,
    Schema,
    Tensor,
)
from tfrecordkit.store import Manifest

__all__: list[str] = []  # its names are the tf_data package's own



@dataclass(frozen=True)
class _DecodePlan:
    """What to parse, how to decode it, and the batch layout it ends in."""

    description: dict[str, Any]
    selected: dict[str, Feature]
    layout: BatchLayout
    options: DecodeOptions
    augment: Any
    ordered: bool
    stored: BatchLayout  # decode=False: the stored keys (see readers' stored_layout)
    seed: int = 0  # keys random crops and flips
    passthrough: tuple[str, ...] = ()  # parsed keys handed on as they are (``__class``)
    strict: bool = False  # schema inferred from a sample: what it misses fails (see _ops)

    @property
    def shaping(self) -> BatchLayout:
        """The layout whole batches take their structure from: the decoded features', or
        with ``decode=False`` the stored keys'."""
        return self.layout if self.decode else self.stored

    @property
    def decode(self) -> bool:
        return self.options.decode

    @property
    def structured(self) -> bool:
        """Whether values take the layout's structure (decoded, padded)."""
        return self.decode and self.options.padding == "pad"

    @property
    def per_example(self) -> bool:
        """Whether decoding needs a per-example map (images, audio, ragged tensors, augment,
        fixed padded shapes)."""
        return self.augment is not None or bool(self.options.padded_shapes) or (
            self.decode and any(per_example_decode(f) for f in self.selected.values()))


def _batch_parser(plan: _DecodePlan) -> Any:
    """A function parsing a batch of serialized records whole: Examples, or SequenceExamples
    when there are feature lists."""
    stored = plan.stored.features
    lists = {k: v for k, v in plan.description.items()
             if isinstance(v, tf.io.FixedLenSequenceFeature)
             or (k in stored and stored[k].step_lengths)}

    def parse_batch(serialized: Any) -> Example:
        if not lists:
            return dict(tf.io.parse_example(serialized, plan.description))
        # SequenceExamples: the context as Examples' keys, each feature list ragged over
        # its steps (and over each step's values when they vary; padding and lengths then
        # come from the layout, as for other keys).
        context, steps, lengths = tf.io.parse_sequence_example(
            serialized, context_features={k: v for k, v in plan.description.items()
                                          if k not in lists},
            sequence_features=lists)
        out = dict(context)
        for key, values in steps.items():
            out[key] = (values if isinstance(values, tf.RaggedTensor)
                        else tf.RaggedTensor.from_tensor(values, lengths=lengths[key]))
        return out

    return parse_batch


#: What a batch of serialized records may carry beside them (``{"records": ..., "__id": ...}``),
#: handed on as it is: each record's id in its split, and whether it is a real record.
_CARRIED = (RECORD_ID, VALID)
#: A step of records read in sequence carries the id of its first record instead of every id
#: (made here, in the parse, rather than in a map of their own: one traced function and one
#: dataset stage less); with ``FIRST_ID_MARKED`` its records are all marked real too.
FIRST_ID, FIRST_ID_MARKED = "__first_id", "__first_id_marked"


def _records_and_carried(element: Any) -> tuple[Any, dict[str, Any]]:
    """A batch of serialized records, and what it carries beside them (see ``_CARRIED``; and
    the records' crop keys)."""
    if not isinstance(element, dict):
        return element, {}
    records = element["records"]
    carried = {k: element[k] for k in (*_CARRIED, CROP_KEY) if k in element}
    first = element.get(FIRST_ID, element.get(FIRST_ID_MARKED))
    if first is not None:  # a pipeline's construction cost is per op: few here
        ids = tf.range(first, first + tf.size(records, out_type=tf.int64))
        carried[RECORD_ID] = ids
        if FIRST_ID_MARKED in element:
            carried[VALID] = ids >= 0
    return records, carried


def _parsing(parse_batch: Any) -> Any:
    """``parse_batch`` over an element of records, keeping what it carries."""
    def parse(element: Any) -> Example:
        serialized, carried = _records_and_carried(element)
        return {**parse_batch(serialized), **carried}

    return parse


def _per_example(ds: Any, plan: _DecodePlan, batch_size: int | None, drop_remainder: bool,
                 parse_batch: Any) -> Any:
    """Parsed in big batches (fast), then each example decoded in a parallel map (images,
    audio, tensors of their own shapes, augmentation), then batched (padded or ragged)."""
    ordered, layout, options = plan.ordered, plan.layout, plan.options
    parse = _parsing(parse_batch)
    if plan.decode and plan.selected and options.crop == "random":
        def parse(element: Any, parse: Any = parse) -> Example:  # windows for a whole batch
            parsed = parse(element)
            return {**parsed, **batch_windows(plan.selected, parsed, options, plan.seed,
                                              plan.strict)}
    ds = unbatched(ds.map(graph_only(parse), num_parallel_calls=AUTOTUNE,
                           deterministic=ordered))
    # Dimensions the schema leaves open but that can't vary (channels) must agree
    # within a padded batch: padding would otherwise fill them with zeros.
    open_axes = {n: f.open_axes for n, f in layout.features.items()
                 if f.open_axes and f.kind in ("image", "audio")}
    checked = batch_size is not None and plan.structured and bool(open_axes)

    def decode_example_tf(parsed: Example) -> Example:
        if not plan.decode or not plan.selected:
            out = dict(parsed)
        else:
            out = decode_parsed_example(plan.selected, parsed, options, seed=plan.seed,
                                        follows=layout.follows, strict=plan.strict)
        out.pop(CROP_KEY, None)  # the record's crop key, read by finish_image
        out.update({k: parsed[k] for k in plan.passthrough})
        out.update({k: parsed[k] for k in _CARRIED if k in parsed})
        if plan.decode and options.image_dtype != "uint8":
            for key in layout.images:
                out[key] = _scale_image(out[key], options.image_dtype, options.mean,
                                        options.std)
        out = _compose(plan.augment)(out) if plan.augment is not None else out
        if not plan.decode:
            return out
        out = _check_padded_shapes(out, layout)
        out = {n: _fixed_tokens(v, layout[n]) if _fixed_width(layout, n) else v
               for n, v in out.items()}
        sizes = ({_OPEN + n: tf.gather(tf.shape(_array(out[n])), list(axes))
                  for n, axes in open_axes.items()} if checked else {})
        if plan.structured:
            out = {n: _structure(v, layout[n]) if n in layout.features else v
                   for n, v in out.items()}
        return {**out, **sizes}

    ds = ds.map(graph_only(decode_example_tf), num_parallel_calls=AUTOTUNE,
                deterministic=ordered)
    if batch_size is None:
        if options.padding == "pad":
            ds = ds.map(graph_only(_to_dense), num_parallel_calls=AUTOTUNE,
                        deterministic=ordered)
        return ds
    if options.padding == "ragged":
        return ds.ragged_batch(batch_size, drop_remainder=drop_remainder)
    shapes, fills = _padding(ds.element_spec, layout)
    ds = ds.padded_batch(batch_size, padded_shapes=shapes, padding_values=fills,
                         drop_remainder=drop_remainder)
    if checked:
        ds = ds.map(graph_only(lambda b: _check_open_axes(b, open_axes)),
                    num_parallel_calls=AUTOTUNE, deterministic=ordered)
    return ds


def _parse_and_decode(ds: Any, plan: _DecodePlan, batch_size: int | None,
                      drop_remainder: bool) -> Any:
    """Batches of serialized records → parsed (whole batch at once) → decoded examples,
    re-batched to ``batch_size`` (None: single examples), in the layout's structure."""
    ordered, options = plan.ordered, plan.options
    parse_batch = _batch_parser(plan)
    if plan.per_example:
        return _per_example(ds, plan, batch_size, drop_remainder, parse_batch)

    def parse_and_decode(element: Any) -> Example:
        serialized, carried = _records_and_carried(element)
        parsed = parse_batch(serialized)
        if not plan.decode or not plan.selected:
            out = dict(parsed)
        else:
            out = {n: decode_feature(f, parsed, n, options, batched=True)
                   for n, f in plan.selected.items()}
            out.update({k: parsed[k] for k in plan.passthrough})
        out.update(carried)
        out.pop(CROP_KEY, None)  # read by the windows, not given
        if batch_size is None or options.padding != "pad":
            return out  # single examples: structured one by one after unbatching
        shaping = plan.shaping
        return {n: _batch_structure(v, shaping[n]) if n in shaping.features else _to_dense(v)
                for n, v in out.items()}

    ds = ds.map(graph_only(parse_and_decode), num_parallel_calls=AUTOTUNE, deterministic=ordered)
    if batch_size is not None:
        return ds
    # Unbatching ragged values (never a dense [n, 0] tensor: TensorFlow 2.21 segfaults
    # unbatching one), then a map that turns the rank-0 ragged rows into plain tensors.
    def row(example: Any) -> Any:
        example = _rows_as_tensors(example)
        if options.padding != "pad":
            return example
        shaping = plan.shaping
        return {n: _structure(v, shaping[n]) if n in shaping.features else v
                for n, v in example.items()}

    return ds.unbatch().map(graph_only(row), num_parallel_calls=AUTOTUNE, deterministic=ordered)


_OPEN = "__open__/"


def _array(value: Any) -> Any:
    """The array a feature's value holds (audio: its samples)."""
    return value["samples"] if isinstance(value, dict) and "samples" in value else value


def _padded(value: Any, layout: FeatureLayout) -> Any:
    """A ragged value as a dense tensor, padded with the layout's fill."""
    fill = layout.fill.decode() if isinstance(layout.fill, bytes) else layout.fill
    return value.to_tensor(default_value=tf.cast(fill, value.dtype))


def _structure(value: Any, layout: FeatureLayout) -> Any:
    """One example's value in the layout's structure: varying shapes as ``{"values",
    "lengths"}`` (the lengths of the varying dimensions, int64)."""
    if layout.parts is not None:
        return {k: _structure(value[k], part) for k, part in layout.parts.items()}
    if not layout.varies:
        return value
    if layout.step_lengths:  # steps of any length: a [steps, (values)] ragged tensor
        return {"values": _padded(value, layout),
                "lengths": tf.cast(value.nrows(), tf.int64)[None],
                "step_lengths": tf.cast(value.row_lengths(), tf.int64)}
    array = _array(value)  # audio: its samples, which the layout's shape describes
    padded = {"values": array,
              "lengths": tf.cast(tf.gather(tf.shape(array), list(layout.length_axes)),
                                 tf.int64)}
    return {**value, "samples": padded} if layout.kind == "audio" else padded


def _batch_structure(value: Any, layout: FeatureLayout) -> Any:
    """A batch of one feature, parsed as a whole (fixed shapes, sequences, token ids), in
    the layout's structure: ragged values padded with the layout's fill, and their lengths."""
    if layout.parts is not None:
        return {k: _batch_structure(value[k], part) for k, part in layout.parts.items()}
    if layout.step_lengths and isinstance(value, tf.RaggedTensor):
        steps = tf.RaggedTensor.from_row_splits(value.values.row_lengths(), value.row_splits)
        return {"values": _padded(value, layout),
                "lengths": tf.cast(value.row_lengths(), tf.int64)[:, None],
                "step_lengths": tf.cast(steps.to_tensor(), tf.int64)}
    if layout.varies and isinstance(value, tf.RaggedTensor):
        return {"values": _padded(value, layout),
                "lengths": tf.cast(value.row_lengths(), tf.int64)[:, None]}
    return _to_dense(value)


def _fixed_width(layout: BatchLayout, name: str) -> bool:
    feature = layout.features.get(name)
    return feature is not None and feature.kind == "tokens" and feature.token_width is not None


def _fixed_tokens(value: dict[str, Any], feature: FeatureLayout) -> dict[str, Any]:
    """One example's token ids (and mask) padded to the layout's fixed width, as every
    reader gives them, batched or not, padded or ragged."""
    width = feature.token_width
    ids, mask = value["ids"], value["mask"]
    pad = [[0, width - tf.shape(ids)[0]]]
    ids = tf.pad(ids, pad, constant_values=tf.cast(feature.fill, ids.dtype))
    mask = tf.pad(mask, pad)
    ids.set_shape([width])
    mask.set_shape([width])
    return {**value, "ids": ids, "mask": mask}


def _check_padded_shapes(example: Example, layout: BatchLayout) -> Example:
    """The example, failing (naming the feature) if a value is larger than its padded
    shape."""
    checks = []
    for name, feature in layout.features.items():
        if feature.padded_shape is None:
            continue
        value = example[name]
        value = value["ids"] if feature.kind == "tokens" else _array(value)
        shape = (value.bounding_shape() if isinstance(value, tf.RaggedTensor)
                 else tf.shape(value))
        for axis, size in enumerate(feature.padded_shape):
            if size is not None:
                checks.append(tf.debugging.assert_less_equal(
                    tf.cast(shape[axis], tf.int64), tf.constant(size, tf.int64),
                    message=f"feature {name!r}: a value is larger than its padded shape "
                            f"{feature.padded_shape} (axis {axis})"))
    if not checks:
        return example
    with tf.control_dependencies(checks):
        return dict(tf.nest.map_structure(tf.identity, example))


def _padding(spec: Any, layout: BatchLayout) -> tuple[Any, Any]:
    """``padded_batch``'s shapes and padding values for examples of ``spec``: the layout's
    padded shapes (else each component's own, ``None`` padding to the batch's longest) and
    fills (strings: "", masks: False)."""
    def leaf(part: Any, feature: FeatureLayout | None, key: str) -> tuple[Any, Any]:
        padded = feature is not None and key in ("values", "ids", "mask", "") and (
            feature.padded_shape is not None or feature.cut_to is not None)
        shape = part.shape
        if padded and feature is not None:
            shape = tf.TensorShape(feature.padded_shape if feature.padded_shape is not None
                                   else (feature.cut_to,))
        if key == "step_lengths" and feature is not None and feature.padded_shape is not None:
            shape = tf.TensorShape(feature.padded_shape[:1])
        fill: Any = 0
        if part.dtype == tf.string:
            fill = ""
        elif feature is not None and key in ("values", "ids", ""):
            fill = feature.fill
        return shape, tf.cast(tf.constant(fill), part.dtype)

    def walk(part: Any, feature: FeatureLayout | None, key: str) -> tuple[Any, Any]:
        if isinstance(part, dict):
            pairs = {k: walk(v, feature, k) for k, v in part.items()}
            return {k: v[0] for k, v in pairs.items()}, {k: v[1] for k, v in pairs.items()}
        return leaf(part, feature, key)

    shapes, fills = {}, {}
    for name, part in spec.items():
        shapes[name], fills[name] = walk(part, layout.features.get(name), "")
    return shapes, fills


def _check_open_axes(batch: Example, open_axes: Mapping[str, tuple[int, ...]]) -> Example:
    """Drop the per-example sizes of open dimensions, failing if a record of the batch had
    another size than the batch (its padding would be zeros, not pixels or samples)."""
    out = {k: v for k, v in batch.items() if not k.startswith(_OPEN)}
    for key, axes in open_axes.items():
        have = batch[_OPEN + key]
        value = _array(out[key])
        value = value["values"] if isinstance(value, dict) else value
        batch_sizes = tf.gather(tf.shape(value)[1:], list(axes))
        check = tf.debugging.assert_equal(
            have, tf.broadcast_to(batch_sizes, tf.shape(have)),
            message=f"feature {key!r}: records of one batch have different channel counts "
                    "and the schema does not fix it: give the reader schema=... with "
                    "Image(channels=3), or DecodeOptions(padding='ragged')")
        with tf.control_dependencies([check]):
            out[key] = tf.nest.map_structure(tf.identity, out[key])
    return out


def _rows_as_tensors(example: Any) -> Any:
    return tf.nest.map_structure(
        lambda t: t if isinstance(t, tf.Tensor) else tf.identity(t), example)


def _label_feature(manifest: Manifest | None, schema: Schema) -> str | None:
    label = manifest.label_feature if manifest is not None else None
    if label is None and (found := schema.class_label()):
        label = found[0]
    return label


def _no_label_hint(schema: Schema) -> str:
    """Why ``as_supervised`` can't run, and what to write instead."""
    message = "as_supervised needs a class-label feature (tk.ClassLabel) in the schema"
    kinds = ", ".join(f"{n}: {type(f).__name__}" for n, f in schema.items())
    whole = {n for n, f in schema.of_kind(Scalar).items() if f.dtype.startswith(("int", "uint"))}
    whole |= {n for n, f in schema.of_kind(Tensor).items()
              if f.dtype.startswith(("int", "uint")) and f.shape == (1,)}
    integers = [n for n in schema if n in whole]
    hint = (f"; {integers[0]!r} holds integers: write it as tk.ClassLabel(names) (integer "
            "arrays of shape (N,) or (N, 1) named label, labels, class, target or y become "
            "class labels by themselves)") if integers else ""
    return f"{message}; this one has {kinds}{hint}"


def _supervised(ds: Any, manifest: Manifest | None, schema: Schema,
                ordered: bool) -> Any:
    label = _label_feature(manifest, schema)
    if label is None:
        raise DatasetError(_no_label_hint(schema))

    def split_label(example: Example) -> tuple[Any, Any]:
        # The class ids PxK batches carry are the label's values, the record ids and
        # whether a record is real describe it: none is an input.
        inputs = {k: v for k, v in example.items()
                  if k not in (label, CLASS_ID, CLASS_POSITION, RECORD_ID, VALID)}
        return (next(iter(inputs.values())) if len(inputs) == 1 else inputs), example[label]

    return ds.map(graph_only(split_label), num_parallel_calls=AUTOTUNE, deterministic=ordered)


def _finish(ds: Any, manifest: Manifest | None, schema: Schema, ordered: bool) -> Any:
    ds = ds.prefetch(AUTOTUNE)
    options = tf.data.Options()
    options.deterministic = ordered
    options.experimental_optimization.map_parallelization = True
    ds = ds.with_options(options)
    label = _label_feature(manifest, schema)
    ds.class_names = schema.class_names(label)
    ds.manifest = manifest
    return ds


def _to_dense(example: Any) -> Any:
    """Ragged values padded to dense tensors (zeros / empty strings)."""
    return tf.nest.map_structure(
        lambda t: t.to_tensor() if isinstance(t, tf.RaggedTensor) else t, example)


def _shard_label(schema: Schema, names: Sequence[str],
                 description: dict[str, Any]) -> str | None:
    """The label taken from the shard among ``names``, if any; its parsing spec is added to
    ``description`` (records get it appended before parsing)."""
    label = schema.shard_label
    if label is None or label not in names:
        return None
    description[label] = tf.io.FixedLenFeature([], tf.int64)
    return label


def _shard_entries(schema: Schema, label: str, classes: Sequence[int]) -> list[bytes]:
    """Per class (or file), the serialized label entry appended to its records: concatenated
    Example messages merge, so the parser reads the label as if the record held it."""
    feature = schema.feature_as(label, ClassLabel)
    return [feature.shard_entry(label, int(c)) for c in classes]


def _with_shard_label(records: list[bytes], classes: np.ndarray, entries: list[bytes]
                      ) -> np.ndarray:
    """Records with their class's label entry appended (see :func:`_shard_entries`)."""
    return np.array([r + entries[c] for r, c in zip(records, classes.tolist(), strict=True)],
                    dtype=object)
