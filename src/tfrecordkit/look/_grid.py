"""Look at a dataset: a grid of its records' images (audio as waveforms), each tile captioned
with its label name, a short text and its input file, or a table of its first records when
it holds no media.

Needs Pillow (the ``image`` extra); imports no framework.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from tfrecordkit.errors import DatasetError, MissingDependencyError, OptionError
from tfrecordkit.readers import (
    DecodeOptions,
    FilesArg,
    ReadPlan,
    RecordDecoder,
    open_records,
    refuse_mix,
)
from tfrecordkit.schema import (
    SOURCE_FEATURE,
    Audio,
    Boxes,
    ClassLabel,
    Image,
    Scalar,
    Schema,
    Text,
)
from tfrecordkit.store import SplitArg, SplitRecords, split_text

__all__ = ["show_examples"]

TILE = 128  # pixels of a tile's picture area (square)
_CAPTION = 26  # pixels below it for two lines of caption
_BACKGROUND = (255, 255, 255)
_INK = (20, 20, 20)
_TABLE_ROWS = 12
_CELL = 24  # characters per table cell


def _pil() -> Any:
    try:
        from PIL import Image as PILImage
        from PIL import ImageDraw
    except ImportError:
        raise MissingDependencyError("PIL", "image", "show_examples") from None
    return PILImage, ImageDraw


def show_examples(path: FilesArg, split: SplitArg = "train", n: int = 16, *,
                  image: str | None = None, seed: int | None = None,
                  storage_options: dict[str, Any] | None = None) -> Any:
    """A ``PIL.Image.Image`` grid of ``n`` records' ``image`` feature (default: the first image
    feature; audio is drawn as waveforms): the first ``n`` records of the split, or a uniform
    sample of it seeded by ``seed``. Each tile is captioned with the label's class name and a
    short text feature when there are any, and the input it was converted from (its file,
    when the records carry it); images of any size are fitted into the tiles
    keeping their aspect. A dataset without images or audio gives a table of its records.
    Works on dataset directories (adopted ones too), TFRecord files / globs, and URLs.

    Raises:
        OptionError: ``n`` is not positive, or ``image`` names no image or audio feature.
        DatasetError: the split is empty.
    """
    if not isinstance(n, int) or isinstance(n, bool) or n < 1:
        raise OptionError(f"n must be a positive number of records; got {n!r}")
    refuse_mix(path)
    read, records, decoder = open_to_look(path, split_text(split), storage_options)
    origin = SOURCE_FEATURE in decoder.features
    total = len(records)
    if not total:
        raise DatasetError(f"{read.path}: split {split!r} has no records")
    count = min(n, total)
    ids = (np.arange(count) if seed is None else
           np.sort(np.random.default_rng(seed).choice(total, count, replace=False)))
    classes = records.shard_classes(ids) if decoder.shard_label else None
    rows = decoder.decode_rows(records.get_many(ids), lambda i: records.where(int(ids[i])),
                               classes)
    schema = read.schema
    features = [n for n in decoder.features if n != SOURCE_FEATURE]
    media = _media_feature(schema, features, image)
    if media is None:
        return _table(rows, decoder.features)
    label, names = _label_of(schema, features)
    text = _text_of(schema, features, exclude={media, label})
    captions = [_caption(row, label, names, text) + ([_tail(row[SOURCE_FEATURE], 22)]
                                                     if origin else [])
                for row in rows]
    is_audio = media in schema.of_kind(Audio)
    boxes = None if is_audio else box_feature(schema, features)
    box_names = () if boxes is None else schema.feature_as(boxes, Boxes).names
    tiles = [_waveform(row[media]) if is_audio else draw_boxes(
        _picture(row[media]), None if boxes is None else boxes_of(row[boxes]),
        None if boxes is None else box_captions(row[boxes], box_names)) for row in rows]
    return _grid(tiles, captions)


def box_feature(schema: Schema, names: list[str]) -> str | None:
    """The first :class:`~tfrecordkit.schema.Boxes` feature among ``names``, if any."""
    boxes = schema.of_kind(Boxes)
    return next((n for n in names if n in boxes), None)


def boxes_of(value: Any) -> np.ndarray:
    """A record's boxes (a ``Boxes`` value as a reader gives it) as ``[n, 4]`` (xmin, ymin,
    xmax, ymax, fractions of the image)."""
    boxes = value["boxes"]
    if isinstance(boxes, dict):  # padded: cut to its length
        boxes = boxes["values"][: int(np.asarray(boxes["lengths"]).reshape(-1)[0])]
    return np.asarray(boxes, np.float64).reshape(-1, 4)


def box_captions(value: Any, names: Sequence[str]) -> list[str]:
    """Each box's class as text: its name (``names`` index the ids), else its id."""
    labels = value["labels"]
    if isinstance(labels, dict):  # padded: cut to its length
        labels = labels["values"][: int(np.asarray(labels["lengths"]).reshape(-1)[0])]
    return [names[i] if 0 <= i < len(names) else str(i)
            for i in np.asarray(labels, np.int64).reshape(-1).tolist()]


