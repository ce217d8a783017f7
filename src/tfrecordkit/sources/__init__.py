"""Where records come from: image/audio class folders, text, tables, NumPy arrays, iterables.

Every source streams: listing items is cheap and loading happens one item at a time, in
worker processes.
"""

from tfrecordkit.sources._folder import AudioFolder, ImageFolder
from tfrecordkit.sources._media import load_audio, load_image
from tfrecordkit.sources._protocol import Source, SourceItem
from tfrecordkit.sources._records import NumpyArrays, Records, TextLines
from tfrecordkit.sources._table import Table

__all__ = [
    "AudioFolder",
    "ImageFolder",
    "NumpyArrays",
    "Records",
    "Source",
    "SourceItem",
    "Table",
    "TextLines",
    "load_audio",
    "load_image",
]
