"""A table's class label is chosen by name in a fixed order (``label`` before ``y``), and any
other column that could have been it is named at conversion."""

from __future__ import annotations

import logging

import tfrecordkit as tk


def test_label_wins_over_a_coordinate_and_the_choice_is_said(tmp_path, caplog):
    table = tmp_path / "points.csv"
    table.write_text("id,x,y,name,label\n" + "".join(
        f"{i},{i * 7},{i * 13},n{i},{'abc'[i % 3]}\n" for i in range(60)))
    with caplog.at_level(logging.WARNING, logger="tfrecordkit"):
        result = tk.convert(tk.open_source(table), tmp_path / "ds", progress=False)
    schema = result.manifest.schema
    assert isinstance(schema["label"], tk.ClassLabel)
    assert list(schema["label"].names) == ["a", "b", "c"]
    assert not isinstance(schema["y"], tk.ClassLabel)
    assert "'label' is taken as the class label; 'y' could be too" in caplog.text
    batch = next(iter(tk.load_numpy_dataset(tmp_path / "ds", batch_size=60, sampling=tk.InOrder())))
    assert sorted(batch["y"].tolist()) == [i * 13 for i in range(60)]


def test_label_column_chooses(tmp_path):
    table = tmp_path / "t.csv"
    table.write_text("y,label\n" + "".join(f"{i % 2},{i}\n" for i in range(10)))
    result = tk.convert(tk.open_source(table, label_column="y"), tmp_path / "ds",
                        progress=False)
    assert isinstance(result.manifest.schema["y"], tk.ClassLabel)
    assert not isinstance(result.manifest.schema["label"], tk.ClassLabel)
