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
from tfrecordkit.readers._decoding import RecordDecoder
from tfrecordkit.readers._plan import PathArg, ReadPlan
from tfrecordkit.readers.grid import (
    _label_of,
    _media_feature,
    _picture,
    _waveform,
    open_to_look,
)
from tfrecordkit.schema import SOURCE_FEATURE, Audio, Scalar
from tfrecordkit.store import Manifest, is_dataset_dir, load_manifest, verify_paths

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


def dataset_report(path: PathArg, split: str | None = None, *, sample: int = 256,
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
    read, records, decoder = open_to_look(path, split, storage_options)
    schema = read.schema
    total = len(records)
    ids = (np.sort(np.random.default_rng(seed).choice(total, min(sample, total),
                                                      replace=False))
           if total else np.zeros(0, np.int64))
    shard_classes = records.shard_classes(ids) if decoder.shard_label and total else None
    problem = ""
    try:
        rows = (decoder.decode_rows(records.get_many(ids), lambda i: records.where(int(ids[i])),
                                    shard_classes) if total else [])
    except TFRecordKitError as err:  # shown at the top of the page, never passed over
        logger.warning("report: the sample could not be read: %s", err)
        rows, problem = [], (f"<p class=\"bad\">The sampled records could not be read: "
                             f"{_text(err)}. Run <code>tfrecordkit verify</code>.</p>")
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
        _summary(read, manifest, split, len(rows)),
        _schema_section(read),
        _splits_section(manifest, read),
        _classes_section(manifest, split, rows, label, names),
        _distributions_section(rows, decoder, features),
        _examples_section(rows, read, features, label, names, classes=classes,
                          per_class=per_class),
    ]
    if verify:
        parts.append(_verify_section(path, storage_options))
    parts.append("</body></html>")
    return "\n".join(parts)


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
                rows.append(("converted from", made["source"]))
        if manifest.skipped_count:
            rows.append(("inputs skipped", f"{manifest.skipped_count:,}"))
    else:
        rows += [("files", f"{len(read.files):,}"),
                 ("note", "files without a manifest: the schema is inferred from records")]
    rows.append(("sampled", f"{sampled:,} records of split {split!r}"))
    return "<section id=\"summary\"><h2>Summary</h2>" + _table(None, rows) + "</section>"


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
    """A bar per class; each bar's group has the id ``class-<split>-<class id>``."""
    figure, axes = _figure(min(14.0, 2.5 + 0.22 * len(counts)), 3.0)
    bars = axes.bar(range(len(counts)), counts, color="#4a78c2", width=0.8)
    for class_id, bar in enumerate(bars):
        bar.set_gid(f"class-{split}-{class_id}")
    if len(counts) <= 40:
        axes.set_xticks(range(len(counts)), [_clip_name(n) for n in names], rotation=60,
                        ha="right", fontsize=8, parse_math=False)
    else:
        axes.set_xlabel("class id")
    axes.set_ylabel("records")
    caption = f"split {split!r}: {len(counts):,} classes, {sum(counts):,} records"
    axes.set_title(caption, parse_math=False)
    return (f"<figure class=\"chart\" data-split=\"{_text(split)}\">{_svg(figure)}"
            f"<figcaption>{_text(caption)}</figcaption></figure>")


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
    charts = []
    layout = decoder.layout
    for name in features:
        feature = layout[name]
        values = [r[name] for r in rows]
        if not values:
            continue
        if feature.kind == "image":
            shapes = [np.asarray(v).shape for v in values]
            charts.append(_histogram([s[0] for s in shapes], f"{name}: height", "pixels"))
            charts.append(_histogram([s[1] for s in shapes], f"{name}: width", "pixels"))
        elif feature.kind == "audio":
            seconds = [len(v["samples"]) / max(1, int(v["sample_rate"])) for v in values]
            charts.append(_histogram(seconds, f"{name}: duration", "seconds"))
        elif feature.kind == "tokens":
            charts.append(_histogram([len(v["ids"]) for v in values], f"{name}: tokens",
                                     "token ids"))
        elif feature.step_lengths:  # a feature list whose steps vary: steps, step lengths
            charts.append(_histogram([len(v) for v in values], f"{name}: steps", "steps"))
            charts.append(_histogram([len(step) for v in values for step in v],
                                     f"{name}: values per step", "values"))
        elif feature.varies:
            lengths = [np.shape(v)[feature.length_axes[0]] if feature.kind == "numbers"
                       else len(v) for v in values]
            charts.append(_histogram(lengths, f"{name}: length", "values"))
    if not charts:
        return ""
    return ("<section id=\"distributions\"><h2>Sizes in the sample</h2>" + "".join(charts)
            + "</section>")


def _tile(pixels_or_audio: Any, audio: bool, caption: str) -> str:
    picture = _waveform(pixels_or_audio) if audio else _picture(pixels_or_audio)
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
    audio = isinstance(read.schema.get(media), Audio)
    by_class: dict[int, list[dict[str, Any]]] = {}
    for row in rows:
        key = int(np.asarray(row[label]).reshape(-1)[0]) if label is not None else -1
        by_class.setdefault(key, []).append(row)
    chosen = sorted(by_class, key=lambda c: (-len(by_class[c]), c))[:classes]
    blocks = []
    for class_id in sorted(chosen):
        title = (names[class_id] if 0 <= class_id < len(names) else str(class_id)
                 ) if label is not None else "records"
        tiles = "".join(_tile(row[media], audio, row.get(SOURCE_FEATURE, ""))
                        for row in by_class[class_id][:per_class])
        blocks.append(f"<h3>{_text(title)}</h3><div class=\"tiles\">{tiles}</div>")
    shown = (f"{len(chosen)} of the {len(by_class)} classes in the sample"
             if label is not None else "the first sampled records")
    kind = "audio" if audio else "images"
    return (f"<section id=\"examples\"><h2>Example {kind} ({_text(media)})</h2>"
            f"<p>{shown}</p>" + "".join(blocks) + "</section>")


def _verify_section(path: PathArg, storage_options: dict[str, Any] | None) -> str:
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

