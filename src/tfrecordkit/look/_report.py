"""A dataset's report as one self-contained HTML file: its schema, splits and shards, the class
histogram of each split (a chart), the distribution of image sizes, sequence lengths and audio
durations, example images per class, and optionally the verify result.

Counts come from the manifest; distributions and examples from a seeded sample of records, so a
report of a large dataset takes seconds. Every string from the data is escaped; images are
inline (``data:`` URLs); the charts are inline SVG drawn by matplotlib (the ``report`` extra),
imported only here.
"""

from __future__ import annotations

import base64
import html
import io
import logging
import re
import statistics
from collections import Counter
from collections.abc import Collection, Iterable, Sequence
from typing import Any

import numpy as np

from tfrecordkit.errors import MissingDependencyError, OptionError, TFRecordKitError
from tfrecordkit.format import Storage
from tfrecordkit.look._grid import (
    _label_of,
    _media_feature,
    _picture,
    _waveform,
    box_captions,
    box_feature,
    boxes_of,
    draw_boxes,
    open_to_look,
)
from tfrecordkit.readers import FilesArg, ReadPlan, RecordDecoder
from tfrecordkit.schema import SOURCE_FEATURE, Audio, Boxes, ClassLabel, Scalar, Schema
from tfrecordkit.schema import Sequence as ListOf
from tfrecordkit.store import (
    Manifest,
    SplitArg,
    find_duplicates,
    is_dataset_dir,
    load_manifest,
    split_text,
    verify_paths,
)

__all__ = ["dataset_report"]

logger = logging.getLogger(__name__)

#: Keys taken for the class label of files without a manifest (integers).
_LABEL_KEYS = ("label", "labels", "class", "target", "y")

_STYLE = """
body { font: 14px/1.4 system-ui, sans-serif; margin: 24px; color: #222; max-width: 1200px; }
h1 { font-size: 20px; word-break: break-all; } h2 { font-size: 17px; margin-top: 28px; }
table { border-collapse: collapse; margin: 8px 0; }
td, th { border: 1px solid #ccc; padding: 3px 8px; text-align: left; vertical-align: top; }
td.n { text-align: right; font-variant-numeric: tabular-nums; }
figure { margin: 6px; display: inline-block; vertical-align: top; }
figcaption { font-size: 12px; } .tiles figcaption { max-width: 128px; overflow-wrap: anywhere; }
.tiles { display: flex; flex-wrap: wrap; } .ok { color: #070; } .bad { color: #b00; }
.chart svg { max-width: 100%; height: auto; }
"""


