"""Two appends racing: long-lived child processes that append a folder to a dataset when told
(after a delay), so many offsets between two writers cost no process start each."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import tfrecordkit as tk
from tests.datasets import encode_image

_CHILD = r"""
import json, sys, time
import tfrecordkit as tk
print("ready", flush=True)
for line in sys.stdin:
    dataset, folder, delay = line.split()
    time.sleep(float(delay))
    try:
        result = tk.append(dataset, folder, workers=1)
        print(json.dumps({"added": result.added}), flush=True)
    except tk.DatasetError as err:
        print(json.dumps({"refused": str(err)}), flush=True)
"""


class Appender:
    """A child process that appends when told; ``env`` for its storage (S3 variables, its own
    staging folder)."""

    def __init__(self, env: dict[str, str] | None = None) -> None:
        self.process = subprocess.Popen([sys.executable, "-c", _CHILD], stdin=subprocess.PIPE,
                                        stdout=subprocess.PIPE, text=True, env=env)
        assert self.process.stdout is not None and self.process.stdout.readline() == "ready\n"

    def start(self, dataset: str, folder: Path, delay: float) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(f"{dataset} {folder} {delay}\n")
        self.process.stdin.flush()

    def result(self) -> dict[str, object]:
        assert self.process.stdout is not None
        line = self.process.stdout.readline()
        assert line, "the appending process died"
        return json.loads(line)

    def close(self) -> None:
        assert self.process.stdin is not None
        self.process.stdin.close()
        self.process.wait(timeout=60)
        if self.process.stdout is not None:
            self.process.stdout.close()


def image_folder(root: Path, prefix: str, count: int, seed: int) -> set[str]:
    """``count`` small PNGs in two class folders, named ``<prefix><i>.png``; their keys."""
    import numpy as np

    rng = np.random.default_rng(seed)
    keys = set()
    for i in range(count):
        klass = str(i % 2)
        (root / klass).mkdir(parents=True, exist_ok=True)
        pixels = rng.integers(0, 256, (6, 6, 3), dtype=np.uint8)
        (root / klass / f"{prefix}{i}.png").write_bytes(encode_image(pixels, "png"))
        keys.add(f"{klass}/{prefix}{i}.png")
    return keys


def stored_keys(dataset: str) -> list[str]:
    """Every record's key (its input's path under the folder converted), as read back."""
    keys = []
    for split in tk.load_manifest(dataset).splits:
        for batch in tk.load_numpy_dataset(dataset, split=split, batch_size=64,
                                           sampling=tk.InOrder(),
                                           options=tk.DecodeOptions(provenance=True)):
            keys += [s.decode() if isinstance(s, bytes) else str(s) for s in batch["__source"]]
    return keys


def copy_dataset(source: Path, target: Path) -> str:
    shutil.copytree(source, target)
    return str(target)
