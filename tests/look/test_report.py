"""tfrecordkit report / tk.dataset_report: one self-contained HTML page, checked as a reader
would see it (in headless Chromium) and as data: escaped, inline, counts from the manifest."""

from __future__ import annotations

import contextlib
import re
import shutil

import numpy as np
import pytest

import tfrecordkit as tk
from tests.datasets import digits_folder, encode_audio, encode_image, tone
from tfrecordkit.cli import main

pytest.importorskip("matplotlib")

HOSTILE = "<script>"  # a class name that must show as text


@pytest.fixture(scope="module")
def dataset(tmp_path_factory):
    root = tmp_path_factory.mktemp("report")
    digits_folder(root / "src", 6)
    (root / "src" / "3").rename(root / "src" / HOSTILE)  # one class named <script>
    tk.convert(tk.open_source(root / "src"), root / "ds", split={"train": 0.75, "val": 0.25})
    return root / "ds"


def test_the_page_holds_every_section_and_counts_from_the_manifest(dataset):
    page = tk.dataset_report(dataset)
    manifest = tk.load_manifest(dataset)
    for section in ("summary", "schema", "splits", "classes", "distributions", "examples"):
        assert f'<section id="{section}">' in page
    assert 'id="verify"' not in page  # only when asked
    total = sum(s.records for s in manifest.splits.values())
    assert f"<td>{total:,}</td>" in page
    for name, split in manifest.splits.items():
        bars = re.findall(rf'<g id="class-{name}-(\d+)"', page)
        assert sorted(map(int, bars)) == list(range(len(manifest.class_names)))
        assert f'<td class="n">{split.records:,}</td>' in page


def test_strings_from_the_data_are_escaped_and_nothing_is_fetched(dataset):
    page = tk.dataset_report(dataset)
    assert "<script" not in page.lower()  # no script at all: the class name is text
    assert "&lt;script&gt;" in page
    # Images inline, no links out (the charts' href="#..." point inside the page).
    assert re.findall(r'(?:src|href)="(?!data:|#)', page) == []
    assert "<!--" not in page  # matplotlib's comments repeat the texts: dropped


def test_tiles_name_their_input_and_are_real_pngs(dataset):
    page = tk.dataset_report(dataset, classes=2, per_class=3)
    tiles = re.findall(r'<img src="data:image/png;base64,([^"]+)"[^>]*alt="([^"]*)"', page)
    assert len(tiles) == 6
    import base64
    import io

    from PIL import Image

    for data, alt in tiles:
        picture = Image.open(io.BytesIO(base64.b64decode(data)))
        assert picture.format == "PNG" and picture.width > 0
        assert alt.endswith(".png") and "/" in alt  # the file it came from


