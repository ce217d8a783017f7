"""The sidecars of compressed shards are claims, checked against the stream: a damaged `.index`
(lines swapped, repeated, negative, shifted, one past the end) or `.restarts` (a point moved by
a record, swapped, pointing elsewhere) is refused naming the sidecar by every reader that would
have used it, and by `verify`; nothing is served from the wrong place."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

import tfrecordkit as tk
from tfrecordkit.store import verify_paths

RECORDS = 4_500  # ~1.1 KB each, incompressible: several restart points per class shard


def _dataset(path: Path) -> Path:
    rng = np.random.default_rng(0)
    schema = tk.Schema({"payload": tk.Tensor((256,), "float32"),
                        "label": tk.ClassLabel(["a", "b", "c"])})
    rows = ({"payload": rng.normal(size=256).astype(np.float32), "label": i % 3}
            for i in range(RECORDS))
    tk.write_dataset(rows, path, schema, shards=tk.ShardOptions(
        num_shards=1, compression="gzip", layout="per_class", shuffle=False), progress=False)
    return path


@pytest.fixture(scope="module")
def pristine(tmp_path_factory) -> Path:
    return _dataset(tmp_path_factory.mktemp("gz") / "ds")


def _copy(pristine: Path, to: Path) -> Path:
    import shutil

    shutil.copytree(pristine, to)
    return to


def _sidecar(path: Path, suffix: str) -> Path:
    found = sorted(path.glob(f"train-*{suffix}"))
    assert found, f"no {suffix} sidecar"
    return found[0]


def _lines(sidecar: Path) -> list[list[int]]:
    return [[int(v) for v in line.split()] for line in sidecar.read_text().splitlines()]


def _write(sidecar: Path, lines: list[list[int]]) -> None:
    sidecar.write_text("".join(f"{a} {b}\n" for a, b in lines))


def _every_record(path: Path) -> None:
    split = tk.open_split(path)
    split.get_many(list(range(len(split))))


def _every_seventh(source: object) -> list:
    """Random reads through one source (made once: a source per read cost 25 ms each)."""
    return [source[i] for i in range(0, RECORDS, 7)]  # type: ignore[index]


def _readers() -> dict[str, Callable[[Path], object]]:
    return {
        "open_split": _every_record,
        "numpy": lambda p: [b for b in tk.load_numpy_dataset(p, batch_size=256, seed=1)],
        "grain": lambda p: _every_seventh(tk.load_grain_source(p)),
        "pk": lambda p: list(tk.load_numpy_dataset(p, sampling=tk.PK(3, 8)).batches(60)),
    }


INDEX_DAMAGE: dict[str, Callable[[list[list[int]]], list[list[int]]]] = {
    "swapped": lambda ls: [*ls[:10], ls[11], ls[10], *ls[12:]],
    "repeated": lambda ls: [*ls[:10], ls[9], *ls[11:]],
    "negative": lambda ls: [*ls[:5], [-ls[5][0], ls[5][1]], *ls[6:]],
    "shifted": lambda ls: [*ls[:5], [ls[5][0] + 1, ls[5][1]], *ls[6:]],
    "past the end": lambda ls: [*ls[:-1], [ls[-1][0] + ls[-1][1], ls[-1][1]]],
    "short frame": lambda ls: [*ls[:3], [ls[3][0], 8], *ls[4:]],
}


@pytest.mark.parametrize("damage", sorted(INDEX_DAMAGE))
def test_a_damaged_index_is_refused_by_every_reader_and_verify(pristine, tmp_path, damage):
    path = _copy(pristine, tmp_path / "ds")
    index = _sidecar(path, ".tfrecord.gz.index")
    _write(index, INDEX_DAMAGE[damage](_lines(index)))
    for name, read in _readers().items():
        with pytest.raises(tk.TFRecordKitError, match=r"index|record") as caught:
            read(path)
        assert index.name in str(caught.value) or "train-" in str(caught.value), name
    result = verify_paths([str(path)])
    assert not result.ok
    assert any(index.name in p for p in result.problems)


def _points(pristine: Path) -> list[list[int]]:
    return _lines(_sidecar(pristine, ".restarts"))


def test_the_dataset_has_restart_points(pristine):
    assert len(_points(pristine)) >= 3
    _every_record(pristine)
    assert verify_paths([str(pristine)]).ok


def _record_starts(pristine: Path) -> np.ndarray:
    return np.array(_lines(_sidecar(pristine, ".tfrecord.gz.index")))[:, 0]


RESTART_DAMAGE = {
    # The decompressed offset moved to the next record's start (same-size records: every
    # frame there is valid, so only the check against the stream can tell).
    "moved by a record": lambda ps, starts: [
        *ps[:1], [ps[1][0], int(starts[np.searchsorted(starts, ps[1][1]) + 1])], *ps[2:]],
    "moved back by a record": lambda ps, starts: [
        *ps[:1], [ps[1][0], int(starts[np.searchsorted(starts, ps[1][1]) - 1])], *ps[2:]],
    "compressed offset moved": lambda ps, starts: [*ps[:1], [ps[1][0] + 3, ps[1][1]],
                                                   *ps[2:]],
    "last point moved": lambda ps, starts: [
        *ps[:-1], [ps[-1][0], int(starts[np.searchsorted(starts, ps[-1][1]) + 1])]],
    "all shifted": lambda ps, starts: [
        [c, int(starts[np.searchsorted(starts, u) + 1])] for c, u in ps],
}


READ = {
    "open_split": lambda p: list(tk.open_split(p)),
    "numpy": lambda p: [b["payload"].tobytes() for b in tk.load_numpy_dataset(
        p, batch_size=256, seed=1)],
    "grain": lambda p: [e["payload"].tobytes() for e in _every_seventh(tk.load_grain_source(p))],
    "pk": lambda p: [b["payload"].tobytes() for b in tk.load_numpy_dataset(
        p, sampling=tk.PK(3, 8)).batches(60)],
}


def _values(path: Path) -> dict[str, object]:
    """What each reader gives, in a form to compare."""
    return {name: read(path) for name, read in READ.items()}


def _values_or_error(path: Path, name: str) -> object:
    try:
        return READ[name](path)
    except tk.CorruptRecordError as err:
        return err


@pytest.fixture(scope="module")
def pristine_values(pristine) -> dict[str, object]:
    return _values(pristine)


@pytest.mark.slow  # every reader over a gzip dataset, damaged five ways (~30 s)
@pytest.mark.parametrize("damage", sorted(RESTART_DAMAGE))
def test_a_moved_restart_point_is_refused_when_used_and_by_verify(pristine, pristine_values,
                                                                   tmp_path, damage):
    path = _copy(pristine, tmp_path / "ds")
    sidecar = _sidecar(path, ".restarts")
    _write(sidecar, RESTART_DAMAGE[damage](_lines(sidecar), _record_starts(pristine)))
    # A reader that uses a damaged point refuses it; one that reads past it from an earlier
    # place reads the right records. Never a neighbour.
    for name in READ:
        got = _values_or_error(path, name)
        if isinstance(got, tk.CorruptRecordError):
            assert "restart point" in str(got) and sidecar.name in str(got), name
        else:
            assert got == pristine_values[name], name
    # A random read after the first point uses one: refused.
    split = tk.open_split(path)
    points = _lines(sidecar)
    starts = _record_starts(pristine)
    late = int(np.searchsorted(starts, points[-1][1])) + 1
    with pytest.raises(tk.CorruptRecordError, match="restart point") as caught:
        split[late]
    assert sidecar.name in str(caught.value)
    result = verify_paths([str(path)])
    assert any(sidecar.name in p and "restart point" in p for p in result.problems)


def test_sound_sidecars_read_every_record_as_a_plain_pass(pristine):
    split = tk.open_split(pristine)
    order = np.random.default_rng(3).permutation(len(split))
    by_position = dict(zip(order.tolist(), split.get_many(order.tolist()), strict=True))
    files = [pristine / s.file for s in tk.load_manifest(pristine).split("train").shards]
    plain = [r for f in files for r in tk.RecordReader(f)]
    assert [by_position[i] for i in range(len(split))] == plain


def test_adopted_gzip_files_keep_their_restart_points(tmp_path):
    """Compressed files written with restart points and adopted: the points come along (so
    a random read inflates from the nearest one, not from the file's start), every record
    reads as a plain pass does, and a moved point is still refused when used."""
    records = [tk.encode_example({"x": [float(i)] * 200, "i": [i]}) for i in range(600)]
    files = []
    for part in range(2):
        path = tmp_path / f"part-{part}.tfrecord.gz"
        with tk.RecordWriter(path, compression="gzip", restarts_path=str(path) + ".restarts",
                             restart_bytes=16 << 10) as writer:
            for record in records[part * 300 : (part + 1) * 300]:
                writer.write(record)
        files.append(str(path))
    manifest = tk.adopt(files, tmp_path / "ds")
    assert all(s.restarts == s.file + ".restarts" for s in manifest.split("train").shards)
    split = tk.open_split(tmp_path / "ds")
    assert all(len(points) > 10 for points in split.restarts.points)
    ids = np.random.default_rng(0).permutation(600)
    assert [split[int(i)] for i in ids] == [records[int(i)] for i in ids]
    assert verify_paths([str(tmp_path / "ds")]).ok
    plain = tmp_path / "plain.tfrecord.gz"  # no sidecar: adopted without points
    with tk.RecordWriter(plain, compression="gzip") as writer:
        for record in records[:10]:
            writer.write(record)
    alone = tk.adopt([str(plain)], tmp_path / "alone")
    assert alone.split("train").shards[0].restarts is None
