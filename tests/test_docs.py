"""The docs read where users look: docs/api.md's glance table is current (the signatures of
the entry points as they are), scripts/docs builds the site and says where it is, the
README's figures come from the bench results and its tour runs as copied."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

import tfrecordkit as tk

ROOT = Path(__file__).resolve().parent.parent

pytestmark = pytest.mark.integration  # the glance imports every reader, TensorFlow included


def test_the_api_glance_is_current():
    spec = importlib.util.spec_from_file_location("api_glance", ROOT / "scripts" / "api_glance.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    current = (ROOT / "docs" / "api.md").read_text()
    assert module.updated(current) == current, "run python scripts/api_glance.py"
    assert "`tk.show_examples(path, split='train', n=16, *, image=None" in current
    readme = (ROOT / "README.md").read_text()
    assert "scripts/docs" in readme and "build/site/index.html" in readme


def test_the_performance_page_is_rendered_from_the_bench_results():
    """docs/performance.md is what scripts/performance.py makes of bench/results/*.json: no
    figure there that no JSON backs."""
    spec = importlib.util.spec_from_file_location("performance",
                                                  ROOT / "scripts" / "performance.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert module.render() == (ROOT / "docs" / "performance.md").read_text(), (
        "run python scripts/performance.py")
    readme = (ROOT / "README.md").read_text()
    assert module.updated_readme(readme) == readme, "run python scripts/performance.py"
    assert readme.count("| `python bench/") == len(module.HEADLINES) == 7
    results = sorted(p.stem for p in (ROOT / "bench" / "results").glob("*.json"))
    assert {"random_access", "convert_folder", "first_batch", "photos", "append"} <= set(results)


def _readme_tour() -> str:
    readme = (ROOT / "README.md").read_text()
    start = readme.index("## A short tour")
    block = readme[readme.index("```python", start) + len("```python"):]
    return block[:block.index("```")]


@pytest.mark.slow
def test_the_readme_tour_runs_as_copied(tmp_path, monkeypatch):
    """The README's tour, copied into a folder holding what it names (photo class folders,
    files others wrote), runs and gives what it says; only the Ray line (a cluster and a
    bucket) is left out."""
    pytest.importorskip("tensorflow")
    pytest.importorskip("torch")
    pytest.importorskip("grain")
    pytest.importorskip("matplotlib")
    from tests.datasets import digits_folder, unlabelled_files

    digits_folder(tmp_path / "photos", limit_per_class=12)
    (tmp_path / "their_data").mkdir()
    unlabelled_files(tmp_path / "their_data")
    monkeypatch.chdir(tmp_path)
    code = "\n".join(line for line in _readme_tour().splitlines()
                     if 'engine="ray"' not in line)
    namespace: dict = {}
    exec(compile(code, "README.md tour", "exec"), namespace)

    batch = next(iter(namespace["loader"]))  # the glob's loader, the last one bound
    assert len(batch["caption"]) == 30  # 6 classes x 5 records, read by glob
    images = next(iter(namespace["ds"]))["image"]
    assert tuple(images.shape) == (64, 224, 224, 1)
    torch_batch = next(iter(namespace["torch_ds"]))
    assert tuple(torch_batch["image"].shape) == (64, 224, 224, 1)
    assert namespace["source"][0]["image"].shape == (224, 224, 1)
    pk = next(iter(namespace["pk"]))
    assert len(set(pk["label"].numpy().tolist())) == 8 and pk["label"].shape[0] == 32
    assert (tmp_path / "their_data" / "dataset.json").exists()
    assert (tmp_path / "grid.png").stat().st_size > 0
    manifest = tk.load_manifest(tmp_path / "photos_ds")
    tenth = round(manifest.num_records("train") / 10)
    assert len(namespace["small"].records) == tenth + manifest.num_records("val")
    mixed = namespace["mixed"]
    counts = mixed.mix.counts(0, 0)
    assert sum(counts.values()) == manifest.num_records("train") + manifest.num_records("val")
    assert counts["photos_ds[train]"] > 5 * counts["photos_ds[val]"]
    assert len(next(iter(mixed))["__id"]) == 64
    assert sorted(p.name for p in (tmp_path / "photos_wds").iterdir()) == [
        ".tfrecordkit-export.json", "train-000000.tar", "val-000000.tar"]  # marker, shards
    assert "<html" in (tmp_path / "report.html").read_text()[:200].lower()


def test_the_guides_table_of_public_names_lists_every_one():
    """docs/guide.md's "Every public name, by job" table: each name of ``tk.__all__`` once,
    and nothing that is not one."""
    import re

    import tfrecordkit as tk

    guide = (Path(__file__).parents[1] / "docs" / "guide.md").read_text()
    start = guide.index("| job | names |")
    table = guide[start : guide.index("\n\n", start)]
    named = re.findall(r"`([A-Za-z_][A-Za-z0-9_]*)`", table)
    assert sorted(set(named)) == sorted(tk.__all__)
    assert len(named) == len(set(named))
