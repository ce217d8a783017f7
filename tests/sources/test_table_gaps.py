"""Tables with gaps: empty cells are missing values with one documented meaning (empty text, an
empty list, NaN for floats; whole-number columns with gaps are float32, as pandas reads them),
codes with leading zeros stay text, and a cell that can't be missing is refused with how to
keep the row — never "skip it". pandas' ``read_csv`` is the oracle for which cells are missing
and what the numbers are."""

from __future__ import annotations

import csv
import json
import math

import numpy as np
import pytest

import tfrecordkit as tk
from tfrecordkit import SourceError


def _census(path, rows: int = 400, seed: int = 0) -> list[dict[str, str]]:
    """A census-like CSV: about half its rows have at least one empty cell."""
    rng = np.random.default_rng(seed)
    out = []
    for i in range(rows):
        row = {"age": str(int(rng.integers(17, 90))), "zip": f"{int(rng.integers(0, 99999)):05d}",
               "income": f"{rng.uniform(0, 2e5):.2f}", "occupation": str(rng.choice(
                   ["clerk", "farmer", "nurse", "teacher"])),
               "hours": str(int(rng.integers(1, 80))), "label": str(rng.choice(["<=50K", ">50K"]))}
        for column in ("age", "income", "occupation", "hours"):
            if rng.random() < 0.18:
                row[column] = ""
        if i == 0:
            row["zip"] = "02134"  # a code: the zero is part of it
        out.append(row)
    with open(path, "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(out[0]))
        writer.writeheader()
        writer.writerows(out)
    return out


def _read(path) -> dict:
    batches = list(tk.load_numpy_dataset(path, batch_size=1000, sampling=tk.InOrder()))
    return {k: (np.concatenate([b[k] for b in batches]) if isinstance(batches[0][k], np.ndarray)
                else [v for b in batches for v in b[k]]) for k in batches[0]}


def test_every_row_of_a_table_with_gaps_is_kept_with_its_missing_values(tmp_path):
    pandas = pytest.importorskip("pandas")
    rows = _census(tmp_path / "census.csv")
    assert sum(any(v == "" for v in r.values()) for r in rows) > len(rows) * 0.4
    source = tk.open_source(tmp_path / "census.csv")
    schema = source.schema()
    assert schema["age"] == tk.Scalar("float32") and schema["hours"] == tk.Scalar("float32")
    assert schema["zip"] == tk.Text() and schema["occupation"] == tk.Text()
    tk.convert(source, tmp_path / "ds", shards=tk.ShardOptions(shuffle=False))
    got = _read(tmp_path / "ds")
    assert len(got["age"]) == len(rows)
    oracle = pandas.read_csv(tmp_path / "census.csv", dtype={"zip": str})
    for column in ("age", "income", "hours"):
        want = oracle[column].to_numpy(np.float64).astype(np.float32)
        np.testing.assert_array_equal(got[column], want)  # NaN where pandas has NaN
    assert got["zip"] == oracle["zip"].tolist() and got["zip"][0] == "02134"
    assert got["occupation"] == oracle["occupation"].fillna("").tolist()


@pytest.mark.integration
def test_tf_data_reads_the_same_missing_values(tmp_path):
    _census(tmp_path / "census.csv", rows=50)
    tk.convert(tk.open_source(tmp_path / "census.csv"), tmp_path / "ds")
    numpy = _read(tmp_path / "ds")
    tf_batch = next(iter(tk.load_tf_dataset(tmp_path / "ds", batch_size=50,
                                            sampling=tk.InOrder())))
    np.testing.assert_array_equal(tf_batch["income"].numpy(), numpy["income"])
    assert [t.decode() for t in tf_batch["occupation"].numpy()] == numpy["occupation"]


def test_jsonl_nulls_and_lists(tmp_path):
    path = tmp_path / "t.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in [
        {"x": 1.5, "tags": ["a"], "t": "hi"}, {"x": None, "tags": None, "t": None}]) + "\n")
    tk.convert(tk.open_source(path), tmp_path / "ds", shards=tk.ShardOptions(shuffle=False))
    got = next(iter(tk.load_numpy_dataset(tmp_path / "ds", batch_size=2,
                                          sampling=tk.InOrder(), options=tk.DecodeOptions(
                                              padding="ragged"))))
    assert got["x"][0] == 1.5 and math.isnan(got["x"][1])
    assert got["t"] == ["hi", ""] and [list(v) for v in got["tags"]] == [["a"], []]


def test_a_cell_that_cannot_be_missing_names_how_to_keep_the_row(tmp_path):
    rows = _census(tmp_path / "census.csv", rows=40)
    first_gap = next(i for i, r in enumerate(rows, start=1) if r["age"] == "")
    source = tk.open_source(tmp_path / "census.csv", features={"age": tk.Scalar("int64")})
    with pytest.raises(SourceError) as caught:
        tk.convert(source, tmp_path / "ds")
    message = str(caught.value)
    assert f"census.csv:{first_gap}: column 'age' is empty" in message
    assert "Scalar('float32')" in message and "features={'age': ...}" in message
    assert "skip" not in message  # the row can be kept: dropping it is not the fix
    assert not (tmp_path / "ds" / "dataset.json").exists()


def test_leading_zeros_make_a_column_text_but_plain_numbers_stay_numbers(tmp_path):
    path = tmp_path / "t.csv"
    path.write_text("code,n,f,neg\n007,0,0.5,-3\n120,10,00.5,-0\n")
    schema = tk.open_source(path).schema()
    assert schema["code"] == tk.Text() and schema["n"] == tk.Scalar("int64")
    assert schema["f"] == tk.Text()  # "00.5" keeps its zeros as written
    assert schema["neg"] == tk.Scalar("int64")


@pytest.mark.parametrize(("text", "line", "counts"), [
    ("id,label,text\n1,0,fine\n2,hello, world,1\n", 3, "4 fields where the header has 3"),
    ("id,label,text\n1,0,fine\n\n2,1\n", 4, "2 fields where the header has 3"),
    ('id,label,text\n1,0,"a\nquoted, cell"\n2,1,x,y\n', 4, "4 fields where the header has 3"),
])
def test_a_csv_row_of_another_field_count_is_refused_naming_its_line(tmp_path, text, line,
                                                                     counts):
    """Python's DictReader shifts an unquoted comma's extra value under a None key and fills
    a short row with None; pandas refuses the first. Neither is kept silently here."""
    (tmp_path / "t.csv").write_text(text)
    with pytest.raises(tk.SourceError) as err:
        tk.convert(tk.open_source(tmp_path / "t.csv"), tmp_path / "ds", workers=1)
    message = str(err.value)
    assert f"t.csv:{line}" in message and counts in message and "\n" not in message
    assert not (tmp_path / "ds" / "dataset.json").exists()
