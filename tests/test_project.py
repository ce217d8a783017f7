"""The project's history and contributor path hold their form: the changelog is Keep a
Changelog's (release sections, the four change types, one line per change), every moved loader
keyword has its row in docs/migration.md and its refusal points there, the version has one
source, and scripts/test does what its modes say."""

from __future__ import annotations

import importlib.metadata
import re
import tomllib
from pathlib import Path

import pytest

import tfrecordkit as tk
from tfrecordkit.errors import OptionError
from tfrecordkit.readers._modes import MOVED_KEYWORDS

ROOT = Path(__file__).resolve().parent.parent
CHANGE_TYPES = {"Added", "Changed", "Deprecated", "Removed", "Fixed", "Security"}


def _releases(text: str) -> dict[str, dict[str, list[str]]]:
    """``{release: {change type: [entries]}}`` of a Keep a Changelog file; anything else
    in a release section fails."""
    releases: dict[str, dict[str, list[str]]] = {}
    release = kind = None
    for number, line in enumerate(text.splitlines(), 1):
        if match := re.fullmatch(r"## \[([^\]]+)\]( - \d{4}-\d{2}-\d{2})?", line):
            release, kind = match.group(1), None
            assert release not in releases, f"line {number}: {release} twice"
            assert release == "Unreleased" or match.group(2), f"line {number}: no date"
            releases[release] = {}
        elif line.startswith("### "):
            assert release is not None, f"line {number}: a change type outside a release"
            kind = line[4:]
            assert kind in CHANGE_TYPES, f"line {number}: {kind!r} is not a change type"
            releases[release][kind] = []
        elif line.startswith("- "):
            assert release is not None and kind is not None, f"line {number}: {line[:40]}"
            releases[release][kind].append(line)
        elif line.startswith("|"):
            raise AssertionError(f"line {number}: a table (migration rows go to "
                                 "docs/migration.md, figures to bench/results)")
        elif kind is not None:  # one line per change: no continuation lines
            assert not line.strip(), f"line {number}: an entry spans lines: {line[:60]!r}"
    return releases


def test_the_changelog_is_keep_a_changelog_with_the_first_release_named():
    releases = _releases((ROOT / "CHANGELOG.md").read_text())
    assert list(releases)[:2] == ["Unreleased", "0.1.0"]
    assert all(entries for kinds in releases.values() for entries in kinds.values())
    assert {"Added", "Changed", "Removed", "Fixed"} <= set(releases["Unreleased"])
    text = (ROOT / "CHANGELOG.md").read_text()
    assert "2dafdb6" in text and "rec/s" not in text and "pytest" not in text


def test_the_changelog_parser_refuses_what_the_form_does_not_allow():
    with pytest.raises(AssertionError, match="not a change type"):
        _releases("## [Unreleased]\n\n### Migration\n")
    with pytest.raises(AssertionError, match="spans lines"):
        _releases("## [Unreleased]\n\n### Fixed\n\n- a change\n  continued\n")
    with pytest.raises(AssertionError, match="a table"):
        _releases("## [Unreleased]\n\n### Fixed\n\n| before | now |\n")
    with pytest.raises(AssertionError, match="no date"):
        _releases("## [0.1.0]\n")


def test_every_moved_keyword_has_its_migration_row_and_its_refusal_points_there(tmp_path):
    page = (ROOT / "docs" / "migration.md").read_text()
    missing = [k for k in MOVED_KEYWORDS if not re.search(rf"\b{k}\b", page)]
    assert not missing, f"docs/migration.md lacks {missing}"
    assert "migration.md" in (ROOT / "mkdocs.yml").read_text()
    with pytest.raises(OptionError, match=r"rank= any more: use partition=.*docs/migration\.md"):
        tk.load_numpy_dataset(tmp_path, batch_size=2, rank=0)


def test_the_version_has_one_source_and_follows_the_first_release():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert "version" not in project and "version" in project["dynamic"]
    assert importlib.metadata.version("tfrecordkit") == tk.__version__
    assert tk.__version__ != "0.1.0" and tk.__version__.startswith("0.2.0")


def test_scripts_test_names_its_modes_and_ci_runs_the_readme_command():
    script = (ROOT / "scripts" / "test").read_text()
    for mode in ("--quick", "--lint", "--pure"):
        assert f"  {mode})" in script, mode
    assert "exec bash scripts/test\n" in (ROOT / ".ci" / "run").read_text()
    readme = (ROOT / "README.md").read_text()
    assert "scripts/test    #" in readme and "scripts/test --quick" in readme
    contributing = (ROOT / "CONTRIBUTING.md").read_text()
    assert ".venv/bin/pytest tests/" in contributing

