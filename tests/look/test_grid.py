"""``show_examples`` / ``tfrecordkit show``: a grid of a dataset's images whose tiles hold the
records' own pixels (fitted, aspect kept), captioned; seeded samples; audio as waveforms;
a table when there are no images; foreign files and adopted datasets too."""

from __future__ import annotations

import numpy as np
import pytest
from PIL import Image as PILImage

import tfrecordkit as tk
from tests.datasets import encode_audio, encode_image, tone
from tfrecordkit import OptionError
from tfrecordkit.cli import main
from tfrecordkit.format import RecordWriter, encode_example
from tfrecordkit.look import TILE


def _tile(grid, k: int, count: int):
    columns = int(np.ceil(np.sqrt(count)))
    left, top = (k % columns) * (TILE + 8) + 4, (k // columns) * (TILE + 26 + 8) + 4
    return np.asarray(grid)[top: top + TILE, left: left + TILE]


@pytest.fixture(scope="module")
def blocks(tmp_path_factory):
    """Eight flat-colour images, each its own level, 16x16, labelled by parity."""
    path = tmp_path_factory.mktemp("grid") / "ds"
    rows = [{"image": encode_image(np.full((16, 16, 3), 20 * k + 10, np.uint8), "PNG"),
             "label": k % 2, "caption": f"block {k}"} for k in range(8)]
    schema = tk.Schema({"image": tk.Image("png"), "label": tk.ClassLabel(["even", "odd"]),
                        "caption": tk.Text()})
    tk.write_dataset(rows, path, schema, shards=tk.ShardOptions(shuffle=False))
    return path


def test_tiles_hold_the_records_pixels_in_split_order(blocks):
    grid = tk.show_examples(blocks, n=4)
    assert isinstance(grid, PILImage.Image) and grid.size == (2 * (TILE + 8), 2 * (TILE + 34))
    for k in range(4):
        tile = _tile(grid, k, 4)
        assert np.all(tile == 20 * k + 10)  # 16x16 scaled to fill the 128 px tile exactly


def test_a_seeded_sample_is_uniform_and_repeatable(blocks):
    first = np.asarray(tk.show_examples(blocks, n=3, seed=7))
    assert np.array_equal(first, np.asarray(tk.show_examples(blocks, n=3, seed=7)))
    levels = sorted(int(_tile(first, k, 3)[0, 0, 0]) for k in range(3))
    assert all((level - 10) % 20 == 0 for level in levels) and len(set(levels)) == 3
    assert tk.show_examples(blocks, n=100).size == tk.show_examples(blocks, n=8).size


def test_images_of_several_sizes_keep_their_aspect(tmp_path):
    wide = np.full((100, 300, 3), 100, np.uint8)
    tall = np.full((300, 60, 3), 50, np.uint8)
    schema = tk.Schema({"image": tk.Image("png")})
    tk.write_dataset([{"image": encode_image(wide, "PNG")}, {"image": encode_image(tall, "PNG")}],
                     tmp_path / "ds", schema, shards=tk.ShardOptions(shuffle=False))
    grid = tk.show_examples(tmp_path / "ds", n=2)
    wide_tile = _tile(grid, 0, 2)
    filled_rows = np.flatnonzero((wide_tile != 255).any(axis=(1, 2)))
    assert abs(len(filled_rows) - round(TILE * 100 / 300)) <= 1  # 128 x 43, centred
    tall_tile = _tile(grid, 1, 2)
    filled_cols = np.flatnonzero((tall_tile != 255).any(axis=(0, 2)))
    assert abs(len(filled_cols) - round(TILE * 60 / 300)) <= 1


def test_audio_is_drawn_and_plain_records_make_a_table(tmp_path):
    schema = tk.Schema({"audio": tk.Audio("wav"), "label": tk.ClassLabel(["a", "b"])})
    tk.write_dataset([{"audio": encode_audio(tone(0.2, 8000, 440 * (k + 1)), 8000, "WAV"),
                       "label": k % 2} for k in range(3)], tmp_path / "audio", schema)
    waves = np.asarray(tk.show_examples(tmp_path / "audio", n=3))
    assert (waves == (40, 90, 200)).all(axis=2).any()  # the waveform's ink
    plain = tk.Schema({"x": tk.Scalar("int64"), "name": tk.Text()})
    tk.write_dataset([{"x": k, "name": f"row {k}"} for k in range(20)], tmp_path / "plain",
                     plain)
    table = tk.show_examples(tmp_path / "plain")
    assert table.height == 8 + 14 * (2 + 12)  # header, rule, the first 12 records
    # A monospace grid: the column separators lie in the same pixel columns on every row.
    ink = (np.asarray(table.convert("L")) < 128)
    rows = [ink[4 + 14 * k : 4 + 14 * k + 14] for k in (0, 2, 3, 13)]
    separators = np.flatnonzero(rows[0].sum(axis=0) >= 6)  # the header's tall strokes: "|"
    assert len(separators) == 1
    assert all((r[:, separators].sum(axis=0) >= 6).all() for r in rows)


def test_foreign_files_and_refusals(tmp_path):
    with RecordWriter(str(tmp_path / "part.tfrecord")) as writer:
        for k in range(3):
            writer.write(encode_example({"img": [encode_image(np.full((8, 8), 50 * k + 5,
                                                                      np.uint8), "PNG")]}))
    grid = tk.show_examples(str(tmp_path / "*.tfrecord"), n=3)
    assert np.all(_tile(grid, 2, 3) == 105)
    with pytest.raises(OptionError, match="positive"):
        tk.show_examples(str(tmp_path / "*.tfrecord"), n=0)
    with pytest.raises(OptionError, match="not an image"):
        tk.show_examples(str(tmp_path / "*.tfrecord"), image="nope")


def test_the_cli_writes_the_grid(blocks, tmp_path, capsys):
    out = tmp_path / "grid.png"
    assert main(["show", str(blocks), "-n", "4", "--seed", "1", "--out", str(out)]) == 0
    written = PILImage.open(out)
    assert written.size == tk.show_examples(blocks, n=4, seed=1).size
    assert np.array_equal(np.asarray(written.convert("RGB")),
                          np.asarray(tk.show_examples(blocks, n=4, seed=1)))
    assert "grid.png" in capsys.readouterr().out
