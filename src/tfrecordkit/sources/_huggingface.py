"""Hugging Face ``datasets`` as a source: a ``Dataset``, ``IterableDataset`` or a dict of them
(splits), its features mapped to a schema, its rows streamed into records.

Images and audio keep the bytes HF holds (read without decoding); nested dicts are flattened
into ``outer/inner`` features, as TFDS flattens them; a list of dicts becomes one sequence
per inner key. ``datasets`` is imported only by callers that pass one of its objects.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable, Iterator, Mapping
from itertools import islice
from typing import Any

import numpy as np

from tfrecordkit.codecs import sniff_bytes
from tfrecordkit.errors import SourceError
from tfrecordkit.schema import (
    Audio,
    ClassLabel,
    Feature,
    Image,
    Scalar,
    Schema,
    Sequence,
    Tensor,
    Text,
)
from tfrecordkit.sources._media import (
    DEFAULT_MAX_IMAGE_PIXELS,
    ImageCheck,
    ImageOptions,
    Resize,
    audio_from_bytes,
)
from tfrecordkit.sources._protocol import SourceItem

__all__ = ["HuggingFace", "is_huggingface"]

_INTS = ("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32")
_SAMPLE_ROWS = 64  # rows looked at to choose an audio encoding

Convert = Callable[[Any, str], Any]  # (HF value, where) -> our value


def is_huggingface(obj: object) -> bool:
    """Whether ``obj`` is a ``datasets`` Dataset, IterableDataset or a dict of them."""
    module = type(obj).__module__ or ""
    return module.startswith("datasets.") and (hasattr(obj, "features")
                                               or isinstance(obj, Mapping))


class HuggingFace:
    """Rows of a Hugging Face dataset as records.

    Args:
        dataset: a ``datasets.Dataset`` or ``IterableDataset``, or a ``DatasetDict`` /
            ``IterableDatasetDict`` (its keys are the splits).
        provenance: store each row's place (``split[row]``, rows counted from 0) with its
            record (``"__source"``).

    Feature mapping: ``Image`` -> :class:`Image` (HF's bytes kept; JPEG/PNG as they are,
    other formats as PNG), ``Audio`` -> :class:`Audio` (WAV/FLAC kept), ``ClassLabel`` ->
    :class:`ClassLabel` with its names, ``Value`` -> :class:`Scalar` / :class:`Text`
    (``float64`` -> ``Tensor((), "float64")``, exact), ``List``/``Sequence`` of values ->
    :class:`Sequence` (or :class:`Tensor` when its length is fixed), ``Array2D``..``Array5D``
    and fixed nested lists -> :class:`Tensor`, dicts -> ``outer/inner`` features.

    Raises:
        SourceError: a feature type with no counterpart (it is named).
    """

    in_process = True  # rows are already in memory (Arrow): nothing to load in workers
    provenance = True

    named_classes = True  # ClassLabel ids number the dataset's own names

    def __init__(self, dataset: Any, *, provenance: bool = True,
                 encoding: str | None = None, channels: int | None = None,
                 resize: Resize = None, check: ImageCheck = "structure",
                 max_image_pixels: int = DEFAULT_MAX_IMAGE_PIXELS,
                 reduce_16bit: bool = False, exif_transpose: bool = False) -> None:
        self.provenance = provenance
        self.image = ImageOptions(encoding, channels, resize, check, max_image_pixels,
                                  reduce_16bit, exif_transpose)
        splits = dict(dataset) if isinstance(dataset, Mapping) else {None: dataset}
        if not splits:
            raise SourceError("<datasets>", "no splits")
        self._splits = {name: _undecoded(part) for name, part in splits.items()}
        first = next(iter(self._splits.values()))
        self.resumable = all(hasattr(part, "_fingerprint") for part in self._splits.values())
        fingerprints = ",".join(f"{name}={getattr(part, '_fingerprint', '?')}"
                                for name, part in self._splits.items())
        self.description = f"huggingface:{fingerprints}{self.image.described}"
        self._converters: dict[str, tuple[tuple[str, ...], Convert]] | None = None
        self._schema: Schema | None = None
        self._features = first.features
        if self._features is None:
            raise SourceError("<datasets>", "the dataset declares no features (an "
                                            "IterableDataset of unknown columns: call "
                                            "._resolve_features() or cast it first)")
        first_name = next(iter(self._splits))
        for name, part in self._splits.items():
            if part.features != self._features:
                theirs, ours = dict(part.features or {}), dict(self._features)
                differ = sorted((theirs.keys() ^ ours.keys())
                                or {k for k in ours if theirs[k] != ours[k]})
                raise SourceError(f"datasets split {name!r}", f"its features differ from "
                                  f"split {first_name!r}'s in {differ}: every split becomes "
                                  "one schema, so a column of one split would be dropped or "
                                  "missing in another; cast the splits to the same features")

    def __getstate__(self) -> dict[str, Any]:
        # Items carry their rows: workers (Ray tasks) need the schema, not the dataset.
        self.schema()
        state = dict(self.__dict__)
        state["_splits"] = {}
        return state

    def schema(self) -> Schema:
        if self._schema is None:
            features: dict[str, Feature] = {}
            converters: dict[str, tuple[tuple[str, ...], Convert]] = {}
            for name, hf in self._features.items():
                self._map(name, (name,), hf, features, converters)
            self._schema = Schema(features)
            self._converters = converters
        return self._schema

    def _map(self, name: str, path: tuple[str, ...], hf: Any, features: dict[str, Feature],
             converters: dict[str, tuple[tuple[str, ...], Convert]]) -> None:
        """Add the feature(s) ``hf`` (at ``path`` in a row) becomes, named ``name``."""
        kind = type(hf).__name__
        if isinstance(hf, dict):
            for key, inner in hf.items():
                self._map(f"{name}/{key}", (*path, key), inner, features, converters)
            return
        if kind in ("List", "Sequence", "LargeList") and isinstance(_inner(hf), dict):
            # A list of dicts: one sequence per inner key, as TFDS's Sequence(FeaturesDict).
            for key, inner in _inner(hf).items():
                feature, convert = _element_list(f"{name}/{key}", inner, _length(hf))
                _claim(features, f"{name}/{key}", path)
                features[f"{name}/{key}"] = feature
                converters[f"{name}/{key}"] = (path, _pluck(key, convert))
            return
        if kind == "Image":
            feature, convert = self._image_leaf()
        else:
            feature, convert = _leaf(name, hf, self._sample(path) if kind == "Audio" else [])
        _claim(features, name, path)
        features[name] = feature
        converters[name] = (path, convert)

    def _image_leaf(self) -> tuple[Feature, Convert]:
        """An HF ``Image`` column: its stored bytes, read with the image options."""
        image = self.image
        convert = functools.partial(_image, image)  # picklable: Ray tasks get the converters
        if image.keeps_bytes:
            return Image(), convert
        return Image(encoding=image.encoding or "auto", channels=image.channels), convert

    def _sample(self, path: tuple[str, ...]) -> list[Any]:
        """The first rows' values at ``path`` (to choose what keeps their bytes)."""
        part = next(iter(self._splits.values()))
        return [_at(row, path) for row in islice(iter(part), _SAMPLE_ROWS)]

    def items(self) -> Iterator[SourceItem]:
        for split, part in self._splits.items():
            for number, row in enumerate(part):
                yield SourceItem(f"{split or ''}[{number}]", row, split)

    def describe(self, item: SourceItem) -> str:
        return f"datasets row {item.key}"

    def origin(self, item: SourceItem) -> str:
        """Where the record came from, as stored with it: ``split[row]``."""
        return item.key

    def load(self, item: Any) -> Mapping[str, Any]:
        self.schema()
        assert self._converters is not None
        record: dict[str, Any] = {}
        for name, (path, convert) in self._converters.items():
            value = _at(item, path)
            if value is None:
                raise SourceError(f"datasets column {name!r}", "missing value (None)")
            record[name] = convert(value, name)
        return record


