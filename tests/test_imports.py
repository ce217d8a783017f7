"""The core imports no framework, and coexists with TensorFlow in either import order."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

HEAVY = ["tensorflow", "torch", "jax", "ray", "PIL", "soundfile", "pyarrow"]


def run(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=300, check=False,
                          env={"TF_CPP_MIN_LOG_LEVEL": "3", "PATH": "/usr/bin:/bin"})


def test_import_tfrecordkit_imports_no_framework():
    code = (
        "import sys, tfrecordkit, tfrecordkit.format, tfrecordkit.schema, tfrecordkit.cli\n"
        f"print([m for m in {HEAVY!r} if m in sys.modules])"
    )
    result = run(code)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"


def test_import_tfrecordkit_loads_the_packages_the_readme_names():
    """The README says which third-party packages ``import tfrecordkit`` loads: exactly
    these (msgspec brings typing_extensions)."""
    code = (
        "import sys\nbefore = set(sys.modules)\nimport tfrecordkit\n"
        "top = {m.split('.')[0] for m in set(sys.modules) - before}\n"
        "import json\nprint(json.dumps(sorted(t for t in top if t not in "
        "sys.stdlib_module_names and not t.startswith('_') and t != 'tfrecordkit')))"
    )
    result = run(code)
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == ["crc32c", "google", "msgspec", "numpy",
                                         "typing_extensions", "xxhash"]
    readme = (Path(__file__).parents[1] / "README.md").read_text()
    assert ("`import tfrecordkit` loads only NumPy, protobuf, crc32c, msgspec and xxhash"
            in " ".join(readme.split()))


@pytest.mark.slow  # ~11 s: imports every framework extra
def test_every_public_name_resolves_and_dir_lists_it():
    """``__all__`` (readers included) resolves, ``dir()`` shows it, and only using a reader
    imports its framework."""
    code = (
        "import sys, tfrecordkit as tk\n"
        "assert sorted(tk.__all__) == dir(tk), 'dir differs from __all__'\n"
        "light = [n for n in tk.__all__ if n not in tk._LAZY]\n"
        "[getattr(tk, n) for n in light]\n"
        f"print([m for m in {HEAVY!r} if m in sys.modules])\n"
        "tk.random_flip, tk.batch_hard_triplet_loss, tk.load_torch_dataset, tk.DecodeOptions\n"
        "print('tensorflow' in sys.modules)\n"
    )
    result = run(code)
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.split() == ["[]", "True"]


@pytest.mark.integration
@pytest.mark.parametrize("order", [("tensorflow", "tfrecordkit"), ("tfrecordkit", "tensorflow")])
def test_coexists_with_tensorflow(tf, order):
    code = (
        f"import {order[0]}\nimport {order[1]}\n"
        "import tensorflow as tf, tfrecordkit as t\n"
        "ex = tf.train.Example.FromString(t.encode_example({'a': 1}))\n"
        "assert t.decode_example(ex.SerializeToString())['a'].tolist() == [1]\n"
        "print('ok')"
    )
    result = run(code)
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.strip().endswith("ok")


def test_proto_descriptor_is_compiled_from_the_proto(tmp_path):
    pytest.importorskip("grpc_tools.protoc")
    from importlib import resources

    folder = resources.files("tfrecordkit.format._proto")
    out = tmp_path / "example.desc"
    # In a subprocess: protoc's C++ runtime and TensorFlow's must not share a process.
    subprocess.run([sys.executable, "-m", "grpc_tools.protoc", f"-I{folder}",
                    f"--descriptor_set_out={out}", str(folder / "example.proto")],
                   check=True, timeout=120)
    assert out.read_bytes() == folder.joinpath("example.desc").read_bytes(), (
        "example.desc is stale: run scripts/gen_proto"
    )


def test_no_module_imports_another_packages_private_module():
    grimp = pytest.importorskip("grimp")
    graph = grimp.build_graph("tfrecordkit")
    crossing = []
    for module in graph.modules:
        package = module.split(".")[1] if "." in module else ""
        for imported in graph.find_modules_directly_imported_by(module):
            parts = imported.split(".")
            if (parts[0] == "tfrecordkit" and len(parts) > 2 and parts[1] != package
                    and any(p.startswith("_") and not p.startswith("__") for p in parts[2:])):
                crossing.append(f"{module} -> {imported}")
    assert not crossing, "use the package's __all__ names instead: " + "; ".join(crossing)


def test_no_import_cycles_counting_function_level_and_type_checking_imports():
    """Every import counts (grimp sees those inside functions and under ``TYPE_CHECKING``):
    the modules form no cycle, so each can be read knowing only what it imports."""
    grimp = pytest.importorskip("grimp")
    graph = grimp.build_graph("tfrecordkit")
    edges = {m: graph.find_modules_directly_imported_by(m) for m in graph.modules}
    order: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    cycles: list[list[str]] = []

    def visit(module: str) -> None:  # Tarjan's strongly connected components
        order[module] = low[module] = len(order)
        stack.append(module)
        for other in edges[module]:
            if other not in order:
                visit(other)
                low[module] = min(low[module], low[other])
            elif other in stack:
                low[module] = min(low[module], order[other])
        if low[module] == order[module]:
            component = [stack.pop()]
            while component[-1] != module:
                component.append(stack.pop())
            if len(component) > 1:
                cycles.append(sorted(component))

    for module in sorted(graph.modules):
        if module not in order:
            visit(module)
    assert not cycles, "import cycles: " + "; ".join(" <-> ".join(c) for c in cycles)
