"""Every script in examples/ runs to the end on the data it makes, in a subprocess, and prints
what it promises (accuracies above chance, readers agreeing)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"

pytestmark = [pytest.mark.integration, pytest.mark.slow]

# script -> (extra arguments, what its output must show)
EXPECTED = {
    "adopt_class_files.py": ([], r"adopted 20 files, 1437 \+ 360 records, layout per_class; "
                                 r"label ClassLabel\(.*from_shard=True\)"
                                 r"[\s\S]*held-out files: [\d.]+ before training, "
                                 r"0\.9\d after"),
    "quickstart.py": ([], r"pixels identical to the source"),
    "coco_grow_and_train.py": ([], r"week 2 appended 60 images \(1 already there\), categories "
                                   r"now \['red box', 'blue box', 'green box'\] with COCO ids "
                                   r"\[1, 2, 3\][\s\S]*held-out per-category accuracy [\d.]+ "
                                   r"before training, (0\.[7-9]\d|1\.00) after"),
    "detection_coco.py": ([], r"24 images, \d+ boxes in 2 files[\s\S]*largest difference "
                              r"from the annotations 0\.00\d\d px[\s\S]*tf\.data gives the "
                              r"same boxes for 24 of 24 images"),
    "imagenet_recipe_torch.py": (["8"], r"random-resized-crop \+ flip; held-out accuracy "
                                        r"[\d.]+ before training, (0\.[89]\d|1\.00) after"),
    "triplet_digits.py": (["2"], r"accuracy on held-out digits: [\d.]+ before training"),
    "triplet_many_classes.py": (["1"], r"1,200 classes x 6 images in 2,400 per-class shards"
                                    r"[\s\S]*triplet loss per epoch"),
    "text_classification.py": ([], r"held-out accuracy 0\.[3-9]\d"),
    "variable_size_images.py": ([], r"every crop is unchanged"),
    "multimodal_records.py": ([], r"accuracy on 12 held-out clips (0\.[6-9]\d|1\.00)"
                                  r"[\s\S]*tf.data gives the same"),
}


def test_every_example_is_listed():
    assert sorted(p.name for p in EXAMPLES.glob("*.py")) == sorted(EXPECTED)


@pytest.mark.parametrize("script", sorted(EXPECTED))
def test_example_runs(script, tmp_path):
    pytest.importorskip("tensorflow")
    args, expected = EXPECTED[script]
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"}
    done = subprocess.run([sys.executable, str(EXAMPLES / script), str(tmp_path), *args],
                          capture_output=True, text=True, timeout=600, env=env,
                          check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    assert re.search(expected, done.stdout), done.stdout[-3000:]
