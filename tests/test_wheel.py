"""The built wheel ships what the installed package needs: every module under src/, the C/C++
headers and kernel source the tf.data ops are built from on first use (a wheel without them
would fall back to the slower TensorFlow ops on every machine), and the type marker."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

pytestmark = [pytest.mark.integration, pytest.mark.slow]


def test_the_wheel_holds_every_module_and_the_kernels_sources(tmp_path):
    done = subprocess.run([sys.executable, "-m", "pip", "wheel", str(ROOT), "--no-deps", "-q",
                           "-w", str(tmp_path)],
                          capture_output=True, text=True, timeout=600, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    (wheel,) = tmp_path.glob("tfrecordkit-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    package = ROOT / "src" / "tfrecordkit"
    modules = {f"tfrecordkit/{p.relative_to(package).as_posix()}" for p in package.rglob("*.py")
               if "__pycache__" not in p.parts}
    assert modules <= names, sorted(modules - names)[:5]
    needed = {"tfrecordkit/py.typed", "tfrecordkit/format/_crc32c.h",
              "tfrecordkit/format/_constants.h", "tfrecordkit/readers/tf_data/_read_frames.cc",
              "tfrecordkit/readers/tf_data/_crop_windows.cc",
              "tfrecordkit/readers/tf_data/_ops.h"}
    assert needed <= names, sorted(needed - names)