def test_verify_reports_a_corrupt_shard(dataset, tmp_path):
    assert 'class="ok"' in tk.dataset_report(dataset, verify=True)
    broken = tmp_path / "broken"
    shutil.copytree(dataset, broken)
    shard = next(broken.glob("train-*.tfrecord"))
    data = bytearray(shard.read_bytes())
    data[len(data) // 2] ^= 0xFF
    shard.write_bytes(bytes(data))
    page = tk.dataset_report(broken, verify=True)
    assert 'id="verify"><h2>Verify</h2><p class="bad">' in page
    assert "data crc failed" in page and shard.name in page
    assert "The sampled records could not be read" in page  # said at the top, not skipped


def test_files_without_a_manifest_audio_and_tables_report_too(tmp_path):
    from tfrecordkit.format import RecordWriter, encode_example

    with RecordWriter(tmp_path / "a.tfrecord") as writer:
        for i in range(20):
            pixels = np.full((6 + i % 3, 5, 3), i * 10, np.uint8)
            writer.write(encode_example({"image": encode_image(pixels, "PNG"), "label": i % 4,
                                         "tokens": list(range(i % 5))}))
    page = tk.dataset_report(tmp_path / "a.tfrecord")
    assert "From the 20 sampled records" in page and page.count("<img") > 0
    schema = tk.Schema({"clip": tk.Audio(), "label": tk.ClassLabel(["lo", "hi"])})
    rows = [{"clip": encode_audio(tone(0.05 * (1 + i % 3), 8000, 200 + 300 * (i % 2)), 8000,
                                  "WAV"), "label": i % 2} for i in range(12)]
    tk.write_dataset(rows, tmp_path / "audio", schema)
    page = tk.dataset_report(tmp_path / "audio")
    assert "Example audio" in page and "clip: duration" in page
    tk.write_dataset([{"x": i, "s": f"row {i}"} for i in range(30)], tmp_path / "table",
                     tk.Schema({"x": tk.Scalar("int64"), "s": tk.Text()}))
    page = tk.dataset_report(tmp_path / "table")
    assert 'id="examples"' not in page and 'id="classes"' not in page


def test_the_command_writes_it(dataset, tmp_path, capsys):
    out = tmp_path / "r.html"
    assert main(["report", str(dataset), "--out", str(out), "--json"]) == 0
    assert '"bytes"' in capsys.readouterr().out
    assert out.read_text(encoding="utf-8").startswith("<!doctype html>")


def test_bad_counts_are_refused(dataset):
    with pytest.raises(tk.OptionError, match="sample"):
        tk.dataset_report(dataset, sample=0)


@pytest.mark.integration
def test_it_renders_in_a_real_browser(dataset, tmp_path):
    """Headless Chromium (Debian's; scripts/test installs it): every tile decodes, each chart
    has one mark per class, the class named <script> is text, and nothing is logged or
    fetched."""
    page_file = tmp_path / "report.html"
    page_file.write_text(tk.dataset_report(dataset), encoding="utf-8")
    manifest = tk.load_manifest(dataset)
    with _in_chromium(page_file) as (page, problems, fetched):
        widths = page.eval_on_selector_all(
            "img", "images => images.map(i => i.complete ? i.naturalWidth : 0)")
        marks = {name: page.locator(f'svg g[id^="class-{name}-"]').count()
                 for name in manifest.splits}
        scripts = page.locator("script").count()
        headings = page.eval_on_selector_all("h3", "hs => hs.map(h => h.textContent)")
    assert widths and all(w > 0 for w in widths)
    assert marks == {name: len(manifest.class_names) for name in manifest.splits}
    assert scripts == 0 and HOSTILE in headings
    assert problems == []
    assert all(url.startswith(("file:", "data:")) for url in fetched), fetched


@pytest.fixture(scope="module")
def detection(tmp_path_factory):
    """Object Detection API records (boxes, class names and ids) written by another tool."""
    from tfrecordkit.format import RecordWriter, encode_example

    root = tmp_path_factory.mktemp("detection")
    rng = np.random.default_rng(3)
    with RecordWriter(root / "od.tfrecord") as writer:
        for i in range(30):
            pixels = np.full((40, 60, 3), 90, np.uint8)
            n = 1 + i % 3
            xmin = rng.uniform(0, 0.5, n)
            ymin = rng.uniform(0, 0.5, n)
            boxes = {"image/object/bbox/xmin": xmin, "image/object/bbox/ymin": ymin,
                     "image/object/bbox/xmax": xmin + 0.3, "image/object/bbox/ymax": ymin + 0.4}
            if i == 0:  # one box the wrong way round (inside the image)
                boxes["image/object/bbox/xmin"] = np.array([0.4])
                boxes["image/object/bbox/xmax"] = np.array([0.3])
            if i == 1:  # two boxes reaching past the image's bottom
                boxes["image/object/bbox/ymax"] = ymin + 1.0
            classes = [("cat", "dog", "fox")[(i + k) % 3] for k in range(n)]
            writer.write(encode_example({
                "image/encoded": encode_image(pixels, "JPEG"), "image/height": 40,
                "image/width": 60, **{k: v.tolist() for k, v in boxes.items()},
                "image/object/class/text": [c.encode() for c in classes],
                "image/object/class/label": [("cat", "dog", "fox").index(c) + 1
                                             for c in classes]}))
    return root / "od.tfrecord"


def test_detection_data_shows_classes_boxes_and_one_chart_per_distribution(detection):
    page = tk.dataset_report(detection, sample=30)
    assert '<section id="objects">' in page and '<section id="boxes">' in page
    objects = re.search(r'id="objects">.*?<figcaption>([^<]*)</figcaption>', page, re.S)
    assert objects and "60 objects of 3 classes in 30 sampled records" in objects.group(1)
    boxes = page[page.index('<section id="boxes">'):]
    boxes = boxes[: boxes.index("</section>")]
    assert "<td>xmin &gt; xmax or ymin &gt; ymax</td><td>1</td>" in boxes
    assert "outside the image (a corner &lt; 0 or &gt; 1)</td><td>2</td>" in boxes
    # The boxes (one Boxes feature, from the five box and class keys) and the class names
    # have one size per record: one chart, not two.
    lengths = re.findall(r"<figcaption>([^<]*): length \(values\)", page)
    assert lengths == ["image/object, image/object/class/text"]


def test_boxes_are_drawn_on_the_example_images(detection):
    import base64
    import io

    from PIL import Image

    page = tk.dataset_report(detection, sample=30, classes=1, per_class=2)
    examples = page[page.index('<section id="examples">'):]
    data = re.findall(r'data:image/png;base64,([^"]+)"', examples)
    assert data
    tile = np.asarray(Image.open(io.BytesIO(base64.b64decode(data[0]))).convert("RGB"))
    yellow = (tile[:, :, 0] > 200) & (tile[:, :, 1] > 180) & (tile[:, :, 2] < 60)
    assert yellow.sum() > 20  # the box outlines; the image itself is plain grey


def test_a_box_corner_that_is_not_finite_is_counted_not_fatal(tmp_path):
    """Another tool's file with an infinite and a NaN corner: the report lists them and draws
    the rest (it failed inside matplotlib)."""
    from tfrecordkit.format import RecordWriter, encode_example

    with RecordWriter(tmp_path / "od.tfrecord") as writer:
        for i in range(4):
            writer.write(encode_example({
                "image/encoded": encode_image(np.full((20, 30, 3), 90, np.uint8), "PNG"),
                "image/object/bbox/xmin": [0.1, float("inf") if i == 0 else 0.2],
                "image/object/bbox/ymin": [0.1, 0.2],
                "image/object/bbox/xmax": [0.5, 0.6],
                "image/object/bbox/ymax": [0.5, float("nan") if i == 1 else 0.7],
                "image/object/class/label": [0, 1]}))
    page = tk.dataset_report(tmp_path / "od.tfrecord", sample=4)
    boxes = page[page.index('<section id="boxes">'):]
    assert "a corner not a finite number (left out above)</td><td>2</td>" in boxes
    assert "8 in 4 sampled records" in boxes


def test_many_classes_keep_the_page_small(tmp_path):
    blob = encode_image(np.zeros((4, 4, 3), np.uint8), "PNG")
    classes = 3000
    schema = tk.Schema({"image": tk.Image("png"),
                        "label": tk.ClassLabel([f"c{k}" for k in range(classes)])})
    tk.write_dataset(({"image": blob, "label": i % classes} for i in range(6000)),
                     tmp_path / "ds", schema)
    page = tk.dataset_report(tmp_path / "ds")
    bars = re.findall(r'<g id="class-train-(\d+)"', page)
    assert len(bars) == 50
    assert "the 50 largest shown, the other 2,950 hold 2 to 2 records each" in page
    assert len(page.encode()) < 1_500_000


def test_tables_show_column_statistics_and_rows_and_sources_are_relative(tmp_path):
    source = tmp_path / "deep" / "folder" / "table.jsonl"
    source.parent.mkdir(parents=True)
    source.write_text("".join(f'{{"x": {i}, "kind": "{"ab"[i % 2]}"}}\n' for i in range(40)))
    tk.convert(tk.open_source(source), tmp_path / "ds")
    page = tk.dataset_report(tmp_path / "ds")
    columns = page[page.index('<section id="columns">'):]
    assert "<td>x</td><td class=\"n\">40</td><td class=\"n\">0</td>" in columns
    assert "a (20), b (20)" in columns
    assert "The first 8 sampled rows" in columns
    # Where it was converted from, without the converting machine's directories.
    assert "deep/folder" not in page and "<td>table:table.jsonl</td>" in page


def test_a_class_label_column_shows_its_names_not_its_ids(tmp_path):
    source = tmp_path / "table.csv"
    source.write_text("x,label\n" + "".join(f"{i},{('cat', 'dog', 'eel')[i % 3]}\n"
                                             for i in range(30)))
    tk.convert(tk.open_source(source), tmp_path / "ds", shards=tk.ShardOptions(shuffle=False))
    columns = tk.dataset_report(tmp_path / "ds").split('<section id="columns">')[1]
    columns = columns[: columns.index("</section>")]
    assert "cat (10), dog (10), eel (10)" in columns  # not an id range 0 .. 2
    rows = columns[columns.index("sampled rows"):]
    assert "<td>cat</td>" in rows and "<td>0</td>" in rows  # x 0 is a number, its class a name


def test_the_classes_drawn_on_an_example_are_said_in_its_text(tmp_path):
    schema = tk.Schema({"image": tk.Image("png"), "objects": tk.Boxes(["cat", "dog"])})
    blob = encode_image(np.full((60, 80, 3), 90, np.uint8), "PNG")
    boxes = {"boxes": [[0.1, 0.2, 0.5, 0.5], [0.2, 0.2, 0.9, 0.9], [0, 0, 0.3, 0.3]],
             "labels": ["dog", "cat", "dog"]}
    tk.write_dataset([{"image": blob, "objects": boxes}], tmp_path / "ds", schema,
                     progress=False)
    page = tk.dataset_report(tmp_path / "ds", sample=4)
    examples = page[page.index('<section id="examples">'):]
    (alt, caption), = re.findall(r'alt="([^"]*)"><figcaption>([^<]*)</figcaption>', examples)
    assert alt == caption == "boxes: dog ×2, cat"


def test_drawn_boxes_carry_their_class_names(tmp_path):
    """show_examples and the report write each box's class at its corner."""
    from PIL import Image

    schema = tk.Schema({"image": tk.Image("png"), "objects": tk.Boxes(["cat", "dog"])})
    blob = encode_image(np.full((60, 80, 3), 90, np.uint8), "PNG")
    tk.write_dataset([{"image": blob, "objects": {"boxes": [[0.1, 0.2, 0.9, 0.9]],
                                                   "labels": ["dog"]}}], tmp_path / "ds",
                     schema, progress=False)
    figure = tk.show_examples(tmp_path / "ds", n=1)
    pixels = np.asarray(figure.convert("RGB") if isinstance(figure, Image.Image) else figure)
    yellow = (pixels[:, :, 0] > 200) & (pixels[:, :, 1] > 180) & (pixels[:, :, 2] < 60)
    black = (pixels.max(axis=2) < 40)
    assert yellow.sum() > 50 and black.sum() > 5  # the outline, and the name's letters


@pytest.mark.integration
def test_the_detection_page_renders_in_a_real_browser(detection, tmp_path):
    """Headless Chromium: the box and class charts and every tile (boxes drawn) render, with
    no script, no error and nothing fetched."""
    page_file = tmp_path / "report.html"
    page_file.write_text(tk.dataset_report(detection, sample=30), encoding="utf-8")
    with _in_chromium(page_file) as (page, problems, fetched):
        widths = page.eval_on_selector_all(
            "img", "images => images.map(i => i.complete ? i.naturalWidth : 0)")
        charts = {section: page.locator(f"section#{section} svg").count()
                  for section in ("objects", "boxes", "distributions")}
        scripts = page.locator("script").count()
    assert widths and all(w > 0 for w in widths)
    assert charts["objects"] == 1 and charts["boxes"] == 1 and charts["distributions"] >= 1
    assert scripts == 0 and problems == []
    assert all(url.startswith(("file:", "data:")) for url in fetched), fetched


@contextlib.contextmanager
def _in_chromium(page_file):
    """``page_file`` loaded in headless Chromium (Debian's; scripts/test installs it): the
    page, and the console errors and requests it made."""
    sync_api = pytest.importorskip("playwright.sync_api")
    chromium = shutil.which("chromium")
    assert chromium, "Chromium is missing: scripts/test installs it (apt-get install chromium)"
    with sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=chromium, args=[
            "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
            "--disable-background-networking", "--disable-component-update",
            "--disable-sync"])
        try:
            page = browser.new_page()
            problems: list[str] = []
            fetched: list[str] = []
            page.on("console", lambda m: problems.append(m.text) if m.type == "error" else None)
            page.on("pageerror", lambda e: problems.append(str(e)))
            page.on("request", lambda r: fetched.append(r.url))
            page.goto(page_file.as_uri())
            page.wait_for_load_state("load")
            yield page, problems, fetched
        finally:
            browser.close()


def test_records_stored_twice_are_listed_across_splits(tmp_path):
    digits_folder(tmp_path / "digits", limit_per_class=6)
    tk.convert(tmp_path / "digits", tmp_path / "ds", split={"train": 0.5, "val": 0.5},
               workers=1)
    page = tk.dataset_report(tmp_path / "ds", sample=16)
    assert "<h2>Duplicates</h2>" in page and "each stored once" in page
    copy = tmp_path / "copy" / "4"
    copy.mkdir(parents=True)
    shutil.copy(sorted((tmp_path / "digits" / "4").iterdir())[0], copy / "again.png")
    tk.append(tmp_path / "ds", tmp_path / "copy", split="test", new_split=True, workers=1)
    page = tk.dataset_report(tmp_path / "ds", sample=16)
    section = page[page.index("<h2>Duplicates</h2>"):]
    assert "1 group(s) of equal records among 61" in section
    assert "1 across splits" in section
    assert "4/again.png" in section  # named by the input it came from (its __source)