def _claim(features: dict[str, Feature], name: str, path: tuple[str, ...]) -> None:
    """Refuse a second feature under one name (a nested ``a: {b}`` flattened to ``a/b``
    beside a column named ``a/b``): one would overwrite the other."""
    if name in features:
        raise SourceError(f"datasets column {'.'.join(path)!r}", f"becomes feature {name!r}, "
                          "which another column already is (nested dicts are flattened to "
                          "'outer/inner'); rename one of them")


def _undecoded(part: Any) -> Any:
    """The dataset with images and audio read as their stored bytes (HF decodes them)."""
    from datasets import Audio as HFAudio
    from datasets import Image as HFImage

    features = getattr(part, "features", None)
    if features is None:
        return part
    changed = features.copy()
    touched = False

    def plain(value: Any) -> Any:
        nonlocal touched
        if isinstance(value, HFImage | HFAudio) and value.decode:
            touched = True
            return type(value)(decode=False)
        if isinstance(value, dict):
            return {k: plain(v) for k, v in value.items()}
        return value

    for key, value in features.items():
        changed[key] = plain(value)
    return part.cast(changed) if touched else part


def _inner(hf: Any) -> Any:
    return hf.feature


def _length(hf: Any) -> int:
    return int(getattr(hf, "length", -1))


def _at(row: Mapping[str, Any], path: tuple[str, ...]) -> Any:
    value: Any = row
    for key in path:
        if value is None:
            return None
        value = value[key]
    return value


def _pluck(key: str, convert: Convert) -> Convert:
    """A list of dicts (or HF's dict of lists) -> the list of their ``key`` values."""
    def take(value: Any, where: str) -> Any:
        items = value[key] if isinstance(value, Mapping) else [v[key] for v in value]
        return convert(items, where)
    return take