def dataset_report(path: FilesArg, split: SplitArg | None = None, *, sample: int = 256,
                   classes: int = 12, per_class: int = 6, seed: int = 0, verify: bool = False,
                   storage_options: dict[str, Any] | None = None) -> str:
    """One self-contained HTML page describing the dataset at ``path`` (a dataset directory,
    adopted ones too, or TFRecord files / a glob; local or a URL).

    Args:
        split: the split whose records are sampled (default: ``train``, else the first);
            the class histograms cover every split.
        sample: how many records (a seeded uniform sample) the distributions and examples
            come from.
        classes: show example images of at most this many classes (the most frequent in the
            sample).
        per_class: example images per class.
        seed: seeds the sample.
        verify: also check every record's CRCs and the shards against the manifest (reads
            the whole dataset).

    Raises:
        OptionError: a count is not positive.
        MissingDependencyError: matplotlib (extra ``report``) or Pillow is not installed.
    """
    for name, value in (("sample", sample), ("classes", classes), ("per_class", per_class)):
        if not isinstance(value, int) or isinstance(value, bool) or value < 1:
            raise OptionError(f"{name} must be a positive number; got {value!r}")
    _matplotlib()
    storage = Storage.of(path, storage_options)
    manifest = (load_manifest(path, storage=storage)  # type: ignore[arg-type]
                if is_dataset_dir(path, storage) else None)
    if split is None:
        split = ("train" if manifest is None or "train" in manifest.splits
                 else sorted(manifest.splits)[0])
    read, records, decoder = open_to_look(path, split_text(split), storage_options)
    schema = read.schema
    rows, problem = _sampled_rows(records, decoder, sample, seed)
    features = [n for n in decoder.features if n != SOURCE_FEATURE]
    label, names = _label_of(schema, features)
    if label is None and manifest is None:  # files without a manifest: a key named like one
        label = next((name for name in features if name in _LABEL_KEYS
                      and schema[name] == Scalar("int64")), None)
    title = _text(read.path)
    parts = [
        f"<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\">"
        f"<title>tfrecordkit report: {title}</title><style>{_STYLE}</style></head><body>",
        f"<h1>{title}</h1>",
        problem,
        _summary(read, manifest, split_text(split), len(rows)),
        _schema_section(read),
        _splits_section(manifest, read),
        _classes_section(manifest, split_text(split), rows, label, names),
        _objects_section(rows, schema, features, label),
        _boxes_section(rows, schema, features),
        _columns_section(rows, decoder, features),
        _distributions_section(rows, decoder, features),
        _examples_section(rows, read, features, label, names, classes=classes,
                          per_class=per_class),
    ]
    parts.append(_duplicates_section(path, manifest, storage_options, verify))
    if verify:
        parts.append(_verify_section(path, storage_options))
    parts.append("</body></html>")
    return "\n".join(parts)


def _sampled_rows(records: Any, decoder: RecordDecoder, sample: int, seed: int
                  ) -> tuple[list[dict[str, Any]], str]:
    """A seeded uniform sample of the split's records, decoded; or none and the problem
    that stopped it, said at the top of the page (never passed over)."""
    total = len(records)
    if not total:
        return [], ""
    ids = np.sort(np.random.default_rng(seed).choice(total, min(sample, total), replace=False))
    shard_classes = records.shard_classes(ids) if decoder.shard_label else None
    try:
        return decoder.decode_rows(records.get_many(ids), lambda i: records.where(int(ids[i])),
                                   shard_classes), ""
    except TFRecordKitError as err:
        logger.warning("report: the sample could not be read: %s", err)
        return [], (f"<p class=\"bad\">The sampled records could not be read: "
                    f"{_text(err)}. Run <code>tfrecordkit verify</code>.</p>")


def _matplotlib() -> Any:
    try:
        import matplotlib
    except ImportError:
        raise MissingDependencyError("matplotlib", "report", "dataset_report") from None
    return matplotlib


def _text(value: Any) -> str:
    """``value`` as HTML text (every string from the data goes through here)."""
    if isinstance(value, bytes):
        value = value.decode("utf-8", "replace")
    return html.escape(str(value), quote=True)


def _table(header: Sequence[str] | None, rows: Iterable[Sequence[Any]],
           numeric: Collection[int] = ()) -> str:
    head = "".join(f"<th>{_text(h)}</th>" for h in header or ())
    body = "".join(
        "<tr>" + "".join(f"<td class=\"n\">{_text(c)}</td>" if k in numeric
                         else f"<td>{_text(c)}</td>" for k, c in enumerate(row)) + "</tr>"
        for row in rows)
    return f"<table>{f'<tr>{head}</tr>' if head else ''}{body}</table>"


def _megabytes(nbytes: float) -> str:
    return f"{nbytes / 1e6:,.2f}"


