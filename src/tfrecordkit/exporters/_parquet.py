"""Parquet as Hugging Face stores it: ``<split>-00000-of-0000n.parquet``, which
``datasets.load_dataset("parquet", data_dir=out)`` reads with its ``Image`` and ``ClassLabel``
features."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

__all__ = ["Parquet"]


class Parquet:
    """Parquet files of ``per_file`` rows each, in Hugging Face's layout."""

    name = "parquet"
    description = "Parquet files as Hugging Face stores them"
    arrow = True

    def write_split(self, folder: Any, label: str, tables: Iterator[Any], schema: Any,
                    *, per_file: int, total: int) -> list[str]:
        import pyarrow.parquet as pq

        count = max(1, -(-total // per_file))
        files: list[str] = []
        writer: Any = None
        written = 0
        try:
            for whole in tables:
                table = whole
                while table.num_rows:
                    if writer is None or written % per_file == 0:
                        if writer is not None:
                            writer.close()
                        files.append(folder.path(
                            f"{label}-{len(files):05d}-of-{count:05d}.parquet"))
                        writer = pq.ParquetWriter(files[-1], schema)
                    room = per_file - written % per_file
                    part, table = table.slice(0, room), table.slice(room)
                    writer.write_table(part)
                    written += part.num_rows
        finally:
            if writer is not None:
                writer.close()
        return files

    def finish(self, folder: Any, labels: list[str]) -> None:
        """Nothing to add: the file names say the splits."""
