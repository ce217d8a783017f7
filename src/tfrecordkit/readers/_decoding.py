"""From serialized records to a batch of NumPy values, the same way for every TF-free reader
(NumPy, PyTorch, grain): which features, decoded or raw, images resized, shapes padded."""

from __future__ import annotations

import itertools
from collections.abc import Callable, Mapping
from collections.abc import Sequence as Names
from concurrent.futures import Executor
from typing import Any

import numpy as np

from tfrecordkit.codecs import (
    MAX_IMAGE_PIXELS,
    Finish,
    ImageTransform,
    Placement,
    RecordKeys,
    scale_pixels,
)
from tfrecordkit.errors import SchemaError
from tfrecordkit.format import (
    Column,
    RecordSlices,
    parse_example,
    parse_examples,
    parse_feature_lists,
)
from tfrecordkit.readers._batch_memory import BatchMemory, owner_of, pad_into, rows_of
from tfrecordkit.readers._layout import BatchLayout, FeatureLayout, stored_layout, stored_specs
from tfrecordkit.readers._options import DecodeOptions, Padding, decode_options
from tfrecordkit.schema import DecodeContext, KeySpec, Schema

__all__ = ["DecodeOptions", "Padding", "RecordDecoder", "batch_feature", "decode_options",
           "record_values", "unbatch_values"]

_CHUNK = 32  # fewest records per decoding task