def _summary(read: ReadPlan, manifest: Manifest | None, split: str, sampled: int) -> str:
    rows: list[tuple[str, Any]] = []
    if manifest is not None:
        rows += [("records", f"{sum(s.records for s in manifest.splits.values()):,}"),
                 ("size (MB)", _megabytes(sum(s.bytes for s in manifest.splits.values()))),
                 ("splits", ", ".join(sorted(manifest.splits))),
                 ("layout", manifest.layout), ("compression", manifest.compression or "none"),
                 ("label feature", manifest.label_feature or "none")]
        made = manifest.created_by
        if made:
            rows.append(("written by", f"{made.get('tool', '?')} {made.get('version', '')}"))
            if "source" in made:
                rows.append(("converted from", _relative_source(str(made["source"]))))
        if manifest.skipped_count:
            rows.append(("inputs skipped", f"{manifest.skipped_count:,}"))
    else:
        rows += [("files", f"{len(read.files):,}"),
                 ("note", "files without a manifest: the schema is inferred from records")]
    rows.append(("sampled", f"{sampled:,} records of split {split!r}"))
    return "<section id=\"summary\"><h2>Summary</h2>" + _table(None, rows) + "</section>"


def _relative_source(source: str) -> str:
    """Where a dataset was converted from, without the converting machine's directories
    (``image-folder:/home/me/data/photos`` -> ``image-folder:photos``); URLs stay whole."""
    return _LOCAL_PATH.sub(lambda m: m.group(1) + m.group(2).rstrip("/").rsplit("/", 1)[-1],
                           source)


# A local absolute path (after the start, a space, a comma or "kind:"), not a URL's "//".
_LOCAL_PATH = re.compile(r"(^|[\s,;]|[\w-]:)(~?/(?!/)[^\s,;]*)")


def _schema_section(read: ReadPlan) -> str:
    rows = [(name, type(f).__name__, repr(f)) for name, f in read.schema.items()]
    return ("<section id=\"schema\"><h2>Schema</h2>"
            + _table(("feature", "kind", "details"), rows) + "</section>")


def _splits_section(manifest: Manifest | None, read: ReadPlan) -> str:
    if manifest is None:
        return ""
    rows, shards = [], []
    for name in sorted(manifest.splits):
        info = manifest.splits[name]
        sizes = [s.bytes for s in info.shards] or [0]
        rows.append((name, f"{info.records:,}", _megabytes(info.bytes), len(info.shards),
                     _megabytes(min(sizes)), _megabytes(statistics.median(sizes)),
                     _megabytes(max(sizes))))
        shards += [(name, s.file, f"{s.records:,}", _megabytes(s.bytes),
                    "" if s.class_id is None else s.class_id) for s in info.shards]
    listed = shards[:60]
    more = (f"<p>… and {len(shards) - len(listed):,} more shards (see dataset.json)</p>"
            if len(shards) > len(listed) else "")
    return ("<section id=\"splits\"><h2>Splits and shards</h2>"
            + _table(("split", "records", "MB", "shards", "smallest shard (MB)",
                      "median shard (MB)", "largest shard (MB)"), rows, {1, 2, 3, 4, 5, 6})
            + "<details><summary>shards</summary>"
            + _table(("split", "file", "records", "MB", "class id"), listed, {2, 3})
            + more + "</details></section>")


def _svg(figure: Any) -> str:
    """A matplotlib figure as inline SVG: text drawn as paths, comments (which repeat the
    text) dropped, no XML prolog."""
    matplotlib = _matplotlib()
    buffer = io.StringIO()
    with matplotlib.rc_context({"svg.fonttype": "path", "svg.hashsalt": "tfrecordkit"}):
        figure.savefig(buffer, format="svg", metadata={"Date": None}, bbox_inches="tight")
    svg = buffer.getvalue()
    svg = svg[svg.index("<svg"):]
    return re.sub(r"<!--.*?-->", "", svg, flags=re.DOTALL)


def _figure(width: float, height: float) -> tuple[Any, Any]:
    _matplotlib()
    from matplotlib.figure import Figure

    figure = Figure(figsize=(width, height), dpi=96)
    return figure, figure.subplots()


