"""Every feature kind, and rebuilding a feature from its JSON description.

Each feature owns one main Example key (its name) and, where shapes vary per record, auxiliary
keys ``<name>/<field>`` (``image/height``, ``tensor/shape``, ...). A feature knows how to encode
a Python/NumPy value, which parsing spec reads each key, and how to decode without TensorFlow.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from tfrecordkit.errors import SchemaError
from tfrecordkit.format import KeySpec, check_key
from tfrecordkit.schema._audio import Audio
from tfrecordkit.schema._base import Feature
from tfrecordkit.schema._boxes import BOX_CORNERS, Boxes
from tfrecordkit.schema._feature_list import FeatureList
from tfrecordkit.schema._image import Image
from tfrecordkit.schema._scalar import ClassLabel, Scalar
from tfrecordkit.schema._sequence import Sequence
from tfrecordkit.schema._tensor import Tensor
from tfrecordkit.schema._text import Text

__all__ = [
    "BOX_CORNERS",
    "Audio",
    "Boxes",
    "ClassLabel",
    "Feature",
    "FeatureList",
    "Image",
    "KeySpec",
    "Scalar",
    "Sequence",
    "Tensor",
    "Text",
    "check_key",
    "feature_from_json",
]


def feature_from_json(data: Mapping[str, Any]) -> Feature:
    """Rebuild a feature from :meth:`Feature.to_json` output (any registered kind, see
    :attr:`Feature.registry`)."""
    try:
        cls = Feature.registry[data["kind"]]
    except KeyError:
        raise SchemaError("<schema>", f"unknown feature kind {data.get('kind')!r}") from None
    return cls.from_json({k: v for k, v in data.items() if k != "kind"}, feature_from_json)
