"""A Hugging Face ``DatasetDict`` saved with ``save_to_disk`` (``datasets.load_from_disk``
reads it)."""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Iterator
from typing import Any

__all__ = ["HuggingFace"]


class HuggingFace:
    """Each split written through Hugging Face's own Arrow writer, chunk by chunk, then saved
    with ``save_to_disk`` (memory-mapped, never held)."""

    name = "hf"
    description = "a Hugging Face DatasetDict (save_to_disk)"
    arrow = True

    def write_split(self, folder: Any, label: str, tables: Iterator[Any], schema: Any,
                    *, per_file: int, total: int) -> list[str]:
        from datasets.arrow_writer import ArrowWriter

        import datasets

        scratch = folder.path(os.path.join(".cache", f"{label}.arrow"))
        os.makedirs(os.path.dirname(scratch), exist_ok=True)
        writer = ArrowWriter(features=datasets.Features.from_arrow_schema(schema),
                             path=scratch)
        try:
            for table in tables:
                writer.write_table(table)
            writer.finalize()
        finally:
            writer.close()
        where = folder.path(label)
        datasets.Dataset.from_file(scratch).save_to_disk(where)
        return [where]

    def finish(self, folder: Any, labels: list[str]) -> None:
        """The file ``datasets.load_from_disk`` reads a ``DatasetDict`` from; the scratch
        Arrow files removed."""
        with open(folder.path("dataset_dict.json"), "w") as handle:
            json.dump({"splits": labels}, handle)
        shutil.rmtree(folder.path(".cache"), ignore_errors=True)
