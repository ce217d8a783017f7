"""Audio as speech data comes, at mixed sample rates: every reader gives each example's rate
with its samples, resamples to a target rate when asked (libsoxr), and the tf.data reader and
the NumPy loader agree."""

from __future__ import annotations

import numpy as np
import pytest

import tfrecordkit as tk
from tests.datasets import encode_audio, tone

RATES = [8000, 16000, 22050, 44100]


def write(tmp_path, encoding: str):
    rows = []
    for i in range(8):
        rate = RATES[i % 4]
        clip = tone(0.02 * (1 + i % 3), rate, 440)
        value = ({"samples": clip, "sample_rate": rate} if encoding == "pcm"
                 else encode_audio(clip, rate, encoding.upper()))
        rows.append({"audio": value, "n": i})
    schema = tk.Schema({"audio": tk.Audio(encoding), "n": tk.Scalar("int64")})
    tk.write_dataset(rows, tmp_path / "ds", schema, shards=tk.ShardOptions(shuffle=False))
    return [(RATES[i % 4], 0.02 * (1 + i % 3)) for i in range(8)]


def numpy_examples(path, **options) -> dict[int, dict]:
    out = {}
    loader = tk.load_numpy_dataset(path, batch_size=4, sampling=tk.InOrder(),
                                   options=tk.DecodeOptions(padding="ragged", **options))
    for batch in loader:
        for i, n in enumerate(batch["n"]):
            out[int(n)] = {"samples": batch["audio"]["samples"][i],
                           "sample_rate": int(batch["audio"]["sample_rate"][i])}
    return out


@pytest.mark.parametrize("encoding", ["wav", "flac", "pcm"])
def test_each_example_keeps_its_own_rate(tmp_path, encoding):
    made = write(tmp_path, encoding)
    got = numpy_examples(tmp_path / "ds")
    for n, (rate, seconds) in enumerate(made):
        assert got[n]["sample_rate"] == rate
        assert got[n]["samples"].shape == (round(rate * seconds), 1)


@pytest.mark.parametrize("encoding", ["wav", "pcm"])
def test_resampling_to_one_rate_keeps_duration_and_pitch(tmp_path, encoding):
    made = write(tmp_path, encoding)
    got = numpy_examples(tmp_path / "ds", sample_rate=16000)
    for n, (_, seconds) in enumerate(made):
        samples = got[n]["samples"][:, 0]
        assert got[n]["sample_rate"] == 16000
        assert abs(len(samples) - 16000 * seconds) <= 1
        # The 440 Hz tone is still the strongest frequency after resampling.
        spectrum = np.abs(np.fft.rfft(samples * np.hanning(len(samples))))
        peak = np.argmax(spectrum) * 16000 / len(samples)
        assert abs(peak - 440) < 16000 / len(samples) * 1.5


@pytest.mark.integration
def test_tf_data_gives_the_same_values_as_the_numpy_loader(tmp_path):
    pytest.importorskip("tensorflow")
    write(tmp_path, "wav")
    for options in ({}, {"sample_rate": 16000}):
        want = numpy_examples(tmp_path / "ds", **options)
        ds = tk.load_tf_dataset(tmp_path / "ds", sampling=tk.InOrder(),
                                options=tk.DecodeOptions(**options))
        seen = 0
        for example in ds:
            n = int(example["n"])
            assert int(example["audio"]["sample_rate"]) == want[n]["sample_rate"]
            assert np.array_equal(example["audio"]["samples"]["values"].numpy(), want[n]["samples"])
            seen += 1
        assert seen == 8


def test_a_bad_rate_is_refused():
    with pytest.raises(ValueError, match="sample_rate must be a positive"):
        tk.DecodeOptions(sample_rate=0)
