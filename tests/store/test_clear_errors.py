"""What a user reads when they point a reader at the wrong thing: a folder left by an
interrupted conversion, a file that is no TFRecord file (an image, a table, an array), TFX's
output folder."""

from __future__ import annotations

import gzip
import io
import os
import signal
import subprocess
import sys

import numpy as np
import pytest

import tfrecordkit as tk

KILLED = """
import sys, numpy as np, tfrecordkit as tk
schema = tk.Schema({"x": tk.Tensor((512,), "float32")})
def rows():
    for i in range(10**9):
        if i == 2000:
            print("spilling", flush=True)
        yield {"x": np.full(512, i, np.float32)}
tk.write_dataset(rows(), sys.argv[1], schema, progress=False)
"""


def test_a_folder_left_by_a_killed_conversion_says_so_and_how_to_resume(tmp_path):
    out = tmp_path / "ds"
    with subprocess.Popen([sys.executable, "-c", KILLED, str(out)], stdout=subprocess.PIPE,
                          text=True) as proc:
        assert proc.stdout is not None
        assert proc.stdout.readline().strip() == "spilling"
        os.kill(proc.pid, signal.SIGKILL)
    assert not (out / "dataset.json").exists()
    for read in (lambda: tk.load_numpy_dataset(out, batch_size=4),
                 lambda: tk.open_split(out), lambda: tk.load_manifest(out)):
        with pytest.raises(tk.DatasetError, match=r"did not finish.*run the same conversion "
                                                  r"again to resume"):
            read()


def _png() -> bytes:
    from PIL import Image

    buffer = io.BytesIO()
    Image.fromarray(np.zeros((16, 16, 3), np.uint8)).save(buffer, format="PNG")
    return buffer.getvalue()


def _npy() -> bytes:
    buffer = io.BytesIO()
    np.save(buffer, np.arange(100))
    return buffer.getvalue()


@pytest.mark.parametrize(("content", "looks"), [
    (_png(), "a PNG image"),
    (b"id,x,label\n" + b"".join(b"%d,%d,%d\n" % (i, i, i % 2) for i in range(40)),
     r"text \(CSV, JSON or similar\)"),
    (_npy(), r"a NumPy \.npy file"),
    (bytes(np.random.default_rng(0).integers(0, 256, 4096, dtype=np.uint8)), None),
])
def test_a_file_that_is_no_tfrecord_file_is_named_as_such(tmp_path, content, looks):
    path = tmp_path / "data.tfrecord"
    path.write_bytes(content)
    for read in (lambda: list(tk.read_records(path)),
                 lambda: tk.load_numpy_dataset(str(path), batch_size=4)):
        with pytest.raises(tk.TFRecordKitError, match="not a TFRecord file") as caught:
            read()
        assert str(path) in str(caught.value)
        if looks:
            assert caught.match(f"looks like {looks}")


def test_tfx_output_folders_are_found_and_adopted(tmp_path):
    folder = tmp_path / "Split-train"
    folder.mkdir()
    for part in range(2):
        with tk.RecordWriter(folder / f"data_tfrecord-0000{part}-of-00002.gz", "gzip") as w:
            for i in range(5):
                w.write(tk.encode_example({"x": [float(i + 10 * part)]}))
    manifest = tk.adopt(folder, tmp_path / "adopted")
    assert manifest.num_records("train") == 10
    batch = next(iter(tk.load_numpy_dataset(tmp_path / "adopted", batch_size=10,
                                            sampling=tk.InOrder())))
    assert sorted(batch["x"].tolist()) == sorted(float(i + 10 * p) for p in range(2)
                                                 for i in range(5))
    assert gzip.decompress((folder / "data_tfrecord-00000-of-00002.gz").read_bytes())


def test_a_corrupt_record_read_by_offset_names_its_index_in_the_file(tmp_path):
    schema = tk.Schema({"x": tk.Tensor((64,), "float32")})
    tk.write_dataset([{"x": np.full(64, i, np.float32)} for i in range(100)], tmp_path / "ds",
                     schema, shards=tk.ShardOptions(shuffle=False), progress=False)
    (shard,) = (tmp_path / "ds").glob("*.tfrecord")
    offsets = [int(line.split()[0]) for line in
               (tmp_path / "ds" / f"{shard.name}.index").read_text().splitlines()]
    data = bytearray(shard.read_bytes())
    data[offsets[37] + 20] ^= 0xFF  # inside record 37's data
    shard.write_bytes(bytes(data))
    for read in (lambda: list(tk.load_numpy_dataset(tmp_path / "ds", batch_size=10)),
                 lambda: tk.open_split(tmp_path / "ds")[37]):
        with pytest.raises(tk.CorruptRecordError, match=rf"{shard.name}: record 37 at byte "
                                                        rf"offset {offsets[37]}: data crc"):
            read()
