"""tf.data with random crops and flips: an iterator's checkpoint (``tf.train.Checkpoint``)
saves and restores where it was, its crop epoch included, so a restore in another process
continues with the same pixels; and processes that stop mid-epoch exit (per-record Python calls
in flight at exit hung one in two before the windows moved in-graph)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import tfrecordkit as tk
from tests.datasets import digits_folder

pytestmark = pytest.mark.integration

OPTIONS = "tk.DecodeOptions(image_size=16, crop='random', flip=True)"
CROPS = tk.DecodeOptions(image_size=16, crop="random", flip=True)  # OPTIONS, here
SCRIPT = """
import sys
import numpy as np
import tensorflow as tf
import tfrecordkit as tk

path, mode, where = sys.argv[1], sys.argv[2], sys.argv[3]
# In order: records not read yet at the save are read, and tagged, after the restore.
ds = tk.load_tf_dataset(path, batch_size=8, sampling=tk.InOrder(), options={options})
if mode == "save":
    for _ in ds:  # epoch 0; the next iterator cuts epoch 1's windows
        pass
    it = iter(ds)
    next(it)
    tf.train.Checkpoint(iterator=it).write(where + "/it")
    np.save(where + "/want.npy", np.stack([next(it)["image"].numpy() for _ in range(3)]))
elif mode == "load":
    it = iter(ds)
    tf.train.Checkpoint(iterator=it).read(where + "/it").assert_consumed()
    np.save(where + "/got.npy", np.stack([next(it)["image"].numpy() for _ in range(3)]))
else:  # stop mid-epoch and exit
    it = iter(ds)
    next(it)
print("exiting", flush=True)
"""


@pytest.fixture(scope="module")
def digits(tmp_path_factory):
    root = tmp_path_factory.mktemp("digits")
    digits_folder(root / "src", limit_per_class=30)
    tk.convert(root / "src", root / "ds")
    return root / "ds"


@pytest.fixture(scope="module")
def jpeg_digits(tmp_path_factory):
    """The digits as JPEGs: their windows are computed a batch at a time, from the headers."""
    from PIL import Image

    root = tmp_path_factory.mktemp("jpeg_digits")
    for path, pixels in digits_folder(root / "png", limit_per_class=30).items():
        target = root / "src" / Path(path).parent.name / (Path(path).stem + ".jpg")
        target.parent.mkdir(parents=True, exist_ok=True)
        Image.fromarray(np.kron(pixels, np.ones((4, 4), np.uint8))).save(target, quality=90)
    tk.convert(root / "src", root / "ds")
    return root / "ds"


def _run(digits: Path, tmp_path: Path, mode: str) -> subprocess.Popen:
    script = tmp_path / "run.py"
    script.write_text(SCRIPT.format(options=OPTIONS))
    return subprocess.Popen([sys.executable, str(script), str(digits), mode, str(tmp_path)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def test_save_and_restore_in_one_process_continue_with_the_same_pixels(digits, tmp_path):
    tf = pytest.importorskip("tensorflow")
    ds = tk.load_tf_dataset(digits, batch_size=8, sampling=tk.InOrder(), options=CROPS)
    for _ in ds:
        pass
    it = iter(ds)
    next(it)
    checkpoint = tf.train.Checkpoint(iterator=it)
    saved = checkpoint.save(str(tmp_path / "ck"))
    want = [next(it)["image"].numpy() for _ in range(3)]
    for _ in range(2):
        next(it)  # move on, then go back
    checkpoint.restore(saved)
    got = [next(it)["image"].numpy() for _ in range(3)]
    assert all((a == b).all() for a, b in zip(want, got, strict=True))


def test_a_restore_in_another_process_keeps_the_crop_epoch(digits, tmp_path):
    """The save failed before ("ReadVariableOp is stateful"); restored in a fresh process
    without the saved epoch, the records read after it would be cut as epoch 0's."""
    for mode in ("save", "load"):
        process = _run(digits, tmp_path, mode)
        _, err = process.communicate(timeout=300)
        assert process.returncode == 0, err[-2000:]
    want, got = np.load(tmp_path / "want.npy"), np.load(tmp_path / "got.npy")
    assert want.shape == (3, 8, 16, 16, 1) and (want == got).all()


@pytest.mark.slow
@pytest.mark.parametrize("encoding", ["png", "jpeg"])
def test_processes_stopped_mid_epoch_all_exit(encoding, request, tmp_path):
    path = request.getfixturevalue("digits" if encoding == "png" else "jpeg_digits")
    processes = []
    for k in range(4):  # before, one in two hung: 4 a format, 8 in all
        (tmp_path / str(k)).mkdir()
        processes.append(_run(path, tmp_path / str(k), "stop"))
    hung = 0
    for process in processes:
        try:
            process.communicate(timeout=300)
        except subprocess.TimeoutExpired:
            hung += 1
            process.kill()
            process.communicate()
        else:
            assert process.returncode == 0
    assert hung == 0


def test_exit_waits_until_tf_data_stops_asking_for_calls(monkeypatch):
    """Calls refused at exit still count as asked: tf.data's threads ask until their buffers
    are full, and one asking after exit went on would wait for the GIL that finalization
    holds. On a clock of its own: the pipeline asks during exit's first second."""
    from tfrecordkit.readers.tf_data import _exit

    calls = _exit._Calls()
    refused = []

    class Clock:
        now = 100.0

        @classmethod
        def monotonic(cls) -> float:
            return cls.now

        @classmethod
        def sleep(cls, seconds: float) -> None:
            cls.now += seconds
            if cls.now < 101.0:  # a pipeline thread asks for a call meanwhile
                try:
                    calls.enter()
                except RuntimeError:
                    refused.append(cls.now)

    monkeypatch.setattr(_exit, "time", Clock)
    calls.enter()  # the last call before exit
    calls.leave()
    calls.drain()
    assert refused and calls.closing and calls.running == 0
    assert Clock.now >= max(refused) + _exit._Calls.QUIET  # not at the first quiet moment
