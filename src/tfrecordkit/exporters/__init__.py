"""Export: a dataset written in another library's format (WebDataset, Parquet as Hugging Face
stores it, a Hugging Face ``DatasetDict``), every value kept, staged and moved into place
whole. One module per target; :data:`TARGETS` names them."""

from tfrecordkit.exporters._export import ExportResult, Target, export
from tfrecordkit.exporters._output import MARKER
from tfrecordkit.exporters._registry import TARGETS

__all__ = ["MARKER", "TARGETS", "ExportResult", "Target", "export"]
