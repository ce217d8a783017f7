"""A tf.data iterator saved with ``tf.train.Checkpoint`` after k steps and restored in a fresh
process continues the uninterrupted run: every batch of the rest of the epoch and of the next
one, in every sampling mode (finite: each iteration the next epoch), with random crops too
(the epoch number lived in a variable counted again by the restore: the epoch's last batch
took the next epoch's records, and a finite pipeline raised "expected to contain 13
elements")."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

import tfrecordkit as tk
from tests.datasets import digits_folder

pytestmark = pytest.mark.integration

SCRIPT = r"""
import json, sys
import numpy as np
import tensorflow as tf
import tfrecordkit as tk

path, mode, where, sampling, repeat, crops = sys.argv[1:7]
repeat, crops = repeat == "1", crops == "1"
samplings = {"shuffled": tk.Shuffled(), "exact": tk.Shuffled(exact=True),
             "inorder": tk.InOrder(), "pk": tk.PK(2, 3), "triplets": tk.Triplets()}
options = tk.DecodeOptions(image_size=6, crop="random", flip=True) if crops else None


def dataset():  # a new one each time: nothing carried over but the checkpoint
    return tk.load_tf_dataset(path, batch_size=None if sampling == "pk" else 6,
                              sampling=samplings[sampling], seed=3, repeat=repeat,
                              options=options)


def values(batch):
    part = batch["anchor"] if sampling == "triplets" else batch
    out = part["label"].numpy().tolist()
    if crops:
        out = [out, float(part["image"].numpy().astype(np.float64).sum())]
    return out


steps = dataset().steps_per_epoch
ks = sorted({1, steps // 2, steps - 1})
out = {}
if mode == "save":  # the uninterrupted run, then each k's first batches and checkpoint
    ds = dataset()
    it = iter(ds)
    out["whole"] = ([values(next(it)) for _ in range(2 * steps)] if repeat else
                    [values(b) for b in it] + [values(b) for b in ds])
    for k in ks:
        it = iter(dataset())
        out[k] = [values(next(it)) for _ in range(k)]
        tf.train.Checkpoint(iterator=it).write(f"{where}/it{k}")
else:  # in a fresh process: each checkpoint restored into a new pipeline, read to the end
    for k in ks:
        ds = dataset()
        it = iter(ds)
        tf.train.Checkpoint(iterator=it).read(f"{where}/it{k}").assert_consumed()
        out[k] = ([values(next(it)) for _ in range(2 * steps - k)] if repeat else
                  [values(b) for b in it] + [values(b) for b in ds])
print(json.dumps(out))
"""


@pytest.fixture(scope="module")
def digits(tmp_path_factory):
    root = tmp_path_factory.mktemp("restore")
    digits_folder(root / "src", limit_per_class=8)
    tk.convert(root / "src", root / "ds", shards=tk.ShardOptions(layout="per_class"),
               workers=1)
    return root / "ds"


def _run(tmp_path, digits, mode, sampling, repeat, crops) -> dict:
    script = tmp_path / "run.py"
    script.write_text(SCRIPT)
    done = subprocess.run([sys.executable, str(script), str(digits), mode, str(tmp_path),
                           sampling, str(int(repeat)), str(int(crops))],
                          capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize(("sampling", "repeat", "crops"), [
    ("shuffled", False, False), ("inorder", False, True), ("pk", False, False),
    ("triplets", False, False)])  # finite: one epoch an iteration, the counted kind
def test_a_restored_iterator_continues_the_uninterrupted_run(digits, tmp_path, sampling,
                                                             repeat, crops):
    saved = _run(tmp_path, digits, "save", sampling, repeat, crops)
    restored = _run(tmp_path, digits, "load", sampling, repeat, crops)
    whole = saved.pop("whole")
    assert len(saved) >= 2
    for k, head in saved.items():
        assert head + restored[k] == whole, (k, len(whole) // 2)
