"""``read_dataset``: a split as a ``ray.data.Dataset``, read by tasks cut along shards and
``.index`` ranges, CRC-checked and decoded with tfrecordkit's codec (no TensorFlow)."""

from __future__ import annotations

import functools
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np

from tfrecordkit.errors import MissingDependencyError
from tfrecordkit.format import Inflater, Restarts, Storage, check_frame
from tfrecordkit.readers import (
    RECORD_ID,
    DecodeOptions,
    FilesArg,
    ReadOptions,
    RecordDecoder,
    decode_options,
    plan_read,
    refuse_moved,
    refuse_untaken,
)
from tfrecordkit.store import SplitArg, SplitLocations

try:
    import ray
    from ray.data import Datasource, ReadTask
    from ray.data.block import BlockAccessor, BlockMetadata
except ImportError as err:  # pragma: no cover - the extra is missing
    raise MissingDependencyError("ray", "ray", "tfrecordkit.ray") from err

__all__ = ["TFRecordKitDatasource", "read_dataset"]

_ROWS_PER_BLOCK = 1024


@dataclass(frozen=True)
class _Range:
    """Records ``first .. first + count - 1`` of one file, lying in ``[start, end)``."""

    file: str
    first: int  # the first record's position in the split
    start: int
    end: int
    offsets: np.ndarray  # frame offsets, relative to start
    lengths: np.ndarray
    shard_class: int = -1  # the file's class (per-class layout)
    # A compressed file: offsets are in its decompressed stream, read by inflating from
    # the nearest of these restart points.
    restarts: Restarts | None = None


class TFRecordKitDatasource(Datasource):
    """A split of a dataset (or TFRecord files) for ``ray.data.read_datasource``."""

    def __init__(self, path: FilesArg, split: SplitArg = "train", *,
                 options: DecodeOptions | None = None,
                 read: ReadOptions | None = None) -> None:
        super().__init__()  # type: ignore[no-untyped-call]
        self.options = options or DecodeOptions()
        read = read or ReadOptions()
        refuse_untaken("Ray's read_dataset", (), options=self.options, read=read)
        self.plan = plan_read(path, split, schema=read.schema,
                              storage_options=read.storage_options)
        self.decoder = RecordDecoder(self.plan.schema, self.options,
                                     inferred_from=self.plan.inferred_from)
        self.locations = self.plan.locations()

    def get_name(self) -> str:
        return "TFRecordKit"

    def estimate_inmemory_data_size(self) -> int | None:
        return int(self.locations.length.sum())

    def get_read_tasks(self, parallelism: int, per_task_row_limit: int | None = None,
                       data_context: Any = None) -> list[ReadTask]:
        where = self.locations
        n = len(where.shard)
        if n == 0:
            return []
        tasks = max(1, min(parallelism, n))
        bounds = np.linspace(0, n, tasks + 1).round().astype(np.int64)
        out = []
        for task_start, task_stop in zip(bounds[:-1].tolist(), bounds[1:].tolist(),
                                         strict=True):
            if task_stop <= task_start:
                continue
            ranges = _ranges(where, task_start, task_stop)
            nbytes = int(where.length[task_start:task_stop].sum())
            metadata = BlockMetadata(num_rows=task_stop - task_start, size_bytes=nbytes,
                                     exec_stats=None,
                                     input_files=tuple(sorted({r.file for r in ranges})))
            read = functools.partial(_read_ranges, ranges, self.plan.storage, self.decoder)
            kwargs = {"per_task_row_limit": per_task_row_limit} if per_task_row_limit else {}
            out.append(ReadTask(read, metadata, **kwargs))
        return out


def _ranges(where: SplitLocations, start: int, stop: int) -> list[_Range]:
    """Split positions ``start .. stop - 1`` into one contiguous range per file."""
    files, shard, offset, length = where.files, where.shard, where.offset, where.length
    out = []
    position = start
    while position < stop:
        number = int(shard[position])
        end = position
        while end < stop and int(shard[end]) == number:
            end += 1
        first_offset = int(offset[position])
        last_end = int(offset[end - 1] + length[end - 1])
        restarts = (Restarts(where.restarts.compression, (where.restarts.points[number],))
                    if where.restarts is not None else None)
        out.append(_Range(files[number], position, first_offset, last_end,
                          offset[position:end] - first_offset, length[position:end].copy(),
                          int(where.shard_class[number]), restarts))
        position = end
    return out


