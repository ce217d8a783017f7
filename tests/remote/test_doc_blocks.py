"""Every Python block of README.md and docs/*.md runs in the test suite: here (the Ray and
object-storage pages, on a local Ray cluster and moto's S3 server), or in the test named for
it below; a block that cannot run here says why in an HTML comment just before it
(``<!-- not run: ... -->``)."""

from __future__ import annotations

import re
import textwrap
from pathlib import Path

import numpy as np
import pytest

import tfrecordkit as tk
from tests.datasets import encode_image

ROOT = Path(__file__).resolve().parents[2]
BLOCK = re.compile(r"(?:<!-- not run: (?P<why>[^>]+?) -->\s*\n)?```python\n(?P<code>.*?)```",
                   re.DOTALL)

#: Blocks run by another test: (file, block number in it) -> that test.
ELSEWHERE = {
    ("README.md", 0): "tests/test_docs.py::test_the_readme_tour_runs_as_copied",
    ("docs/guide.md", 0): "tests/remote/test_guide_tour.py::test_the_guide_code_runs_as_written",
    ("docs/guide.md", 1): "tests/remote/test_guide_tour.py::test_the_guide_code_runs_as_written",
    ("docs/guide.md", 2): ("tests/convert/test_append.py::"
                           "test_the_guides_growing_a_dataset_block_runs_as_written"),
}
#: Blocks this module runs.
HERE = {("docs/ray.md", 0), ("docs/ray.md", 1), ("docs/remote.md", 0), ("docs/loaders.md", 0),
        ("docs/loaders.md", 1), ("docs/export.md", 0)}


def blocks() -> dict[tuple[str, int], tuple[str, str | None]]:
    """Every Python block: (file, number) -> (code, why it is not run, if it says)."""
    out = {}
    for path in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]:
        name = str(path.relative_to(ROOT))
        for number, match in enumerate(BLOCK.finditer(path.read_text())):
            out[(name, number)] = (textwrap.dedent(match.group("code")), match.group("why"))
    return out


def test_every_python_block_is_run_or_says_why():
    found = blocks()
    assert len(found) >= 8
    for where, (_, why) in found.items():
        if where in HERE:
            continue
        if where in ELSEWHERE:
            file, _, test = ELSEWHERE[where].partition("::")
            assert f"def {test}(" in (ROOT / file).read_text(), where
            continue
        assert why, f"{where}: a Python block no test runs, and no '<!-- not run: why -->'"
    assert not set(ELSEWHERE) - set(found) and not HERE - set(found)


def test_the_loaders_pages_mix_runs_as_written(tmp_path, monkeypatch):
    """Its first block mixes two datasets whose class names differ."""
    monkeypatch.chdir(tmp_path)
    code = blocks()[("docs/loaders.md", 0)][0]
    names: dict = {}
    exec(compile(code, "docs/loaders.md block 0", "exec"), names)
    loader, sources = names["loader"], names["sources"]
    assert loader.decoder.schema.class_names("label") == ["cat", "dog", "fox"]
    assert sum(names["counts"].values()) == 1100 and set(sources.tolist()) == {0, 1}
    curated = names["batch"]["label"][sources == 1]
    x = names["batch"]["x"][sources == 1]
    assert (x[:, 0] <= 0).all() and set(curated.tolist()) <= {1, 2}  # dog, fox


def test_the_loaders_page_runs_as_written(tmp_path, monkeypatch):
    """Its block writes SequenceExamples (the page's names: numpy as np, tfrecordkit as tk)."""
    monkeypatch.chdir(tmp_path)
    code = blocks()[("docs/loaders.md", 1)][0]
    exec(compile(code, "docs/loaders.md block 1", "exec"), {"np": np, "tk": tk})
    batch = next(iter(tk.load_numpy_dataset("clips_ds", batch_size=1)))
    assert batch["frames"]["values"].shape == (1, 30, 128)


def test_the_export_page_runs_as_written(tmp_path, monkeypatch):
    """Its block writes a small dataset, exports it to Parquet and reads it back with
    ``datasets``."""
    pytest.importorskip("datasets")
    monkeypatch.chdir(tmp_path)
    code = blocks()[("docs/export.md", 0)][0]
    exec(compile(code, "docs/export.md block 0", "exec"), {})
    assert sorted(p.name for p in (tmp_path / "pets_parquet").iterdir()) == [
        ".tfrecordkit-export.json", "train-00000-of-00001.parquet"]  # the marker, the file


@pytest.mark.xdist_group("ray")  # one Ray cluster at a time
@pytest.mark.integration
@pytest.mark.slow
def test_the_ray_and_object_storage_pages_run_as_written(s3_server, tmp_path, monkeypatch):
    ray = pytest.importorskip("ray")
    pytest.importorskip("torch")
    pytest.importorskip("tensorflow")
    import pyarrow as pa
    import pyarrow.parquet as pq
    import s3fs

    monkeypatch.chdir(tmp_path)
    rng = np.random.default_rng(0)
    for c in range(20):  # PK(16, 4) needs at least 16 classes
        (tmp_path / "photos" / f"class_{c:02d}").mkdir(parents=True)
        for i in range(4):
            pixels = rng.integers(0, 255, (12, 12, 3), dtype=np.uint8)
            (tmp_path / "photos" / f"class_{c:02d}" / f"{i}.png").write_bytes(
                encode_image(pixels, "PNG"))
    fs = s3fs.S3FileSystem()
    for bucket in ("bucket", "my-bucket"):  # the server is shared: emptied again below
        fs.makedirs(bucket, exist_ok=True)
    rows = pa.table({"path": [f"img_{i}.png" for i in range(30)],
                     "score": np.linspace(0, 1, 30).astype(np.float32),
                     "label": [i % 2 for i in range(30)]})
    with fs.open("bucket/table/part-0.parquet", "wb") as f:
        pq.write_table(rows, f)
    found = blocks()
    namespace: dict = {}
    try:
        try:
            for where in sorted(HERE - {("docs/loaders.md", 0)}):
                code = found[where][0]
                if where == ("docs/remote.md", 0):
                    # gs:// goes through TensorFlow's own GCS reader: no stand-in here.
                    code = code.replace("gs://", "s3://")
                exec(compile(code, f"{where[0]} block {where[1]}", "exec"), namespace)
        finally:
            if ray.is_initialized():
                ray.shutdown()
        self_check(namespace)
    finally:
        for bucket in ("bucket", "my-bucket"):
            fs.rm(bucket, recursive=True)
        fs.invalidate_cache()


def self_check(namespace: dict) -> None:
    """What the pages' blocks made is what they say."""
    assert namespace["ds"] is not None
    assert tk.load_manifest("s3://bucket/photos_ds").layout == "per_class"
    table = tk.load_manifest("s3://bucket/table_ds")
    assert table.splits["train"].records == 30 and table.layout == "per_class"
    assert next(iter(namespace["loader"]))["image"].shape[0] == 64
    assert len(next(iter(namespace["pk"]))["label"]) == 64
