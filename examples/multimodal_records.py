"""Multi-modal records (image + caption + bounding box + audio + label) from a table of files,
and an audio classifier on resampled audio.

Writes real files: JPEG crops of scikit-image photos, and FLAC clips at 8, 16 and 22.05 kHz
(rising, falling and steady tones with noise: the three classes). A JSONL table names them
with a caption and a bounding box. `convert` reads the table (paths become images and audio,
the caption gets a vocabulary, the box a float tensor), splits 75/25 stratified by class.
The NumPy loader then gives audio resampled to 16 kHz with its rate, caption ids with a mask,
and boxes; tf.data gives the same values. A nearest-centroid classifier on log spectra of the
resampled audio labels the held-out clips.
Run: python examples/multimodal_records.py [OUT_DIR]
"""

from __future__ import annotations

import io
import json
import os
import sys
import tempfile
from pathlib import Path

import numpy as np

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import tfrecordkit as tk

CLASSES = ("rising", "falling", "steady")
RATES = (8000, 16000, 22050)


def clip(kind: str, rate: int, rng: np.random.Generator) -> np.ndarray:
    t = np.arange(int(0.25 * rate)) / rate
    start = rng.uniform(300, 500)
    hz = {"rising": start + 1600 * t, "falling": start + 400 - 1600 * t * 0.25,
          "steady": np.full_like(t, start)}[kind]
    phase = 2 * np.pi * np.cumsum(hz) / rate
    return (0.4 * np.sin(phase) + 0.05 * rng.standard_normal(len(t))).astype(np.float32)


def make_files(root: Path, n: int = 48) -> Path:
    import soundfile
    from PIL import Image
    from skimage import data

    rng = np.random.default_rng(0)
    photos = [data.astronaut(), data.coffee(), data.chelsea()]
    rows = []
    for i in range(n):
        label = i % 3
        photo = photos[label]
        h, w = rng.integers(64, 160, size=2)
        y, x = rng.integers(0, photo.shape[0] - h), rng.integers(0, photo.shape[1] - w)
        (root / "img").mkdir(parents=True, exist_ok=True)
        (root / "wav").mkdir(parents=True, exist_ok=True)
        Image.fromarray(photo[y : y + h, x : x + w]).save(root / "img" / f"{i}.jpg",
                                                           quality=90)
        rate = RATES[i % len(RATES) - (i // 3) % 2]  # every class at every rate
        buffer = io.BytesIO()
        soundfile.write(buffer, clip(CLASSES[label], rate, rng), rate, format="FLAC")
        (root / "wav" / f"{i}.flac").write_bytes(buffer.getvalue())
        box = [float(v) for v in np.sort(rng.uniform(0, 1, size=4))]
        rows.append({"image_path": f"img/{i}.jpg", "audio_path": f"wav/{i}.flac",
                     "caption": f"a {CLASSES[label]} tone over a photo number {i}",
                     "box": box, "label": CLASSES[label]})
    table = root / "table.jsonl"
    table.write_text("\n".join(json.dumps(r) for r in rows))
    return table


def log_spectrum(samples: np.ndarray) -> np.ndarray:
    frames = samples[: len(samples) // 256 * 256, 0].reshape(-1, 256)
    spectra = np.abs(np.fft.rfft(frames * np.hanning(256), axis=1))
    thirds = np.array_split(np.log1p(spectra), 3)  # the pitch at the start, middle, end
    return np.concatenate([part.mean(0) for part in thirds])


def main(out: Path) -> float:
    table = make_files(out / "files")
    source = tk.Table(table)
    schema = tk.Schema({**source.schema(),
                        "caption": tk.Text(vocabulary=tk.Vocabulary()),
                        "box": tk.Tensor((4,), "float32"),
                        "label": tk.ClassLabel(list(CLASSES))})
    # 48 clips: exact per-class counts (stratify=True) so every class is held out alike.
    done = tk.convert(source, out / "ds", schema=schema, split={"train": 0.75, "test": 0.25},
                      stratify=True, overwrite=True, workers=1)
    print(done.summary())

    # Audio batches come as {"values", "lengths"}, padded to the longest clip;
    # padded_shapes (None, 1) also checks that every clip has one channel.
    options = tk.DecodeOptions(sample_rate=16000, text_length=12,
                               padded_shapes={"audio_path": (None, 1)})
    features = {}
    for split in ("train", "test"):
        rows = []
        for batch in tk.load_numpy_dataset(out / "ds", split, batch_size=6,
                                           sampling=tk.InOrder(), options=options):
            audio = batch["audio_path"]
            assert set(audio["sample_rate"].tolist()) == {16000}
            lengths = audio["samples"]["lengths"][:, 0]
            for i, label in enumerate(batch["label"]):
                samples = audio["samples"]["values"][i, : lengths[i]]
                rows.append((log_spectrum(samples), int(label)))
            assert batch["box"].shape == (len(batch["label"]), 4)
            assert batch["caption"]["ids"].shape[1] == 12
        features[split] = rows
    centroids = np.stack([np.mean([f for f, y in features["train"] if y == c], axis=0)
                          for c in range(len(CLASSES))])
    hits = [int(np.argmin(np.linalg.norm(centroids - f, axis=1)) == y)
            for f, y in features["test"]]
    accuracy = float(np.mean(hits))
    print(f"audio at 8/16/22.05 kHz, resampled to 16 kHz: nearest-centroid accuracy on "
          f"{len(hits)} held-out clips {accuracy:.2f} (chance {1 / len(CLASSES):.2f})")

    first = next(iter(tk.load_tf_dataset(out / "ds", "test", batch_size=6, sampling=tk.InOrder(),
                                         options=options)))
    numpy_first = next(iter(tk.load_numpy_dataset(out / "ds", "test", batch_size=6,
                                                  sampling=tk.InOrder(), options=options)))
    assert np.array_equal(first["caption"]["ids"].numpy(), numpy_first["caption"]["ids"])
    assert np.array_equal(first["box"].numpy(), numpy_first["box"])
    for key in ("values", "lengths"):  # one structure in every reader
        assert np.array_equal(first["audio_path"]["samples"][key].numpy(),
                              numpy_first["audio_path"]["samples"][key])
    print("tf.data gives the same captions, boxes and resampled audio")
    return accuracy


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else Path(tempfile.mkdtemp()))