def draw_boxes(picture: Any, boxes: np.ndarray | None,
               captions: Sequence[str] | None = None) -> Any:
    """``picture`` (a PIL image) with ``boxes`` (fractions of it) outlined in yellow, each
    with its caption (its class) at its top left (a box with a corner that is not a finite
    number is not drawn)."""
    if boxes is None or not len(boxes):
        return picture
    _, draw_module = _pil()
    picture = picture.convert("RGB") if picture.mode != "RGB" else picture
    draw = draw_module.Draw(picture)
    finite = np.isfinite(boxes).all(axis=1)
    texts = ([c for c, keep in zip(captions, finite.tolist(), strict=True) if keep]
             if captions is not None and len(captions) == len(boxes) else None)
    for k, (xmin, ymin, xmax, ymax) in enumerate(np.clip(boxes[finite], -1, 2).tolist()):
        xs = sorted((xmin * picture.width, xmax * picture.width))  # either way round
        ys = sorted((ymin * picture.height, ymax * picture.height))
        draw.rectangle([xs[0], ys[0], xs[1], ys[1]], outline=(255, 210, 0), width=2)
        if texts is not None:
            left, top = max(xs[0], 0), max(ys[0], 0)
            box = draw.textbbox((left + 2, top + 1), texts[k][:24])
            draw.rectangle(box, fill=(255, 210, 0))
            draw.text((left + 2, top + 1), texts[k][:24], fill=(0, 0, 0))
    return picture


def open_to_look(path: FilesArg, split: str, storage_options: dict[str, Any] | None
                 ) -> tuple[ReadPlan, SplitRecords, RecordDecoder]:
    """A split opened to be looked at: its records as they are (ragged), each with the input
    it came from when the records carry one."""
    read, records, decoder = open_records(path, split, DecodeOptions(padding="ragged"),
                                          storage_options=storage_options)
    if SOURCE_FEATURE in read.schema:
        decoder = RecordDecoder(read.schema, DecodeOptions(padding="ragged", provenance=True))
    return read, records, decoder


def _media_feature(schema: Schema, names: list[str], wanted: str | None) -> str | None:
    images, audio = schema.of_kind(Image), schema.of_kind(Audio)
    media = [n for n in names if n in images or n in audio]
    pictures = [n for n in media if n in images]
    if wanted is not None:
        if wanted not in media:
            raise OptionError(f"image={wanted!r} is not an image or audio feature; these are: "
                              f"{media}")
        return wanted
    found = pictures or media
    return found[0] if found else None


def _label_of(schema: Schema, names: list[str]) -> tuple[str | None, tuple[str, ...]]:
    labels = schema.of_kind(ClassLabel)
    for name in names:
        if name in labels:
            return name, tuple(labels[name].names)
    return None, ()


def _text_of(schema: Any, names: list[str], exclude: set[str | None]) -> str | None:
    if schema is None:
        return None
    texts = {*schema.of_kind(Text),
             *(n for n, f in schema.of_kind(Scalar).items() if f.dtype == "string")}
    return next((n for n in names if n not in exclude and n in texts), None)


def _caption(row: dict[str, Any], label: str | None, names: tuple[str, ...],
             text: str | None) -> list[str]:
    lines = []
    if label is not None:
        index = int(np.asarray(row[label]).reshape(-1)[0])
        lines.append(names[index] if 0 <= index < len(names) else str(index))
    if text is not None:
        value = row[text]
        value = value.get("text", "") if isinstance(value, dict) else value
        if isinstance(value, bytes):
            value = value.decode("utf-8", "replace")
        lines.append(str(value))
    return [_clip(line, 22) for line in lines[:2]]


def _tail(text: str, width: int) -> str:
    """``text``'s end, which names the file, when it is too long."""
    return text if len(text) <= width else "…" + text[-(width - 1):]


