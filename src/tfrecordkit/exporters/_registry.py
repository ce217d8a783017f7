"""The export targets by name: a new target is its module and one line here (the CLI reads
its choices from this table)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, Protocol

from tfrecordkit.exporters._hf import HuggingFace
from tfrecordkit.exporters._parquet import Parquet
from tfrecordkit.exporters._webdataset import WebDataset

__all__ = ["TARGETS", "ExportTarget"]


class ExportTarget(Protocol):
    """One format an export writes."""

    name: str
    description: str  # a few words, for the CLI's help
    arrow: bool  # it takes Arrow tables in Hugging Face's layout (else rows of plain values)

    def write_split(self, folder: Any, label: str, data: Iterator[Any], layout: Any,
                    *, per_file: int, total: int) -> list[str]:
        """Write one split's ``data`` (tables of the Arrow schema ``layout``, or rows of the
        :class:`Rows` ``layout``) into ``folder`` (a :class:`StagedOutput`), ``per_file``
        records a file, ``total`` in all; the files (or folders) written."""
        ...

    def finish(self, folder: Any, labels: list[str]) -> None:
        """Write what the format needs once every split (``labels``) is written."""
        ...


TARGETS: dict[str, ExportTarget] = {t.name: t for t in (WebDataset(), Parquet(), HuggingFace())}
