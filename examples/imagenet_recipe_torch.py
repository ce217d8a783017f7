"""The ImageNet recipe in PyTorch: photos of different sizes, random-resized-crop + flip for
training and a centre crop for evaluation, decoded and cropped by tfrecordkit's loader (no
TensorFlow), into a small CNN.

The data: windows of four of scikit-image's photos (one class each) at random places and sizes,
saved as JPEGs of 48-120 px, converted into a dataset with a train and a val split.

Run: python examples/imagenet_recipe_torch.py [out_dir] [epochs]
"""

from __future__ import annotations

import io
import sys
import tempfile
from pathlib import Path

import numpy as np
import torch
from PIL import Image
from skimage import data

import tfrecordkit as tk

SIZE = (48, 48)
MEAN, STD = (0.485, 0.456, 0.406), (0.229, 0.224, 0.225)


def make_photos(folder: Path, per_class: int = 90, seed: int = 0) -> None:
    """``folder/<class>/<i>.jpg``: windows of one photo per class."""
    rng = np.random.default_rng(seed)
    photos = {"astronaut": data.astronaut(), "coffee": data.coffee(),
              "chelsea": data.chelsea(), "rocket": data.rocket()}
    for name, photo in photos.items():
        (folder / name).mkdir(parents=True)
        for i in range(per_class):
            side = int(rng.integers(120, min(photo.shape[:2])))
            top = int(rng.integers(0, photo.shape[0] - side + 1))
            left = int(rng.integers(0, photo.shape[1] - side + 1))
            window = photo[top : top + side, left : left + side]
            height, width = int(rng.integers(48, 121)), int(rng.integers(48, 121))
            image = Image.fromarray(window).resize((width, height), Image.BILINEAR)
            buffer = io.BytesIO()
            image.save(buffer, format="JPEG", quality=90)
            (folder / name / f"{i:03d}.jpg").write_bytes(buffer.getvalue())


def model() -> torch.nn.Module:
    return torch.nn.Sequential(
        torch.nn.Conv2d(3, 16, 3, padding=1), torch.nn.ReLU(), torch.nn.MaxPool2d(2),
        torch.nn.Conv2d(16, 32, 3, padding=1), torch.nn.ReLU(), torch.nn.MaxPool2d(2),
        torch.nn.Conv2d(32, 32, 3, padding=1), torch.nn.ReLU(),
        torch.nn.AdaptiveAvgPool2d(1), torch.nn.Flatten(), torch.nn.Linear(32, 4))


def accuracy(net: torch.nn.Module, path: Path) -> float:
    evaluate = tk.DecodeOptions(image_size=SIZE, crop="center", image_dtype="float32",
                                mean=MEAN, std=STD)
    loader = tk.load_torch_dataset(path, "val", batch_size=64, sampling=tk.InOrder(),
                                   options=evaluate)
    right = total = 0
    net.eval()
    with torch.no_grad():
        for batch in torch.utils.data.DataLoader(loader, batch_size=None):
            logits = net(batch["image"].permute(0, 3, 1, 2))
            right += int((logits.argmax(1) == batch["label"]).sum())
            total += len(batch["label"])
    return right / total


def main(out_dir: str | None = None, epochs: int = 12) -> None:
    torch.manual_seed(0)
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(out_dir) if out_dir else Path(tmp)
        folder, path = root / "photos", root / "photos_ds"
        make_photos(folder)
        tk.convert(tk.open_source(folder), path, split={"train": 0.8, "val": 0.2},
                   progress=False)
        train = tk.DecodeOptions(image_size=SIZE, crop="random", flip=True,
                                 crop_scale=(0.35, 1.0), image_dtype="float32", mean=MEAN,
                                 std=STD)
        dataset = tk.load_torch_dataset(path, "train", batch_size=32, seed=0, options=train)
        # Workers start each epoch from the dataset as set_epoch left it.
        batches = torch.utils.data.DataLoader(dataset, batch_size=None, num_workers=2)
        net = model()
        before = accuracy(net, path)
        optimiser = torch.optim.Adam(net.parameters(), lr=3e-3)
        for epoch in range(epochs):
            dataset.set_epoch(epoch)  # new windows and flips every epoch, the same on resume
            net.train()
            for batch in batches:
                loss = torch.nn.functional.cross_entropy(
                    net(batch["image"].permute(0, 3, 1, 2)), batch["label"])
                optimiser.zero_grad()
                loss.backward()
                optimiser.step()
        shape = tuple(next(iter(batches))["image"].shape)
        print(f"training batches of {shape} float32, random-resized-crop + flip; "
              f"held-out accuracy {before:.2f} before training, {accuracy(net, path):.2f} "
              f"after {epochs} epochs")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else None,
         int(sys.argv[2]) if len(sys.argv) > 2 else 12)