def _clip(text: str, width: int) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= width else text[: width - 1] + "…"


def _picture(pixels: Any) -> Any:
    """An image's pixels fitted into a tile, keeping their aspect."""
    pil, _ = _pil()
    array = np.asarray(pixels)
    if array.ndim == 3 and array.shape[2] == 1:
        array = array[:, :, 0]
    if array.ndim == 3 and array.shape[2] == 2:  # grey + alpha
        array = array[:, :, 0]
    picture = pil.fromarray(array.astype(np.uint8))
    height, width = array.shape[:2]
    scale = TILE / max(height, width, 1)
    size = (max(1, round(width * scale)), max(1, round(height * scale)))
    smooth = scale < 1  # upscale small images without blurring them
    resample = pil.Resampling.LANCZOS if smooth else pil.Resampling.NEAREST
    return picture.convert("RGB").resize(size, resample)


def _waveform(audio: Any) -> Any:
    """Audio samples drawn as a waveform thumbnail."""
    pil, draw_module = _pil()
    samples = np.asarray(audio["samples"] if isinstance(audio, dict) else audio, np.float32)
    samples = samples.reshape(len(samples), -1).mean(axis=1) if samples.ndim > 1 else samples
    canvas = pil.new("RGB", (TILE, TILE), (245, 245, 250))
    draw = draw_module.Draw(canvas)
    middle = TILE // 2
    draw.line([(0, middle), (TILE, middle)], fill=(200, 200, 210))
    if samples.size:
        peak = float(np.max(np.abs(samples))) or 1.0
        edges = np.linspace(0, samples.size, TILE + 1).astype(int)
        for x in range(TILE):
            part = samples[edges[x]: max(edges[x + 1], edges[x] + 1)] / peak
            low, high = float(part.min()), float(part.max())
            draw.line([(x, middle - high * (middle - 2)), (x, middle - low * (middle - 2))],
                      fill=(40, 90, 200))
    return canvas


def _grid(tiles: list[Any], captions: list[list[str]]) -> Any:
    pil, draw_module = _pil()
    columns = math.ceil(math.sqrt(len(tiles)))
    rows = math.ceil(len(tiles) / columns)
    lines = max((len(caption) for caption in captions), default=0)
    cell_w, cell_h = TILE + 8, TILE + max(_CAPTION, 2 + 12 * lines) + 8
    canvas = pil.new("RGB", (columns * cell_w, rows * cell_h), _BACKGROUND)
    draw = draw_module.Draw(canvas)
    for k, (tile, caption) in enumerate(zip(tiles, captions, strict=True)):
        left, top = (k % columns) * cell_w + 4, (k // columns) * cell_h + 4
        canvas.paste(tile, (left + (TILE - tile.width) // 2, top + (TILE - tile.height) // 2))
        for line_number, line in enumerate(caption):
            draw.text((left, top + TILE + 2 + 12 * line_number), line, fill=_INK)
    return canvas


def _table(rows: list[dict[str, Any]], names: list[str]) -> Any:
    """The first records as a text table, drawn."""
    pil, draw_module = _pil()
    shown = rows[:_TABLE_ROWS]
    lines = [" | ".join(_clip(n, _CELL).ljust(_CELL) for n in names)]
    lines.append("-" * len(lines[0]))
    for row in shown:
        lines.append(" | ".join(_clip(_value_text(row[n]), _CELL).ljust(_CELL)
                                for n in names))
    # Pillow's bitmap font: every character 6 px wide, so the columns line up (its default
    # font is proportional). It draws Latin-1 only: other text keeps the default font.
    from PIL import ImageFont

    latin = all(line.isascii() or _latin1(line) for line in lines)
    font = ImageFont.load_default_imagefont() if latin else ImageFont.load_default()
    width = 8 + 6 * max(len(line) for line in lines)
    canvas = pil.new("RGB", (width, 8 + 14 * len(lines)), _BACKGROUND)
    draw = draw_module.Draw(canvas)
    for k, line in enumerate(lines):
        draw.text((4, 4 + 14 * k), line, fill=_INK, font=font)
    return canvas


def _latin1(text: str) -> bool:
    try:
        text.encode("latin-1")
    except UnicodeEncodeError:
        return False
    return True


def _value_text(value: Any) -> str:
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    if isinstance(value, dict) and "text" in value:
        return str(value["text"])
    if isinstance(value, np.ndarray):
        return str(value.tolist() if value.size <= 8 else f"{value.dtype}{list(value.shape)}")
    return str(value)