def _leaf(name: str, hf: Any, sample: list[Any]) -> tuple[Feature, Convert]:
    kind = type(hf).__name__
    if kind == "Value":
        return _value(name, hf.dtype)
    if kind == "ClassLabel":
        return ClassLabel(list(hf.names)), lambda v, where: int(v)
    if kind == "Audio":
        kinds = {sniff_bytes(v["bytes"]) for v in sample if v and v.get("bytes")}
        encoding = "wav" if kinds == {"wav"} else "flac"
        return Audio(encoding=encoding), lambda v, where: _audio(v, where, encoding)
    if kind in ("Array2D", "Array3D", "Array4D", "Array5D"):
        shape = tuple(None if d is None else int(d) for d in hf.shape)
        return _tensor(name, shape, hf.dtype)
    if kind in ("List", "Sequence", "LargeList"):
        return _element_list(name, _inner(hf), _length(hf))
    raise SourceError(f"datasets column {name!r}", f"{kind} features have no counterpart in "
                                                   "tfrecordkit's schema; drop or cast it")


def _value(name: str, dtype: str) -> tuple[Feature, Convert]:
    if dtype == "bool" or dtype in _INTS or dtype in ("float16", "float32"):
        return Scalar(dtype), lambda v, where: v
    if dtype == "uint64":
        return Scalar("int64"), lambda v, where: v  # values past 2**63 - 1 are refused
    if dtype in ("float64", "double"):
        return Tensor((), "float64"), lambda v, where: np.float64(v)
    if dtype in ("string", "large_string"):
        return Text(), lambda v, where: v
    if dtype in ("binary", "large_binary"):
        return Scalar("string"), lambda v, where: bytes(v)
    raise SourceError(f"datasets column {name!r}", f"Value({dtype!r}) has no counterpart; "
                                                   "cast it to a number or a string")


def _element_list(name: str, inner: Any, length: int) -> tuple[Feature, Convert]:
    """A list of ``inner`` per record: a sequence, or a tensor when it is all numbers of
    fixed (or nested) shape."""
    shape: list[int | None] = [None if length < 0 else length]
    leaf = inner
    while type(leaf).__name__ in ("List", "Sequence", "LargeList") and not isinstance(
            _inner(leaf), dict):
        shape.append(None if _length(leaf) < 0 else _length(leaf))
        leaf = _inner(leaf)
    kind = type(leaf).__name__
    numeric = kind == "Value" and (leaf.dtype in _INTS or leaf.dtype in (
        "bool", "float16", "float32", "float64", "double"))
    if numeric and (len(shape) > 1 or shape[0] is not None):
        if sum(d is None for d in shape) > 1 or None in shape[1:]:
            raise SourceError(f"datasets column {name!r}", "nested lists whose inner lengths "
                                                           "vary have no counterpart")
        return _tensor(name, tuple(shape), "float64" if leaf.dtype == "double" else leaf.dtype)
    if len(shape) == 1:
        if kind == "ClassLabel":
            return Sequence(ClassLabel(list(leaf.names))), lambda v, where: [int(x) for x in v]
        if kind == "Value":
            element, _ = _value(name, leaf.dtype)
            if Sequence.can_hold(element):
                return Sequence(element), lambda v, where: list(v)
    raise SourceError(f"datasets column {name!r}", f"a list of {kind} has no counterpart")


def _tensor(name: str, shape: tuple[int | None, ...], dtype: str) -> tuple[Feature, Convert]:
    feature = Tensor(shape, dtype)

    def convert(value: Any, where: str) -> Any:
        array = np.asarray(value, dtype=feature.dtype)
        if array.dtype == object or any(
                d is not None and d != n for d, n in zip(shape, array.shape, strict=False)):
            raise SourceError(f"datasets column {where!r}", f"shape {array.shape} is not "
                                                            f"{shape}")
        return array
    return feature, convert


def _stored_bytes(value: Any, where: str, what: str) -> bytes:
    """The encoded bytes HF holds for an image or audio value (read from its path when it
    keeps only that)."""
    data = value.get("bytes") if isinstance(value, Mapping) else None
    if data is None:
        path = value.get("path") if isinstance(value, Mapping) else None
        if not path:
            raise SourceError(f"datasets column {where!r}", f"{what} with no bytes or path")
        with open(os.fspath(path), "rb") as f:
            data = f.read()
    return bytes(data)


def _image(options: ImageOptions, value: Any, where: str) -> Any:
    return options.from_bytes(_stored_bytes(value, where, "an image"),
                              f"datasets column {where!r}")


def _audio(value: Any, where: str, encoding: str) -> Any:
    return audio_from_bytes(_stored_bytes(value, where, "audio"),
                            f"datasets column {where!r}", encoding=encoding)
