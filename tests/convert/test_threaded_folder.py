"""Image folders whose JPEGs are only test-decoded convert on threads of this process (the
decode releases the GIL); the shards must be the bytes worker processes and one thread write,
and a bad file among hundreds must still be named."""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

import tfrecordkit as tk
from tfrecordkit import ShardOptions, convert
from tfrecordkit.errors import SourceError
from tfrecordkit.sources import ImageFolder
from tfrecordkit.sources._media import load_image

pytest.importorskip("simplejpeg")


def jpeg(seed: int, size: tuple[int, int] = (12, 16)) -> bytes:
    pixels = np.random.default_rng(seed).integers(0, 256, (*size, 3), dtype=np.uint8)
    buffer = io.BytesIO()
    Image.fromarray(pixels).save(buffer, format="JPEG", quality=85)
    return buffer.getvalue()


def folder(root: Path, count: int = 700) -> Path:
    for i in range(count):  # more than two 256-item chunks, so several are in flight
        path = root / f"c{i % 3}" / f"{i:04d}.jpg"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(jpeg(i))
    return root


def shard_bytes(path: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(path.iterdir()) if ".tfrecord" in p.name}


def test_test_decoded_jpegs_convert_on_threads_with_the_same_bytes(tmp_path, monkeypatch):
    root = folder(tmp_path / "src")
    source = ImageFolder(root, check="decode")
    assert source.threaded and not source.in_process
    options = ShardOptions(num_shards=3, seed=5)
    convert(source, tmp_path / "threads", workers=2, shards=options)
    convert(ImageFolder(root, check="decode"), tmp_path / "inline", workers=1, shards=options)
    from tfrecordkit.engines import local

    monkeypatch.setattr(local, "_SMALL_JOB", 1)
    processes = ImageFolder(root, check="decode")
    processes.threaded = False  # worker processes instead
    convert(processes, tmp_path / "processes", workers=2, shards=options)
    threads = shard_bytes(tmp_path / "threads")
    assert len(threads) == 9  # three shards, their indexes and digests
    assert threads == shard_bytes(tmp_path / "inline") == shard_bytes(tmp_path / "processes")
    back = {}
    for batch in tk.load_numpy_dataset(tmp_path / "threads", batch_size=64,
                                       options=tk.DecodeOptions(decode=False, provenance=True)):
        back.update(zip(batch["__source"].tolist(), batch["image"].tolist(), strict=True))
    assert len(back) == 700
    assert back[b"c1/0004.jpg"] == (root / "c1" / "0004.jpg").read_bytes()


def test_a_corrupt_jpeg_among_hundreds_is_named_on_threads(tmp_path):
    root = folder(tmp_path / "src", 600)
    data = bytearray(jpeg(7, (128, 128)))  # random bytes in the middle of its scan
    middle = len(data) // 2
    data[middle : middle + 400] = np.random.default_rng(0).integers(0, 256, 400,
                                                                      np.uint8).tobytes()
    bad = root / "c1" / "0400x.jpg"
    bad.write_bytes(bytes(data))
    source = ImageFolder(root, check="decode")
    assert source.threaded
    with pytest.raises(SourceError, match=r"0400x\.jpg: corrupt image data"):
        convert(source, tmp_path / "ds", workers=2)
    assert not (tmp_path / "ds" / "dataset.json").exists()
    result = convert(ImageFolder(root, check="decode"), tmp_path / "ds", workers=2,
                     on_error="skip")
    assert result.records == 600
    assert [Path(s["input"]).name for s in result.manifest.skipped] == ["0400x.jpg"]


def test_no_test_decode_or_re_encoding_does_not_take_threads(tmp_path):
    root = folder(tmp_path / "src", 3)
    for check in ("structure", "none"):
        assert ImageFolder(root, check=check).in_process
        assert not ImageFolder(root, check=check).threaded
    assert not ImageFolder(root, resize=8).threaded
    assert not ImageFolder(root, encoding="png").threaded


def test_reading_files_names_the_file(tmp_path):
    empty = tmp_path / "empty.jpg"
    empty.write_bytes(b"")
    with pytest.raises(SourceError, match=r"empty\.jpg: unreadable image"):
        load_image(str(empty))
    with pytest.raises(SourceError, match=r"missing\.jpg: No such file"):
        load_image(str(tmp_path / "missing.jpg"))
    (tmp_path / "dir.jpg").mkdir()
    with pytest.raises(SourceError, match=r"dir\.jpg: Is a directory"):
        load_image(str(tmp_path / "dir.jpg"))
    big = jpeg(1, (300, 400))  # several pages: read whole
    (tmp_path / "big.jpg").write_bytes(big)
    assert load_image(str(tmp_path / "big.jpg"))["bytes"] == big