def chunk_size(records: int, threads: int) -> int:
    """Records per decoding task for a batch of ``records`` heavy records (images, audio) on
    ``threads`` threads: one task per thread, and no fewer than 32. Each task reads, checks
    and parses its records and is handed back; at 32 a task that cost 12 µs per 128 px JPEG
    on top of its 53 µs decode (2 threads: 21-24k vs 28-30k img/s at one task per thread)."""
    return max(_CHUNK, -(-records // max(threads, 1)))


def batch_feature(layout: FeatureLayout, values: list[Any], padding: Padding) -> Any:
    """One feature's per-record values as a batch, as its layout says: arrays stacked;
    varying shapes padded with ``{"values", "lengths"}`` (or listed, ``"ragged"``); strings
    as lists (padded to object arrays when they vary); audio ``{samples, sample_rate}``;
    texts with token ids ``{text, ids, mask}``; a feature of parts, each part batched alike.

    Raises:
        ValueError: a value larger than the padded shape, or records of one batch that
            disagree on a dimension the schema leaves open but that can't vary (channels).
    """
    if layout.parts is not None:
        return {key: batch_feature(part, [v[key] for v in values], padding)
                for key, part in layout.parts.items()}
    if layout.kind == "tokens":
        return _batch_tokens(layout, values, padding)
    if layout.kind == "audio":
        return {"samples": _batch_arrays(layout, [v["samples"] for v in values], padding),
                "sample_rate": np.array([v["sample_rate"] for v in values], np.int64)}
    if layout.step_lengths:
        return _batch_steps(layout, values, padding)
    if layout.kind in ("bytes", "text"):
        if not layout.varies:
            return list(values)
        rows = [list(v) for v in values]
        if padding == "ragged":
            return rows
        lengths = np.array([[len(r)] for r in rows], dtype=np.int64).reshape(len(rows), 1)
        out = np.full((len(rows), int(lengths.max(initial=0))), layout.fill, dtype=object)
        for i, row in enumerate(rows):
            out[i, : len(row)] = row
        return {"values": out, "lengths": lengths}
    return _batch_arrays(layout, values, padding)


def record_values(layout: FeatureLayout, value: Any, padding: Padding) -> Any:
    """One record's value in the batch structure without the batch dimension (what
    per-record readers give: grain, unbatched tf.data)."""
    batch = batch_feature(layout, [value], padding)
    return _first(batch)


def unbatch_values(layout: FeatureLayout, value: Any) -> Any:
    """A value from :func:`record_values` (or a record's plain value, as Ray rows hold it)
    back as the record's plain value."""
    if layout.parts is not None:
        return {key: unbatch_values(part, value[key]) for key, part in layout.parts.items()}
    if layout.kind == "tokens":
        ids = np.asarray(value["ids"])
        return {"text": value["text"], "ids": ids[value["mask"]] if "mask" in value else ids}
    if layout.kind == "audio":
        samples = value["samples"]
        return {"samples": samples["values"] if isinstance(samples, dict) else samples,
                "sample_rate": value["sample_rate"]}
    if isinstance(value, dict):
        values = _cut(layout, value)
        if layout.step_lengths and layout.kind == "bytes":
            return [list(step) for step in values]
        return list(values) if layout.kind in ("bytes", "text") else values
    return value


def _cut(layout: FeatureLayout, value: dict[str, Any]) -> Any:
    """A record's padded values cut to its lengths along the varying axes (steps of any
    length: each step cut to its own)."""
    if layout.step_lengths:
        widths = np.asarray(value["step_lengths"]).tolist()[: int(value["lengths"][0])]
        return [value["values"][t, :w] for t, w in enumerate(widths)]
    region = [slice(None)] * np.ndim(value["values"])
    for axis, n in zip(layout.length_axes, value["lengths"], strict=True):
        region[axis] = slice(0, int(n))
    return value["values"][tuple(region)]


def _first(batch: Any) -> Any:
    if isinstance(batch, dict):
        return {k: _first(v) for k, v in batch.items()}
    return batch[0]


def _batch_arrays(layout: FeatureLayout, values: list[Any], padding: Padding) -> Any:
    arrays = [np.asarray(v, dtype=layout.dtype) for v in values]
    ndim = len(layout.shape)
    if any(a.ndim != ndim for a in arrays):
        bad = next(i for i, a in enumerate(arrays) if a.ndim != ndim)
        raise ValueError(f"value {bad} of the batch has shape {arrays[bad].shape}; the "
                         f"feature's values have {ndim} dimension(s)")
    if padding == "ragged" and layout.ragged:
        return arrays
    shapes = np.array([a.shape for a in arrays], dtype=np.int64).reshape(len(arrays), ndim)
    _check_open_axes(layout, shapes)
    if not layout.varies:
        if len({a.shape for a in arrays}) > 1:
            raise ValueError(f"values of one batch have different shapes "
                             f"{sorted({a.shape for a in arrays})}")
        return np.stack(arrays)
    target = _padded_target(layout, shapes)
    shape, dtype = (len(arrays), *target), arrays[0].dtype
    # Zeros come from calloc: padding pages are never written, only mapped when read.
    out = (np.zeros(shape, dtype) if layout.fill == 0 and dtype.kind != "O"
           else np.full(shape, layout.fill, dtype=dtype))
    for i, a in enumerate(arrays):
        region: tuple[int | slice, ...] = (i, *[slice(0, d) for d in a.shape])
        out[region] = a
    return {"values": out, "lengths": shapes[:, list(layout.length_axes)]}


def _padded_in_place(whole: np.ndarray, values: list[Any], layout: FeatureLayout
                     ) -> dict[str, np.ndarray] | None:
    """Images decoded into the rows of a zero-padded ``whole`` as the batch's value with
    their lengths, or None unless every image lies in it and the largest fill it (stored
    sizes larger than the images would pad more than the other readers pad)."""
    owner = owner_of(whole)
    sizes = np.array([v.shape[:2] for v in values], np.int64).reshape(-1, 2)
    if not (all(isinstance(v, np.ndarray) and owner_of(v) is owner for v in values)
            and tuple(sizes.max(axis=0)) == whole.shape[1:3]):
        return None
    lengths = np.array([[v.shape[a] for a in layout.length_axes] for v in values], np.int64)
    return {"values": whole, "lengths": lengths.reshape(len(values), -1)}


def _check_open_axes(layout: FeatureLayout, shapes: np.ndarray) -> None:
    """Refuse a batch whose values differ along a dimension the schema leaves open but that
    cannot vary within a batch (an image's channels)."""
    for axis in layout.open_axes:
        if len(np.unique(shapes[:, axis])) > 1:
            what = "images" if layout.kind == "image" else "values"
            raise ValueError(f"{what} of one batch have different channel counts "
                             f"({sorted(set(shapes[:, axis].tolist()))}) and the schema does "
                             "not fix it: give the reader schema=... with Image(channels=3) (files "
                             "without a manifest; a dataset's manifest: adopt or convert "
                             "again), or DecodeOptions(padding='ragged')")


def _padded_target(layout: FeatureLayout, shapes: np.ndarray) -> list[int]:
    """The shape a batch of values of ``shapes`` is padded to: the largest along each
    dimension, or the layout's padded shape where it fixes one (larger values refused)."""
    target: list[int] = shapes.max(axis=0).tolist() if len(shapes) else [0] * shapes.shape[1]
    if layout.padded_shape is not None:
        for axis, size in enumerate(layout.padded_shape):
            if size is None:
                continue
            too_big = np.flatnonzero(shapes[:, axis] > size)
            if too_big.size:
                raise ValueError(f"value {int(too_big[0])} of the batch has shape "
                                 f"{tuple(shapes[too_big[0]].tolist())}, larger than the "
                                 f"padded shape {layout.padded_shape}")
            target[axis] = size
    return target


def _batch_steps(layout: FeatureLayout, values: list[Any], padding: Padding) -> Any:
    """Feature lists whose steps hold any number of values (a list of steps per record):
    ``{"values": (B, steps, values), "lengths": (B, 1), "step_lengths": (B, steps)}``, the
    padding filled with the layout's fill (``"ragged"``: each record's list of steps)."""
    strings = layout.dtype is None
    records = [[list(step) if strings else np.asarray(step, layout.dtype).reshape(-1)
                for step in steps] for steps in values]
    if padding == "ragged":
        return records
    counts = [len(steps) for steps in records]
    widths = [len(step) for steps in records for step in steps]
    target = [max(counts, default=0), max(widths, default=0)]
    for axis, size in enumerate(layout.padded_shape or (None, None)):
        have = target[axis]
        if size is not None and have > size:
            bad = next(i for i, steps in enumerate(records)
                       if (len(steps) if axis == 0 else max(map(len, steps), default=0)) > size)
            raise ValueError(f"value {bad} of the batch has {have} "
                             f"{'steps' if axis == 0 else 'values in a step'}, more than the "
                             f"padded shape {layout.padded_shape}")
        target[axis] = have if size is None else size
    out = np.full((len(records), *target), layout.fill,
                  dtype=object if strings else layout.dtype)
    step_lengths = np.zeros((len(records), target[0]), np.int64)
    for i, steps in enumerate(records):
        for t, step in enumerate(steps):
            out[i, t, : len(step)] = step
            step_lengths[i, t] = len(step)
    return {"values": out, "lengths": np.array(counts, np.int64).reshape(len(records), 1),
            "step_lengths": step_lengths}


def _batch_tokens(layout: FeatureLayout, values: list[dict[str, Any]], padding: Padding
                  ) -> dict[str, Any]:
    """Texts with token ids: ``{"text", "ids", "mask"}``, ids cut to the padded length (the
    options' ``text_length``) and padded with the fill; ragged without a fixed width: lists."""
    fixed = layout.token_width
    ids = [np.asarray(v["ids"], np.int64)[: layout.cut_to] for v in values]
    texts = [v["text"] for v in values]
    if padding == "ragged" and layout.ragged:
        return {"text": texts, "ids": ids, "mask": [np.ones(len(i), bool) for i in ids]}
    width = fixed if fixed is not None else max((len(i) for i in ids), default=0)
    too_long = [k for k, i in enumerate(ids) if len(i) > width]
    if too_long:
        raise ValueError(f"value {too_long[0]} of the batch has {len(ids[too_long[0]])} "
                         f"token ids, more than the padded shape {layout.padded_shape} "
                         "(give text_length to cut)")
    padded = np.full((len(ids), width), layout.fill, np.int64)
    mask = np.zeros((len(ids), width), bool)
    for k, row in enumerate(ids):
        padded[k, : len(row)] = row
        mask[k, : len(row)] = True
    return {"text": texts, "ids": padded, "mask": mask}


class RecordDecoder:
    """Decodes lists of serialized records into batches shaped by their
    :class:`~tfrecordkit.readers.BatchLayout`.

    ``inferred_from``: the schema was inferred from that many sampled records of files
    someone else wrote; a record holding a key (or a number of values) it does not describe
    is then refused, naming the way to a schema that does.
    """

    def __init__(self, schema: Schema, options: DecodeOptions, *,
                 inferred_from: int = 0) -> None:
        self.layout = BatchLayout.of(schema, options)
        self.schema, self.options, self.features = schema, options, self.layout.names
        self.inferred_from = inferred_from
        #: Threads that may parse one large batch: the loader's plan (None: the codec's own).
        self.threads: int | None = None
        # decode=False: the Example keys the features are stored under, parsed, not decoded.
        self._raw_specs = tuple(stored_specs(schema, self.features))
        self.stored = stored_layout(self._raw_specs, options.padding)
        # Records read whole by a schema inferred from a sample: a key it lacks is an error.
        self._strict_keys = self.inferred_from > 0 and len(self.features) == len(self.schema)
        self._fixed_keys = all(not spec.sequence and not self.stored[spec.key].varies
                               for spec in self._raw_specs)
        self._images = set(self.layout.images)
        self.shard_label = self.layout.shard_label
        size = options.image_size
        self._min_size = size if size is not None and options.fast_resize else None
        self._memory = BatchMemory()
        # Resizing and scaling run on the decoding thread, into the batch's rows.
        self._transform = (ImageTransform(options) if options.decode and size is not None
                           else None)
        #: Image features decoded into a padded batch array in place (see padded_arrays).
        self.padded_images = self._padded_images()
        # Images the schema gives one decoded shape (size and channels), not resized: each
        # must have it, as tf.data's ensure_shape requires.
        self._fixed: dict[str, tuple[int, int, int]] = {}
        if options.decode and size is None:
            for name in self._images:
                shape = getattr(schema[name], "fixed_shape", None)
                if shape is not None:
                    self._fixed[name] = shape

    @property
    def heavy(self) -> bool:
        """Whether records take long to decode (images, audio): worth splitting finely."""
        return any(f.kind in ("image", "audio") for f in self.layout.features.values())

    def raw_columns(self, records: Names[bytes] | RecordSlices, where: Callable[[int], Any],
                    classes: np.ndarray | None = None, *, padding: Padding | None = None
                    ) -> dict[str, Any]:
        """``decode=False``: each stored Example key of the features, parsed but not decoded
        (``feature_description``'s keys): fixed-length keys as ``(B, *shape)`` arrays (bytes
        in object arrays; images and audio still encoded), variable-length ones as
        ``{"values", "lengths"}`` (``padding="ragged"``: one array or list per record), as
        :attr:`stored` lays them out. ``padding`` overrides the options' (Ray rows keep each
        record's own values)."""
        try:
            columns, lists = _parse_keys(records, self._raw_specs, where,
                                         strict=self._strict_keys, threads=self.threads)
        except SchemaError as err:
            raise self._undescribed(err) from None
        padding = padding or self.options.padding
        out = {}
        for key, column in columns.items():
            layout = self.stored[key]
            out[key] = (batch_feature(layout, _rows(column), padding) if layout.varies
                        else _fixed(column, len(records)))
        for key, values in lists.items():
            out[key] = batch_feature(self.stored[key], values, padding)
        if self.shard_label is not None and classes is not None:
            out[self.shard_label] = np.asarray(classes, np.int64)
        return out

    def raw_one(self, record: bytes, source: str | int | Callable[[], str] | None = None,
                shard_class: int | None = None) -> dict[str, Any]:
        """One record's :meth:`raw_columns`, without the batch dimension (``source`` names the
        record in errors; a callable gives the name, called only on an error)."""
        if self._fixed_keys:  # every key one fixed shape: one compiled parse of the record
            try:
                out = parse_example(record, self._raw_specs, where=source,
                                    strict=self._strict_keys)
            except SchemaError as err:
                raise self._undescribed(err) from None
            if self.shard_label is not None and shard_class is not None:
                out[self.shard_label] = np.int64(shard_class)
            return out
        classes = None if shard_class is None else np.array([shard_class])
        return {key: _first(value) for key, value in self.raw_columns(
            [record], lambda _: source() if callable(source) else source, classes).items()}

    def collate_raw(self, rows: Names[dict[str, Any]]) -> dict[str, Any]:
        """Rows of :meth:`raw_one` as one :meth:`raw_columns` batch (other keys stacked)."""
        out: dict[str, Any] = {}
        for key in rows[0]:
            values = [r[key] for r in rows]
            layout = self.stored.features.get(key)
            if layout is not None and layout.varies:
                out[key] = batch_feature(layout, [unbatch_values(layout, v) for v in values],
                                         self.options.padding)
            elif isinstance(values[0], bytes):
                column = np.empty(len(values), dtype=object)
                column[:] = values
                out[key] = column
            else:
                out[key] = np.stack([np.asarray(v) for v in values])
        return out

    def _padded_images(self) -> list[str]:
        """Image features batched ``{"values", "lengths"}`` (sizes vary, not resized) with
        known channels and stored sizes: decoded straight into a zero-padded batch array
        when the batch's largest size is known first (see :meth:`padded_arrays`)."""
        if not self.options.decode or self._transform is not None:
            return []
        out = []
        for name in self._images:
            layout = self.layout[name]
            feature = self.schema[name]
            if (layout.varies and layout.padded_shape is None and layout.shape[2] is not None
                    and self.options.padding == "pad" and self.options.image_dtype == "uint8"
                    and getattr(feature, "dims", False)
                    and getattr(feature, "encoding", "raw") != "raw"):
                out.append(name)
        return out

    def padded_arrays(self, records: list[bytes] | RecordSlices, where: Callable[[int], Any]
                      ) -> dict[str, np.ndarray]:
        """Zero-filled ``[n, H, W, C]`` arrays for :attr:`padded_images`, ``H`` and ``W`` the
        largest sizes the records store (an image larger than its stored size is found when
        it is decoded, and its batch is then padded afresh)."""
        names = self.padded_images
        specs = [KeySpec(f"{n}/{d}", "int64", ()) for n in names for d in ("height", "width")]
        if not names or not len(records):
            return {}
        columns = parse_examples(records, specs, where=where, threads=self.threads)
        out = {}
        for name in names:
            height = int(columns[f"{name}/height"].values.max())
            width = int(columns[f"{name}/width"].values.max())
            channels = self.layout[name].shape[2]
            assert channels is not None
            # The sizes are claims: one past the pixel limit (or none) is not allocated on
            # trust; the images then decode on their own and are padded to what they hold.
            if not 0 < height * width <= MAX_IMAGE_PIXELS:
                continue
            out[name] = self._memory.take((len(records), height, width, channels))
        return out

    def batch_arrays(self, n: int) -> dict[str, np.ndarray]:
        """Empty ``[n, h, w, c]`` arrays for a batch's images to decode straight into (the
        features whose images have one shape in a plain array: resized to ``image_size``
        with known channels, or of the schema's size and kept as uint8), for
        :meth:`decode_columns` and :meth:`assemble_columns`."""
        if self._transform is not None:
            out = {}
            for name in self._images:
                layout = self.layout[name]
                shape = tuple(d for d in layout.shape if d is not None)
                if not layout.varies and len(shape) == 3 and layout.dtype is not None:
                    out[name] = self._memory.take((n, *shape), layout.dtype)
            return out
        if self.options.image_dtype != "uint8":
            return {}
        return {name: np.empty((n, *shape), np.uint8) for name, shape in self._fixed.items()
                if not self.layout[name].varies}

    def decode_columns(self, records: list[bytes] | RecordSlices, where: Callable[[int], Any],
                       classes: np.ndarray | None = None,
                       into: Mapping[str, np.ndarray] | None = None,
                       keys: RecordKeys | None = None) -> dict[str, Any]:
        """The records' values feature by feature (arrays for numbers, else per-record
        lists), through one columnar pass; ``where(i)`` names record ``i`` in errors;
        ``classes`` are the records' shard classes (needed when :attr:`shard_label` is
        set: a label taken from the shard); ``into``: rows of :meth:`batch_arrays`, one per
        record, the images are decoded into (that feature's value is then those rows);
        ``keys``: what the records' random crops and flips are keyed by."""
        placed: dict[str, dict[int, Placement]] = {image: {} for image in
                                                    self.layout.follows.values()}
        finish, into = self._finishers(into, keys, placed)
        try:
            columns = self.schema.decode_batch(
                records, features=self.features, where=where, context=DecodeContext(
                    min_size=self._min_size, sample_rate=self.options.sample_rate,
                    shard_classes=classes, out=into or {}, finish=finish or {},
                    strict=self.inferred_from > 0, threads=self.threads))
        except SchemaError as err:
            raise self._undescribed(err) from None
        for name, shape in self._fixed.items():
            _check_shapes(name, columns[name], shape, where)
        if self._transform is not None:
            for name, image in self.layout.follows.items():
                placements = placed[image]
                columns[name] = [self._transform.place(value, placements[i])
                                 for i, value in enumerate(columns[name])]
        if self._transform is None and self.options.image_dtype != "uint8":
            for name in self._images:
                columns[name] = [scale_pixels(image, self.options.image_dtype, self.options.mean,
                                              self.options.std) for image in columns[name]]
        return columns

    def _finishers(self, into: Mapping[str, np.ndarray] | None, keys: RecordKeys | None,
                   placed: dict[str, dict[int, Placement]]
                   ) -> tuple[dict[str, Finish] | None, Mapping[str, np.ndarray] | None]:
        """What each image goes through right after its decode (the transform, or a copy
        into its padded row), and the rows left to decode straight into."""
        if self._transform is not None:
            return {name: self._transform.finisher(None if into is None else into.get(name),
                                                   keys, placed.get(name))
                    for name in self._images}, into
        if into is not None and any(name in into for name in self.padded_images):
            finish = {name: pad_into(into[name]) for name in self.padded_images if name in into}
            return finish, {name: rows for name, rows in into.items() if name not in finish}
        return None, into

    def _undescribed(self, err: SchemaError) -> SchemaError:
        """``err``, with the way out when the schema came from a sample of the records."""
        if not self.inferred_from or err.reason.startswith("cannot decode"):
            return err
        return SchemaError(err.feature, f"{err.reason}; the schema was inferred from "
                           f"{self.inferred_from} sampled records: pass schema="
                           "tfrecordkit.infer_schema(files, sample=None) (every record), or "
                           "adopt the files", record=err.record)

    def decode_rows(self, records: list[bytes] | RecordSlices, where: Callable[[int], Any],
                    classes: np.ndarray | None = None, keys: RecordKeys | None = None
                    ) -> list[dict[str, Any]]:
        """Each record's values, as :meth:`decode_columns` finds them (not yet in the batch
        structure: what augmentations see)."""
        columns = self.decode_columns(records, where, classes, keys=keys)
        return [{name: columns[name][i] for name in self.features}
                for i in range(len(records))]

    def decode_one(self, record: bytes, source: str | int | None = None,
                   shard_class: int | None = None, keys: RecordKeys | None = None
                   ) -> dict[str, Any]:
        """One record's values in the batch structure without the batch dimension."""
        classes = None if shard_class is None else np.array([shard_class])
        row = self.decode_rows([record], lambda _: source, classes, keys)[0]
        out = {}
        for name in self.features:
            try:
                out[name] = record_values(self.layout[name], row[name], self.options.padding)
            except ValueError as err:
                raise SchemaError(name, str(err), record=source) from None
        return out

    def assemble_columns(self, parts: list[dict[str, Any]],
                         arrays: Mapping[str, np.ndarray] | None = None) -> dict[str, Any]:
        """Parts from :meth:`decode_columns` as one batch, as :meth:`assemble` makes it;
        ``arrays``: the :meth:`batch_arrays` the parts decoded into, in order (each one is
        the batch's value when every part's images filled their rows)."""
        batch: dict[str, Any] = {}
        for name in self.features:
            pieces = [p[name] for p in parts]
            layout = self.layout[name]
            whole = None if arrays is None else arrays.get(name)
            if whole is not None and layout.varies:  # padded in place, if every image fit
                values = [v for x in pieces for v in x]
                batch[name] = (_padded_in_place(whole, values, layout)
                               or self._batch(name, values))
            elif whole is not None and rows_of(whole, pieces):
                batch[name] = whole
            elif layout.kind == "numbers" and not layout.varies and all(
                    isinstance(x, np.ndarray) and x.ndim >= 1 for x in pieces):
                whole = pieces[0] if len(pieces) == 1 else np.concatenate(pieces)
                batch[name] = whole.astype(layout.dtype, copy=False)
            else:
                batch[name] = self._batch(name, [v for x in pieces for v in x])
        return batch

    def _batch(self, name: str, values: list[Any]) -> Any:
        try:
            return batch_feature(self.layout[name], values, self.options.padding)
        except ValueError as err:
            raise SchemaError(name, str(err)) from None

    def collate(self, records: list[dict[str, Any]]) -> dict[str, Any]:
        """Records from :meth:`decode_one` (e.g. grain's) as one batch, as every reader
        batches them; other keys (``__id``) are stacked."""
        batch = self.assemble([{name: unbatch_values(self.layout[name], r[name])
                                for name in self.features} for r in records])
        for key in records[0].keys() - batch.keys():
            batch[key] = np.stack([np.asarray(r[key]) for r in records])
        return batch

    def assemble(self, rows: list[Any]) -> dict[str, Any]:
        """Rows from :meth:`decode_rows` as a batch."""
        return {name: self._batch(name, [r[name] for r in rows]) for name in self.features}

    def decode_batch(self, records: list[bytes] | RecordSlices, where: Callable[[int], Any],
                     pool: Executor | None = None, classes: np.ndarray | None = None,
                     threads: int = 1, *, keys: RecordKeys | None = None) -> dict[str, Any]:
        """A batch of records; ``where(i)`` names record ``i`` in errors; ``classes`` as
        :meth:`decode_columns` takes them. With ``pool`` (of ``threads`` threads), heavy
        records (images, audio) decode in chunks on its threads."""
        if not self.options.decode:
            return self.raw_columns(records, where, classes)
        size = chunk_size(len(records), threads)
        if pool is None or not self.heavy or len(records) <= size:
            arrays = self.batch_arrays(len(records))
            return self.assemble_columns([self.decode_columns(records, where, classes, arrays,
                                                              keys)], arrays)
        starts = range(0, len(records), size)
        arrays = self.batch_arrays(len(records))
        parts = pool.map(lambda s: self.decode_columns(
            records[s : s + size], lambda i: where(s + i),
            None if classes is None else classes[s : s + size],
            {name: a[s : s + size] for name, a in arrays.items()},
            None if keys is None else keys.part(s, s + size)), starts)
        return self.assemble_columns(list(parts), arrays)


def _check_shapes(name: str, images: Any, shape: tuple[int, ...],
                  where: Callable[[int], Any]) -> None:
    """Every decoded image has ``shape`` (the schema's size and channels), else a
    SchemaError naming the first record that does not (an array of them does by
    construction)."""
    if isinstance(images, np.ndarray) and images.shape[1:] == shape:
        return
    for i, image in enumerate(images):
        if image.shape != shape:
            raise SchemaError(name, f"a {'x'.join(map(str, image.shape))} image; the schema's "
                                    f"size and channels say {'x'.join(map(str, shape))}",
                              record=where(i))


def _rows(column: Column) -> list[Any]:
    """A variable-length key's values, one array (or list of bytes) per record."""
    splits = column.row_splits.tolist()
    values = column.to_bytes() if column.offsets is not None else column.values
    return [values[a:b] for a, b in itertools.pairwise(splits)]


def _fixed(column: Column, n: int) -> Any:
    """A fixed-length key's batch: ``(n, *shape)`` numbers, or bytes in an object array."""
    if column.offsets is None:
        return column.values
    out = np.empty(len(column.offsets) - 1, dtype=object)
    out[:] = column.to_bytes()
    return out.reshape((n, *(column.spec.shape or ())))


def _parse_keys(records: Names[bytes] | RecordSlices, specs: Names[KeySpec],
                where: Callable[[int], Any], *, strict: bool = False,
                threads: int | None = None
                ) -> tuple[dict[str, Column], dict[str, list[Any]]]:
    """The records' keys by their specs: Example keys (and a SequenceExample's context) as
    columns of the columnar parse, SequenceExample feature lists per record."""
    plain = [spec for spec in specs if not spec.sequence]
    lists = [spec for spec in specs if spec.sequence]
    listed: Names[bytes] = (records.records() if isinstance(records, RecordSlices)
                            else records) if lists else ()
    return (parse_examples(records, plain, where=where, strict=strict, threads=threads),
            parse_feature_lists(listed, lists, where) if lists else {})