def _class_chart(counts: list[int], names: Sequence[str], split: str) -> str:
    """A bar per class (each bar's group has the id ``class-<split>-<class id>``); with many
    classes, the largest ones as bars and the rest summed up, so the page stays small."""
    order = list(range(len(counts)))
    shown = order if len(counts) <= _ALL_BARS else sorted(
        order, key=lambda c: (-counts[c], c))[:_TOP_CLASSES]
    figure, axes = _figure(min(14.0, 2.5 + 0.22 * len(shown)), 3.0)
    bars = axes.bar(range(len(shown)), [counts[c] for c in shown], color="#4a78c2", width=0.8)
    for class_id, bar in zip(shown, bars, strict=True):
        bar.set_gid(f"class-{split}-{class_id}")
    if len(shown) <= 40 or len(shown) < len(counts):
        axes.set_xticks(range(len(shown)), [_clip_name(names[c]) for c in shown],
                        rotation=60, ha="right", fontsize=8 if len(shown) <= 40 else 6,
                        parse_math=False)
    else:
        axes.set_xlabel("class id")
    axes.set_ylabel("records")
    caption = f"split {split!r}: {len(counts):,} classes, {sum(counts):,} records"
    if len(shown) < len(counts):
        rest = sorted(counts[c] for c in order if c not in set(shown))
        caption += (f"; the {len(shown)} largest shown, the other {len(rest):,} hold "
                    f"{rest[0]:,} to {rest[-1]:,} records each (median "
                    f"{rest[len(rest) // 2]:,})")
    axes.set_title(caption if len(caption) < 90 else caption.split(";")[0],
                   parse_math=False)
    chart = (f"<figure class=\"chart\" data-split=\"{_text(split)}\">{_svg(figure)}"
             f"<figcaption>{_text(caption)}</figcaption></figure>")
    if len(shown) < len(counts):
        chart += _histogram([float(c) for c in counts], f"split {split!r}",
                            "records per class")
    return chart


_ALL_BARS = 200  # classes drawn one bar each; more: the largest and a summary of the rest
_TOP_CLASSES = 50


def _clip_name(name: str) -> str:
    return name if len(name) <= 24 else name[:23] + "…"


def _classes_section(manifest: Manifest | None, split: str, rows: list[dict[str, Any]],
                     label: str | None, names: tuple[str, ...]) -> str:
    if label is None:
        return ""
    charts, note = [], ""
    if manifest is not None and manifest.label_feature is not None:
        for name in sorted(manifest.splits):
            found = {int(k): v for k, v in manifest.splits[name].class_counts.items()}
            counts = [found.get(c, 0) for c in range(len(names))]
            charts.append(_class_chart(counts, names, name))
    else:  # no manifest: what the sample holds
        seen = Counter(int(np.asarray(r[label]).reshape(-1)[0]) for r in rows)
        size = max([len(names), *(c + 1 for c in seen)]) if seen or names else 0
        charts.append(_class_chart([seen.get(c, 0) for c in range(size)],
                                   [*names, *map(str, range(len(names), size))], split))
        note = f"<p>From the {len(rows):,} sampled records (files without a manifest).</p>"
    return ("<section id=\"classes\"><h2>Classes</h2>" + note + "".join(charts)
            + "</section>")


def _objects_section(rows: list[dict[str, Any]], schema: Schema, features: list[str],
                     label: str | None) -> str:
    """Classes of the objects in each record (detection data: a
    :class:`~tfrecordkit.schema.Boxes` feature's labels, or a list of class names or ids
    named like one, e.g. the Object Detection API's ``image/object/class/text``), counted
    over the sample: objects per class, the most frequent first."""
    found = _object_classes(rows, schema, features, label) if rows else None
    if found is None:
        return ""
    key, counts = found
    ranked = counts.most_common()
    shown = ranked[:_TOP_CLASSES]
    figure, axes = _figure(min(14.0, 2.5 + 0.22 * len(shown)), 3.0)
    axes.bar(range(len(shown)), [n for _, n in shown], color="#4a78c2", width=0.8)
    axes.set_xticks(range(len(shown)), [_clip_name(c) for c, _ in shown], rotation=60,
                    ha="right", fontsize=8, parse_math=False)
    axes.set_ylabel("objects")
    caption = (f"{key}: {sum(counts.values()):,} objects of {len(counts):,} classes in "
               f"{len(rows):,} sampled records")
    if len(shown) < len(ranked):
        caption += f" (the {len(shown)} most frequent shown)"
    axes.set_title(caption if len(caption) < 90 else key, parse_math=False)
    return ("<section id=\"objects\"><h2>Objects per class</h2><figure class=\"chart\">"
            f"{_svg(figure)}<figcaption>{_text(caption)}</figcaption></figure></section>")


