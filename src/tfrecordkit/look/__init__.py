"""Looking at a dataset: a PNG grid of its records (:func:`show_examples`) and a self-contained
HTML report (:func:`dataset_report`). Both read through :mod:`tfrecordkit.readers`; neither
imports a framework (Pillow and, for the report's charts, matplotlib are imported on use)."""

from tfrecordkit.look._grid import TILE, show_examples
from tfrecordkit.look._report import dataset_report

__all__ = ["TILE", "dataset_report", "show_examples"]
