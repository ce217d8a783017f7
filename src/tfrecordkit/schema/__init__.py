"""Typed features and their mapping to ``tf.train.Example``; profiling records of unknown layout."""

from tfrecordkit.schema._base import DecodeContext, number_of
from tfrecordkit.schema._features import (
    BOX_CORNERS,
    Audio,
    Boxes,
    ClassLabel,
    Feature,
    FeatureList,
    Image,
    KeySpec,
    Scalar,
    Sequence,
    Tensor,
    Text,
    check_key,
    feature_from_json,
)
from tfrecordkit.schema._infer import schema_from_profile
from tfrecordkit.schema._layout import FeatureLayout, Kind, LayoutOptions, axes_of, steps_layout
from tfrecordkit.schema._observations import ImageObservations, Observed, observe_image
from tfrecordkit.schema._profile import FeatureProfile, ListKind, RecordProfile, profile_records
from tfrecordkit.schema._schema import RESERVED_PREFIX, SOURCE_FEATURE, Schema
from tfrecordkit.schema._tensor import serialized_tensor_feature
from tfrecordkit.schema._vocab import Vocabulary

__all__ = [
    "BOX_CORNERS",
    "RESERVED_PREFIX",
    "SOURCE_FEATURE",
    "Audio",
    "Boxes",
    "ClassLabel",
    "DecodeContext",
    "Feature",
    "FeatureLayout",
    "FeatureList",
    "FeatureProfile",
    "Image",
    "ImageObservations",
    "KeySpec",
    "Kind",
    "LayoutOptions",
    "ListKind",
    "Observed",
    "RecordProfile",
    "Scalar",
    "Schema",
    "Sequence",
    "Tensor",
    "Text",
    "Vocabulary",
    "axes_of",
    "check_key",
    "feature_from_json",
    "number_of",
    "observe_image",
    "profile_records",
    "schema_from_profile",
    "serialized_tensor_feature",
    "steps_layout",
]
