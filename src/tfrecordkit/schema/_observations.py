"""What a conversion (or ``adopt``) saw of its images, without decoding them, and the schema
it makes precise: one format, one channel count, one size when every image agreed."""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Iterable, Sequence
from typing import Any

from tfrecordkit.codecs import image_header, sniff_bytes
from tfrecordkit.schema._features import Image
from tfrecordkit.schema._schema import Schema

__all__ = ["ImageObservations", "Observed", "observe_image"]

logger = logging.getLogger(__name__)

Observed = tuple[str, str, int, str]
"""(image feature, format, channels, ``"HxW"``); channels 0 and size "" when unknown."""


def observe_image(name: str, data: bytes) -> Observed:
    """What encoded image bytes are, from their header (not decoded)."""
    header = image_header(data)
    if header is None:
        return name, sniff_bytes(data[:16]), 0, ""
    return name, sniff_bytes(data[:16]), header[2], f"{header[0]}x{header[1]}"


class ImageObservations:
    """What a conversion saw of its images, merged chunk by chunk in any order: formats,
    channels, and each feature's one size, or that sizes vary (kept as ``""``, so what is
    held stays small however many sizes there are)."""

    def __init__(self) -> None:
        self.seen: dict[str, set[tuple[str, int, str]]] = {}

    def add(self, observed: Iterable[Sequence[Any]]) -> None:
        """Merge observations (:data:`Observed` tuples, or lists as JSON gives them back)."""
        for name, fmt, channels, size in observed:
            seen = self.seen.setdefault(name, set())
            seen.add((fmt, int(channels), size))
            if len({s for _, _, s in seen}) > 1:
                self.seen[name] = {(f, c, "") for f, c, _ in seen}

    def as_set(self) -> set[Observed]:
        """The observations as :data:`Observed` tuples."""
        return {(name, *item) for name, seen in self.seen.items() for item in seen}

    def sizes(self) -> dict[str, tuple[int, int]]:
        """Each image feature's one ``(height, width)``, where every image had it."""
        out = {}
        for name, seen in self.seen.items():
            sizes = {s for _, _, s in seen}
            if len(sizes) == 1 and (size := sizes.pop()):
                height, _, width = size.partition("x")
                out[name] = (int(height), int(width))
        return out

    def widen(self, pinned: Schema, schema: Schema) -> Schema:
        """The schema of a dataset grown by the images seen here: ``schema`` (the grown one,
        images left open) with each image's format, channels and size as converting the old
        and new images at once would pin them: ``pinned``'s (the dataset's) where the new
        images agree with it, else open (a size or format seen to vary) or the most channels
        seen."""
        features = dict(schema)
        sizes = self.sizes()
        for name, old in pinned.of_kind(Image).items():
            seen = self.seen.get(name)
            open_ = features.get(name)
            if not isinstance(open_, Image):
                continue
            if seen is None:  # no new image: the dataset's description holds
                features[name] = dataclasses.replace(open_, encoding=old.encoding,
                                                     channels=old.channels, size=old.size)
                continue
            formats = {fmt for fmt, _, _ in seen}
            channels = {c for _, c, _ in seen if c}
            size = (old.size if old.size is not None and sizes.get(name) == tuple(old.size)
                    else open_.size)
            encoding = (old.encoding if old.encoding == "auto" or formats == {old.encoding}
                        else open_.encoding)
            wide = (max(old.channels, *channels) if old.channels is not None and channels
                    and open_.channels is None else (open_.channels or old.channels))
            features[name] = dataclasses.replace(open_, encoding=encoding, channels=wide,
                                                 size=size)
        return Schema(features)

    def refine(self, schema: Schema) -> Schema:
        """Pin an image's encoding, channels and size when every record agreed on them."""
        features = dict(schema)
        found = self.sizes()
        for name, seen in self.seen.items():
            feature = features[name]
            assert isinstance(feature, Image)
            formats = {fmt for fmt, _, _ in seen}
            channels = {c for _, c, _ in seen if c}
            if feature.channels is None and len(channels) > 1:
                # Mixed grayscale/colour: readers decode every image to the most channels
                # seen, which is lossless (grey is replicated, alpha added opaque); the bytes
                # stay as they came. Left open, batches would zero-fill missing channels.
                logger.info("%s: images have %s channels; readers will decode all of them "
                            "to %d", name, sorted(channels), max(channels))
            features[name] = dataclasses.replace(  # the feature's other settings (dims) kept
                feature,
                encoding=formats.pop() if feature.encoding == "auto" and len(formats) == 1
                else feature.encoding,
                channels=max(channels) if feature.channels is None and channels
                else feature.channels,
                size=feature.size or found.get(name),
            )
        return Schema(features)