def _object_classes(rows: list[dict[str, Any]], schema: Schema, features: list[str],
                    label: str | None) -> tuple[str, Counter[str]] | None:
    """The feature naming each record's objects' classes, and the objects per class: a list
    of names (or ids) named like classes, else a ``Boxes`` feature's labels (its names)."""
    sequences = schema.of_kind(ListOf)
    lists = {n: sequences[n] for n in features
             if n != label and _CLASS_KEY.search(n) and n in sequences}
    counts: Counter[str] = Counter()
    boxes = box_feature(schema, features)
    if lists:
        # Names over ids when a record gives both (class/text beside class/label).
        key = next((k for k, f in lists.items() if f.feature == Scalar("string")),
                   next(iter(lists)))
        for row in rows:
            value = row[key]
            items = (value["values"][: int(np.asarray(value["lengths"]).reshape(-1)[0])]
                     if isinstance(value, dict) else value)
            counts.update(v.decode("utf-8", "replace") if isinstance(v, bytes) else str(v)
                          for v in np.asarray(items, dtype=object).reshape(-1).tolist())
    elif boxes is not None:
        key = boxes
        names = schema.feature_as(key, Boxes).names
        for row in rows:
            ids = np.asarray(row[key]["labels"], np.int64).reshape(-1).tolist()
            counts.update(names[i] if 0 <= i < len(names) else str(i) for i in ids)
    else:
        return None
    return (key, counts) if counts else None


_CLASS_KEY = re.compile(r"(^|/)(class|label|category)(es|s)?(/(text|label|name|id))?$")


def _columns_section(rows: list[dict[str, Any]], decoder: RecordDecoder,
                     features: list[str]) -> str:
    """For features of one value per record (a table's columns): numbers' range and
    median, strings' most frequent values, each with how many distinct values the sample
    holds; then the first sampled rows."""
    layout = decoder.layout
    columns = [n for n in features if layout[n].kind in ("numbers", "bytes", "text")
               and layout[n].shape == () and not layout[n].varies]
    if not columns or not rows:
        return ""
    stats = []
    # Class labels show their names, in the statistics and the rows (not their ids).
    named = {n: f.names for n, f in decoder.schema.of_kind(ClassLabel).items()
             if n in columns and f.names}
    rows = [{**r, **{n: _class_name(r[n], named[n]) for n in named}} for r in rows]
    for name in columns:
        stats.append(_column_stats(name, [r[name] for r in rows],
                                   numbers=layout[name].kind == "numbers" and name not in named))
    example = [tuple(_short(r[n]) for n in columns) for r in rows[:_EXAMPLE_ROWS]]
    return ("<section id=\"columns\"><h2>Columns in the sample</h2>"
            + _table(("column", "distinct", "min", "median", "max", "most frequent"),
                     stats, {1, 2, 3, 4})
            + f"<h3>The first {len(example)} sampled rows</h3>"
            + _table(tuple(columns), example) + "</section>")


_EXAMPLE_ROWS = 8


def _column_stats(name: str, values: list[Any], *, numbers: bool) -> tuple[str, ...]:
    """A column's row of statistics: distinct values, then range and median (numbers) or
    the most frequent values (anything else)."""
    distinct = len({v if not isinstance(v, np.ndarray) else v.item() for v in values})
    if numbers:
        array = np.asarray(values, dtype=np.float64)
        return (name, f"{distinct:,}", f"{array.min():g}", f"{np.median(array):g}",
                f"{array.max():g}", "")
    top = Counter(_short(v) for v in values).most_common(3)
    return (name, f"{distinct:,}", "", "", "", ", ".join(f"{v} ({n})" for v, n in top))


