"""The guide's Python blocks (docs/guide.md, the full tour the README links to), run as
written: the tour (image folder, tf.data, P×K, NumPy, PyTorch, grain, foreign files, S3
through a local S3 server, Ray) and the schema example (vocabulary, padded shapes, audio
rates). Every public name appears in the guide. Here because the tour's URLs need this
folder's S3 server."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

import tfrecordkit as tk
from tests.datasets import encode_audio, encode_image, photos, tone

GUIDE = Path(__file__).resolve().parents[2] / "docs" / "guide.md"

pytestmark = [pytest.mark.integration, pytest.mark.slow]


def python_blocks() -> list[str]:
    return re.findall(r"```python\n(.*?)```", GUIDE.read_text(), flags=re.DOTALL)


def test_every_public_name_is_in_the_guide():
    text = GUIDE.read_text()
    missing = [n for n in tk.__all__ if n != "__version__" and not re.search(rf"\b{n}\b", text)]
    assert not missing


def make_inputs(root: Path) -> list[dict]:
    """photos/<class>/ (20 classes of small real-photo crops), their_data/, tfx_output/ (GZIP)
    and their_classes/ (one class per file, no label) written by plain TensorFlow, and the
    records the schema example writes."""
    tf = pytest.importorskip("tensorflow")
    rng = np.random.default_rng(0)
    sources = [p if p.ndim == 3 else np.repeat(p[:, :, None], 3, axis=2)
               for p in photos().values()]
    for c in range(20):
        folder = root / "photos" / f"class_{c:02d}"
        folder.mkdir(parents=True)
        for i in range(6):
            image = sources[(c + i) % len(sources)]
            y, x = rng.integers(0, 8, size=2)
            (folder / f"{i}.png").write_bytes(encode_image(image[y : y + 24, x : x + 24], "PNG"))
    (root / "their_data").mkdir()
    with tf.io.TFRecordWriter(str(root / "their_data" / "part-0.tfrecord")) as writer:
        for i in range(100):
            example = tf.train.Example(features=tf.train.Features(feature={
                "x": tf.train.Feature(float_list=tf.train.FloatList(value=[i / 2]))}))
            writer.write(example.SerializeToString())
    (root / "tfx_output").mkdir()  # ExampleGen's GZIP shards
    for part in range(2):
        name = root / "tfx_output" / f"data_tfrecord-{part:05d}-of-00002.gz"
        with tf.io.TFRecordWriter(str(name), "GZIP") as writer:
            for i in range(50):
                example = tf.train.Example(features=tf.train.Features(feature={
                    "x": tf.train.Feature(float_list=tf.train.FloatList(value=[part + i]))}))
                writer.write(example.SerializeToString())
    for folder in ("their_classes", "their_val"):
        (root / folder).mkdir()
        for k in range(5):  # no label in the records: the class is in the file name
            with tf.io.TFRecordWriter(str(root / folder / f"class_{k}.tfrecord")) as w:
                for i in range(3):
                    example = tf.train.Example(features=tf.train.Features(feature={
                        "x": tf.train.Feature(float_list=tf.train.FloatList(
                            value=[k + i / 10]))}))
                    w.write(example.SerializeToString())
    captions = ["a cat on a mat", "two dogs running", "a bird in the sky", "the cat sleeps"]
    return [{"image": encode_image(sources[i % len(sources)][:40, :50], "JPEG"),
             "label": i % 2, "caption": captions[i % 4],
             "speech": encode_audio(tone(0.05, [8000, 22050][i % 2], 300), [8000, 22050][i % 2],
                                    "FLAC")}
            for i in range(40)]


@pytest.mark.xdist_group("ray")  # one Ray cluster at a time
def test_the_guide_code_runs_as_written(s3_server, tmp_path, monkeypatch):
    for module in ("tensorflow", "torch", "grain", "ray"):
        pytest.importorskip(module)
    import ray
    import s3fs

    monkeypatch.chdir(tmp_path)
    records = make_inputs(tmp_path)
    s3fs.S3FileSystem().makedirs("my-bucket", exist_ok=True)  # the server is shared
    tour, schema_example = python_blocks()[:2]
    namespace: dict = {"records": records}
    try:
        exec(compile(tour, "docs/guide.md (tour)", "exec"), namespace)
        namespace["records"] = records  # the tour's last lines took the name
        exec(compile(schema_example, "docs/guide.md (schema)", "exec"), namespace)
    finally:
        if ray.is_initialized():
            ray.shutdown()
    # What the tour made is what it says.
    assert namespace["result"].manifest.layout == "per_class"
    assert len(namespace["result"].manifest.class_names) == 20
    adopted = tk.load_manifest(tmp_path / "their_classes")
    assert adopted.schema["label"].from_shard and sorted(adopted.splits) == ["train", "val"]
    pk = next(iter(namespace["pk"]))
    assert pk["label"].tolist() == np.floor(pk["x"]).astype(int).tolist()
    assert tk.load_manifest("s3://my-bucket/photos_ray").splits["train"].records == 120
    assert tk.load_manifest(tmp_path / "photos_small").splits["train"].records == 120
    batch = namespace["batch"]
    assert batch["caption"]["ids"].shape == (32, 64)
    assert set(batch["speech"]["sample_rate"].tolist()) == {16000}
    images = batch["image"]["values"]  # sizes vary (some photos are smaller): padded
    assert images.dtype == np.float32 and images.shape == (32, 40, 50, 3)
