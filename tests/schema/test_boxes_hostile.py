"""Boxes from files someone else wrote, refused loudly and alike by every reader when the
Object Detection API's keys disagree (a box without its label, a corner list cut short, a
class id outside the names), never read as other boxes."""

from __future__ import annotations

import pytest

import tfrecordkit as tk
from tfrecordkit.errors import SchemaError
from tfrecordkit.format import RecordWriter, encode_example

pytestmark = pytest.mark.integration  # tf.data is one of the readers


def _write(path, record):
    good = {"o/bbox/xmin": [0.1], "o/bbox/ymin": [0.2], "o/bbox/xmax": [0.3],
            "o/bbox/ymax": [0.4], "o/class/label": [1]}
    with RecordWriter(path) as writer:
        writer.write(encode_example(good))
        writer.write(encode_example({**good, **record}))


@pytest.mark.parametrize("bad", [
    {"o/class/label": [1, 2]},              # two labels, one box
    {"o/bbox/xmax": [0.3, 0.5]},            # a corner list longer than the others
    {"o/class/label": [7]},                 # outside the three names
])
def test_disagreeing_keys_are_refused_by_every_reader(tmp_path, bad):
    pytest.importorskip("tensorflow")
    path = tmp_path / "od.tfrecord"
    _write(path, bad)
    schema = tk.Schema({"o": tk.Boxes(["bg", "cat", "dog"])})
    with pytest.raises(SchemaError, match=r"od\.tfrecord"):
        list(tk.load_numpy_dataset(str(path), batch_size=2, sampling=tk.InOrder(),
                                   read=tk.ReadOptions(schema=schema)))
    with pytest.raises(SchemaError, match=r"od\.tfrecord"):  # the file named, as NumPy does
        list(tk.load_tf_dataset(str(path), batch_size=2, sampling=tk.InOrder(),
                                read=tk.ReadOptions(schema=schema)))


@pytest.mark.parametrize(("boxes", "why"), [
    ([[12.0, 30.0, 50.0, 40.0]], r"box 0 is .*fractions of the image.*\(x\+w\)/W"),  # pixels
    ([[0.1, 0.1, 0.2, 0.2], [0.5, 0.2, 0.4, 0.3]], r"box 1 is .*xmin <= xmax"),  # swapped
    ([[-0.2, 0.1, 0.2, 0.2]], r"box 0 is .*in \[0, 1\]"),
])
def test_boxes_in_pixels_or_the_wrong_way_round_are_refused_at_writing(tmp_path, boxes, why):
    schema = tk.Schema({"o": tk.Boxes(["a", "b"])})
    with pytest.raises(tk.TFRecordKitError, match=why):
        tk.write_dataset([{"o": {"boxes": boxes, "labels": [0] * len(boxes)}}],
                         tmp_path / "ds", schema, progress=False)
    assert not (tmp_path / "ds" / "dataset.json").exists()
    tk.write_dataset([{"o": {"boxes": [[0.0, 0.0, 1.0, 1.0]], "labels": ["b"]}}],
                     tmp_path / "ok", schema, progress=False)