def _class_name(value: Any, names: Sequence[str]) -> str:
    """A class id as its name (the id itself when outside the names)."""
    index = int(np.asarray(value).reshape(-1)[0])
    return names[index] if 0 <= index < len(names) else str(index)


def _short(value: Any) -> str:
    """A value as short text for a table cell."""
    if isinstance(value, bytes):
        value = value.decode("utf-8", "replace")
    if isinstance(value, np.generic):
        value = value.item()
    text = str(value)
    return text if len(text) <= 40 else text[:39] + "…"


def _histogram(values: Sequence[float], title: str, xlabel: str) -> str:
    distinct = len(set(values))
    if distinct == 1:
        return f"<p>{_text(title)}: {_text(values[0])} {_text(xlabel)} in every sampled record</p>"
    figure, axes = _figure(4.2, 2.6)
    axes.hist(values, bins=min(30, max(1, distinct)), color="#4a78c2")
    axes.set_title(title, fontsize=10, parse_math=False)
    axes.set_xlabel(xlabel, parse_math=False)
    axes.set_ylabel("records")
    caption = f"{title} ({xlabel}): {min(values):g} to {max(values):g}"
    return (f"<figure class=\"chart\">{_svg(figure)}<figcaption>{_text(caption)}"
            "</figcaption></figure>")


def _distributions_section(rows: list[dict[str, Any]], decoder: RecordDecoder,
                           features: list[str]) -> str:
    """Sizes in the sample, one chart per distinct distribution: keys whose values have the
    same sizes in every record (a box's four coordinate lists) share one chart."""
    found: dict[tuple[str, str, tuple[float, ...]], list[str]] = {}
    for name in features:
        values = [r[name] for r in rows]
        if values:
            for what, unit, sizes in _sizes_of(decoder.layout[name], values):
                found.setdefault((what, unit, tuple(sizes)), []).append(name)
    charts = [_histogram(list(values), f"{_names(names)}: {what}", unit)
              for (what, unit, values), names in found.items()]
    if not charts:
        return ""
    return ("<section id=\"distributions\"><h2>Sizes in the sample</h2>" + "".join(charts)
            + "</section>")


def _sizes_of(feature: Any, values: list[Any]) -> list[tuple[str, str, list[float]]]:
    """A feature's sizes in the sampled records: ``(what, unit, one size per record)``."""
    if feature.kind == "image":
        shapes = [np.asarray(v).shape for v in values]
        return [("height", "pixels", [s[0] for s in shapes]),
                ("width", "pixels", [s[1] for s in shapes])]
    if feature.kind == "audio":
        return [("duration", "seconds",
                 [len(v["samples"]) / max(1, int(v["sample_rate"])) for v in values])]
    if feature.kind == "tokens":
        return [("tokens", "token ids", [len(v["ids"]) for v in values])]
    if feature.parts is not None:  # e.g. Boxes: how many objects (the parts' length)
        part = next(k for k, p in feature.parts.items() if p.varies)
        return [("length", "values", [len(np.asarray(v[part])) for v in values])]
    if feature.step_lengths:  # a feature list whose steps vary: steps, step lengths
        return [("steps", "steps", [len(v) for v in values]),
                ("values per step", "values", [len(step) for v in values for step in v])]
    if feature.varies:
        return [("length", "values",
                 [np.shape(v)[feature.length_axes[0]] if feature.kind == "numbers" else len(v)
                  for v in values])]
    return []


def _names(names: list[str]) -> str:
    """Feature names for a chart's title: all of them, or the first few and a count."""
    return ", ".join(names) if len(names) <= 3 else (
        f"{', '.join(names[:2])} and {len(names) - 2} more with the same sizes")