def _read_ranges(ranges: list[_Range], storage: Storage, decoder: RecordDecoder
                 ) -> Iterator[Any]:
    """Blocks of up to 1,024 decoded rows: each range read in one request, CRCs checked."""
    for part in ranges:
        data = memoryview(_span(part, storage))
        offsets, lengths = part.offsets.tolist(), part.lengths.tolist()
        for chunk in range(0, len(offsets), _ROWS_PER_BLOCK):
            records = [
                check_frame(bytes(data[o : o + n]), path=part.file, offset=part.start + o,
                            index=part.first + chunk + i)
                for i, (o, n) in enumerate(zip(offsets[chunk : chunk + _ROWS_PER_BLOCK],
                                               lengths[chunk : chunk + _ROWS_PER_BLOCK],
                                               strict=True))
            ]
            first = part.first + chunk
            yield BlockAccessor.batch_to_block(_batch(decoder, records, first, part))


def _span(part: _Range, storage: Storage) -> bytes:
    """The bytes of ``[start, end)``: one ranged read, or inflated for a compressed file."""
    if part.restarts is None:
        return storage.read_spans([(part.file, part.start, part.end)])[0]
    inflater = Inflater(part.restarts, [part.file])
    with storage.open(part.file, "rb") as f:
        def read_at(at: int, size: int) -> bytes:
            f.seek(at)
            return f.read(size)

        return inflater.read(0, [(part.start, part.end)], read_at, chunk=1 << 20)[0]


def _batch(decoder: RecordDecoder, records: list[bytes], first: int, part: _Range
           ) -> dict[str, np.ndarray]:
    """Decoded columns as NumPy arrays Ray turns into Arrow (ragged values as tensors)."""
    ids = np.arange(first, first + len(records), dtype=np.int64)
    classes = np.full(len(records), part.shard_class, np.int64)
    where = lambda i: f"{first + i} ({part.file})"  # noqa: E731
    columns = (decoder.decode_columns(records, where, classes) if decoder.options.decode
               else decoder.raw_columns(records, where, classes, padding="ragged"))
    out: dict[str, np.ndarray] = {}
    layout = decoder.layout if decoder.options.decode else decoder.stored
    for name in columns:
        values = columns[name]
        if name in layout.features and layout[name].step_lengths:
            out[name] = _steps_column(values)
            continue
        if isinstance(values, np.ndarray):
            out[name] = values
            continue
        arrays: list[Any] = [v if isinstance(v, str | bytes) else np.asarray(v)
                             for v in values]
        shapes = {(a.shape, a.dtype) for a in arrays if isinstance(a, np.ndarray)}
        if len(shapes) == 1 and all(isinstance(a, np.ndarray) for a in arrays):
            out[name] = np.stack(arrays)
        else:
            column = np.empty(len(arrays), dtype=object)
            column[:] = arrays
            out[name] = column
    out[RECORD_ID] = ids
    return out


def _steps_column(values: list[list[Any]]) -> np.ndarray:
    """Feature lists whose steps differ in length: per record, an object array of its steps
    (Arrow would make a record whose steps agree one 2-D array, and empty ones float64)."""
    column = np.empty(len(values), dtype=object)
    for i, steps in enumerate(values):
        held = np.empty(len(steps), dtype=object)
        for t, step in enumerate(steps):  # one by one: NumPy would stack steps that agree
            held[t] = step if isinstance(step, np.ndarray) else list(step)
        column[i] = held
    return column


@refuse_moved("tfrecordkit.ray.read_dataset")
def read_dataset(path: FilesArg, split: SplitArg = "train", *,
                 image_size: int | tuple[int, int] | None = None,
                 options: DecodeOptions | None = None, read: ReadOptions | None = None,
                 override_num_blocks: int | None = None,
                 ray_remote_args: dict[str, Any] | None = None, state: Any = None) -> Any:
    """A split of a dataset (a folder or URL with ``dataset.json``, or TFRecord files / globs)
    as a ``ray.data.Dataset``: one row per record with its decoded features and ``"__id"``
    (the record's position in the split); ``DecodeOptions(decode=False)`` gives each
    feature's stored keys parsed but not decoded, as every reader does. ``image_size``,
    ``options`` and ``read`` (schema, storage options) are every loader's.
    A variable shape is the record's own array (Ray's Arrow blocks would turn a nested
    ``{"values", "lengths"}`` into lists and lose its dtype); a feature list whose steps
    differ in length, an object array of its steps' arrays; ``load_grain_source(path,
    options=...).collate(rows)`` batches rows exactly as every other reader batches.

    Read tasks are cut along shards and ``.index`` offsets, each range read in one request;
    ``count()`` is exact without reading. CRCs are checked; workers never import TensorFlow.
    ``state=`` is refused, naming why (a Ray Dataset's iterators resume nothing).
    """
    refuse_untaken("Ray's read_dataset", (), state=state)
    datasource = TFRecordKitDatasource(
        path, split, options=decode_options(options, image_size=image_size), read=read)
    return ray.data.read_datasource(datasource, override_num_blocks=override_num_blocks,
                                    ray_remote_args=ray_remote_args)
