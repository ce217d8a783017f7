"""Same-run A/B of a bench script between two source trees (e.g. the previous commit in a git
worktree and this one): runs ``bench/<script>.py`` alternately under each tree's ``src`` and
prints, for every throughput figure the script prints, the medians and new/old ratio.

    git worktree add /tmp/base <commit> && (cd /tmp/base && python setup.py build_ext --inplace)
    python bench/ab.py /tmp/base . codec --rounds 3 -- --records 50000 --runs 3

Across an API change, ``--own-script`` runs each tree's own ``bench/<script>.py`` (the same
workload written against each tree's API) instead of this tree's.

The script's own data directory is shared (written once, by the warm-up run), so both trees
read the same files. Figures are the numbers of at least 100 on each output line (rates);
a line is identified by its text with the numbers taken out (and, when a later table repeats
it, by which occurrence it is). Each run's CPU seconds (user + system, the script and its
children) are compared too: the workload is the same in both trees, so a change in it is ours.
"""

from __future__ import annotations

import argparse
import os
import re
import resource
import statistics
import subprocess
import sys
from pathlib import Path

_NUMBER = re.compile(r"\d[\d,]*\.?\d*")


def _figures(output: str) -> dict[tuple[str, int], float]:
    found = {}
    seen: dict[str, int] = {}
    for line in output.splitlines():
        numbers = [float(n.replace(",", "")) for n in _NUMBER.findall(line)]
        key = " ".join(_NUMBER.sub("#", line).split())  # widths vary with the values
        seen[key] = seen.get(key, 0) + 1
        if seen[key] > 1:  # the same row in another table of the output: keep both
            key = f"{key} (table {seen[key]})"
        for i, value in enumerate(numbers):
            if value >= 100:
                found[(key, i)] = value
    return found


_CPU = ("CPU seconds of the whole run (the script and its children)", 0)


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _run(tree: Path, script: Path, args: list[str]) -> dict[tuple[str, int], float]:
    env = {**os.environ, "PYTHONPATH": str(tree / "src"), "TF_CPP_MIN_LOG_LEVEL": "3"}
    before = _children_cpu()
    result = subprocess.run([sys.executable, str(script), *args], capture_output=True,
                            text=True, env=env, check=True, timeout=3600)
    return {**_figures(result.stdout), _CPU: _children_cpu() - before}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("old", type=Path, help="the baseline tree (its src/ is imported)")
    parser.add_argument("new", type=Path, help="the tree under test")
    parser.add_argument("script", help="a bench script name, e.g. codec")
    parser.add_argument("--rounds", type=int, default=3, help="alternating runs of each tree")
    parser.add_argument("--json", metavar="FILE", help="also write the medians and ratios here")
    parser.add_argument("--own-script", action="store_true",
                        help="run each tree's own bench/<script>.py (across an API change)")
    argv = sys.argv[1:]
    script_args = argv[argv.index("--") + 1:] if "--" in argv else []
    argv = argv[: argv.index("--")] if "--" in argv else argv
    options = parser.parse_args(argv)
    options.args = script_args
    here = Path(__file__).resolve().parent / f"{options.script}.py"

    def script_of(tree: Path) -> Path:
        return tree / "bench" / f"{options.script}.py" if options.own_script else here

    _run(options.new.resolve(), script_of(options.new.resolve()), options.args)  # warm-up
    runs: dict[str, list[dict[tuple[str, int], float]]] = {"old": [], "new": []}
    for _ in range(options.rounds):
        for name in ("old", "new"):
            tree = getattr(options, name).resolve()
            runs[name].append(_run(tree, script_of(tree), options.args))
    keys = [k for k in runs["new"][0] if all(k in r for rs in runs.values() for r in rs)]
    print(f"{options.script}: medians of {options.rounds} alternating runs; old = "
          f"{options.old}, new = {options.new}")
    figures = {}
    for key in keys:
        old = statistics.median(r[key] for r in runs["old"])
        new = statistics.median(r[key] for r in runs["new"])
        label = key[0] if len(key[0]) < 70 else key[0][:67] + "..."
        digits = 1 if key == _CPU else 0  # lower is better there
        print(f"  {label} [#{key[1]}]: old {old:,.{digits}f}  new {new:,.{digits}f}  "
              f"new/old {new / old:.2f}x")
        figures[f"{label} [#{key[1]}]"] = {"old": old, "new": new}
    if options.json:
        from _results import write_results

        write_results(options.json, f"ab {options.script}", old=str(options.old),
                      new=str(options.new), rounds=options.rounds, script_args=options.args,
                      medians=figures, ratios={k: v["new"] / v["old"] for k, v in figures.items()})


if __name__ == "__main__":
    main()