def _boxes_section(rows: list[dict[str, Any]], schema: Schema, features: list[str]) -> str:
    """Box statistics over the sample (of the first :class:`~tfrecordkit.schema.Boxes`
    feature): counts per record, sizes, aspect, and the boxes that lie outside the image or
    have their corners the wrong way round."""
    name = box_feature(schema, features)
    if name is None or not rows:
        return ""
    boxes = [boxes_of(row[name]) for row in rows]
    every = np.concatenate(boxes) if boxes else np.zeros((0, 4))
    if not len(every):
        return ""
    total, finite = len(every), np.isfinite(every).all(axis=1)
    infinite, every = int((~finite).sum()), every[finite]
    if not len(every):
        every = np.zeros((1, 4))  # statistics of nothing: every box had a corner not finite
    width, height = every[:, 2] - every[:, 0], every[:, 3] - every[:, 1]
    outside = int(((every < 0) | (every > 1)).any(axis=1).sum())
    flipped = int(((width < 0) | (height < 0)).sum())
    area = np.clip(width, 0, None) * np.clip(height, 0, None)
    aspect = width[(width > 0) & (height > 0)] / height[(width > 0) & (height > 0)]
    rows_ = [("boxes", f"{total:,} in {len(rows):,} sampled records"),
             ("per record", f"{min(map(len, boxes))} to {max(map(len, boxes))}, median "
                            f"{np.median([len(b) for b in boxes]):g}"),
             ("width (of the image's)", f"{width.min():.3g} to {width.max():.3g}"),
             ("height (of the image's)", f"{height.min():.3g} to {height.max():.3g}"),
             ("area (of the image's)", f"{area.min():.3g} to {area.max():.3g}, median "
                                       f"{np.median(area):.3g}"),
             ("aspect (width / height)", f"{aspect.min():.3g} to {aspect.max():.3g}"
              if aspect.size else "—"),
             ("outside the image (a corner < 0 or > 1)", f"{outside:,}"),
             ("xmin > xmax or ymin > ymax", f"{flipped:,}"),
             ("a corner not a finite number (left out above)", f"{infinite:,}")]
    return ("<section id=\"boxes\"><h2>Boxes</h2><p>" + _text(name)
            + "</p>" + _table(None, rows_) + _histogram(
                [float(a) for a in area], "box area", "fraction of the image") + "</section>")


def _tile(pixels_or_audio: Any, audio: bool, caption: str,
          boxes: np.ndarray | None = None, box_names: Sequence[str] | None = None) -> str:
    picture = (_waveform(pixels_or_audio) if audio
               else draw_boxes(_picture(pixels_or_audio), boxes, box_names))
    buffer = io.BytesIO()
    picture.save(buffer, format="PNG")
    data = base64.b64encode(buffer.getvalue()).decode("ascii")
    text = _text(caption)
    return (f"<figure><img src=\"data:image/png;base64,{data}\" width=\"{picture.width}\" "
            f"height=\"{picture.height}\" alt=\"{text}\"><figcaption>{text}</figcaption>"
            "</figure>")


def _examples_section(rows: list[dict[str, Any]], read: ReadPlan, features: list[str],
                      label: str | None, names: tuple[str, ...], *, classes: int,
                      per_class: int) -> str:
    media = _media_feature(read.schema, features, None)
    if media is None or not rows:
        return ""
    audio = media in read.schema.of_kind(Audio)
    boxes = box_feature(read.schema, features) if not audio else None
    box_names = () if boxes is None else read.schema.feature_as(boxes, Boxes).names
    by_class: dict[int, list[dict[str, Any]]] = {}
    for row in rows:
        key = int(np.asarray(row[label]).reshape(-1)[0]) if label is not None else -1
        by_class.setdefault(key, []).append(row)
    chosen = sorted(by_class, key=lambda c: (-len(by_class[c]), c))[:classes]
    blocks = []
    for class_id in sorted(chosen):
        title = (names[class_id] if 0 <= class_id < len(names) else str(class_id)
                 ) if label is not None else "records"
        tiles = "".join(_tile(row[media], audio, _caption(row, boxes, box_names),
                              None if boxes is None else boxes_of(row[boxes]),
                              None if boxes is None else box_captions(row[boxes], box_names))
                        for row in by_class[class_id][:per_class])
        blocks.append(f"<h3>{_text(title)}</h3><div class=\"tiles\">{tiles}</div>")
    shown = (f"{len(chosen)} of the {len(by_class)} classes in the sample"
             if label is not None else "the first sampled records")
    kind = "audio" if audio else "images"
    return (f"<section id=\"examples\"><h2>Example {kind} ({_text(media)})</h2>"
            f"<p>{shown}</p>" + "".join(blocks) + "</section>")


