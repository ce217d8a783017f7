"""Where records come from: image/audio class folders, text, tables, NumPy arrays, iterables,
Hugging Face datasets.

Every source streams: listing items is cheap and loading happens one item at a time, in
worker processes.
"""

from tfrecordkit.sources._coco import EDGE_TOLERANCE, Coco, coco_splits, is_coco_root
from tfrecordkit.sources._folder import (
    SPLIT_FOLDER_NAMES,
    AudioFolder,
    ImageFolder,
    class_dirs,
    walk_files,
)
from tfrecordkit.sources._huggingface import HuggingFace, is_huggingface
from tfrecordkit.sources._media import (
    AUDIO_EXTENSIONS,
    IMAGE_EXTENSIONS,
    IMAGE_OPTIONS,
    ImageOption,
    ImageOptions,
    load_audio,
    load_image,
)
from tfrecordkit.sources._protocol import Source, SourceItem, SourceTraits
from tfrecordkit.sources._records import NumpyArrays, Records, TextLines
from tfrecordkit.sources._splits import SplitSources
from tfrecordkit.sources._table import Table

__all__ = [
    "AUDIO_EXTENSIONS",
    "EDGE_TOLERANCE",
    "IMAGE_EXTENSIONS",
    "IMAGE_OPTIONS",
    "SPLIT_FOLDER_NAMES",
    "AudioFolder",
    "Coco",
    "HuggingFace",
    "ImageFolder",
    "ImageOption",
    "ImageOptions",
    "NumpyArrays",
    "Records",
    "Source",
    "SourceItem",
    "SourceTraits",
    "SplitSources",
    "Table",
    "TextLines",
    "class_dirs",
    "coco_splits",
    "is_coco_root",
    "is_huggingface",
    "load_audio",
    "load_image",
    "walk_files",
]