def _caption(row: dict[str, Any], boxes: str | None, names: Sequence[str]) -> str:
    """A tile's words: the record's input, and the classes of its boxes with their counts
    (what the picture draws, said in text too)."""
    source = row.get(SOURCE_FEATURE, "")
    text = source.decode("utf-8", "replace") if isinstance(source, bytes) else str(source)
    if boxes is None:
        return text
    counts = Counter(box_captions(row[boxes], names))
    said = ", ".join(f"{name} ×{n}" if n > 1 else name for name, n in sorted(
        counts.items(), key=lambda kv: (-kv[1], kv[0]))) or "none"
    return f"{text} — boxes: {said}" if text else f"boxes: {said}"


def _duplicates_section(path: FilesArg, manifest: Manifest | None,
                        storage_options: dict[str, Any] | None, verify: bool) -> str:
    """Records stored more than once, within a split or across splits: from the shards'
    digests (a small read), or with ``verify`` from the records of shards without them."""
    if manifest is None:
        return ""
    shards = [s for split in manifest.splits.values() for s in split.shards]
    if not verify and not all(s.digests for s in shards):
        return ("<section id=\"duplicates\"><h2>Duplicates</h2><p>Some shards have no record "
                "digests (adopted or older files): <code>--verify</code> reads their records "
                "to find equal ones.</p></section>")
    found = find_duplicates(path if isinstance(path, str) else str(path),
                            storage_options=storage_options)
    if not found.group_count:
        return (f"<section id=\"duplicates\"><h2>Duplicates</h2><p class=\"ok\">None: "
                f"{found.records:,} records, each stored once.</p></section>")
    rows = [("across " + "/".join(sorted({r["split"] for r in group}))
             if len({r["split"] for r in group}) > 1 else group[0]["split"],
             ", ".join(found.where(r) for r in group[:4])
             + (f" and {len(group) - 4} more" if len(group) > 4 else ""))
            for group in found.groups[:20]]
    verdict = (f"<p class=\"bad\">{found.group_count:,} group(s) of equal records among "
               f"{found.records:,} ({found.across_count:,} across splits: the same record in "
               f"training and evaluation data; {found.extra_records:,} beyond the first of "
               "each).</p>")
    return (f"<section id=\"duplicates\"><h2>Duplicates</h2>{verdict}"
            f"{_table(('where', 'records (the input, or file#index)'), rows)}</section>")


def _verify_section(path: FilesArg, storage_options: dict[str, Any] | None) -> str:
    where = path if isinstance(path, str) else str(path)
    result = verify_paths([where], storage_options)
    records = sum(f["records"] for f in result.files)
    if result.ok:
        verdict = (f"<p class=\"ok\">OK: {len(result.files):,} files, {records:,} records, "
                   "every CRC checked")
        verdict += " and the shards match the manifest.</p>"
    else:
        problems = list(result.problems)
        verdict = (f"<p class=\"bad\">{len(problems):,} problem(s) in {len(result.files):,} "
                   f"files:</p><ul>" + "".join(f"<li>{_text(p)}</li>" for p in problems[:200])
                   + "</ul>")
    return f"<section id=\"verify\"><h2>Verify</h2>{verdict}</section>"

