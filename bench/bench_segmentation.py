#!/usr/bin/python3
"""Semantic segmentation's input (an image and its label mask, the
segmentation reference's train preset) through stoker.DataLoader against
torch's DataLoader, same files, same transforms, same cores, one run.

  (a) torch's DataLoader over a Dataset of (image, mask) files with the
      reference's own pair transforms (RandomResize(260, 1040), flip,
      RandomCrop(480) padding 0 / 255, PILToTensor, ConvertImageDtype,
      Normalize, the mask as torch.as_tensor(np.array(mask), int64)),
      num_workers = cores, persistent workers;
  (b) stoker.DataLoader(manifest=..., fields=("path", "mask"),
      masks=("mask",)) with the same preset (stoker.RandomResize,
      stoker.SegmentationRandomCrop), stokerd's workers as many as cores.
  The stoker runs take turns with a run without the mask, --rounds times;
  each figure is the median.

  PYTHONPATH=build/python /usr/bin/python3 bench/bench_segmentation.py \\
      --data=DIR --build=build [--epochs=2] [--batch_size=16]

DIR is an ImageFolder (bench/make_dataset makes a photo-like one); a mask
is made for each image (its grey levels in 21 classes, a palette PNG) in a
scratch directory, and a manifest of the pairs.
"""
import argparse
import os
import subprocess
import sys
import tempfile
import time

import numpy as np
import torch
from PIL import Image
from torchvision import datasets
from torchvision.transforms import functional as F

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "python", "examples"))
from train_segmentation import MEAN, STD, train_preset  # noqa: E402


class Pairs(torch.utils.data.Dataset):
    """The reference's way: PIL image and mask, pair transforms, the mask
    as an int64 tensor."""

    def __init__(self, rows, base_size=520, crop_size=480):
        import stoker
        self.rows = rows
        self.resize = stoker.RandomResize(base_size // 2, base_size * 2)
        self.crop = stoker.SegmentationRandomCrop(crop_size)

    def __len__(self):
        return len(self.rows)

    def __getitem__(self, i):
        image = Image.open(self.rows[i][0]).convert("RGB")
        mask = Image.open(self.rows[i][1])
        image, mask = self.resize(image, mask)
        if torch.rand(1) < 0.5:
            image, mask = F.hflip(image), F.hflip(mask)
        image, mask = self.crop(image, mask)
        image = F.normalize(F.convert_image_dtype(F.pil_to_tensor(image),
                                                  torch.float), MEAN, STD)
        return image, torch.as_tensor(np.array(mask), dtype=torch.int64)


def make_pairs(root, scratch):
    """A mask for each image of the ImageFolder, and a manifest of both."""
    rows = []
    for i, (path, _) in enumerate(datasets.ImageFolder(root).samples):
        with Image.open(path) as im:
            grey = np.asarray(im.convert("L"), dtype=np.uint8)
        mask = Image.fromarray((grey * 21 // 256).astype(np.uint8), "P")
        mask.putpalette([v for c in range(256) for v in (c * 12 % 256,) * 3])
        mask_path = os.path.join(scratch, f"{i}.png")
        mask.save(mask_path)
        rows.append((path, mask_path))
    manifest = os.path.join(scratch, "pairs.csv")
    with open(manifest, "w") as f:
        f.write("path,mask\n" + "".join(f"{p},{m}\n" for p, m in rows))
    return rows, manifest


def rate(loader, epochs):
    """Images/s over the epochs after the first."""
    seen, start = 0, None
    for epoch in range(epochs):
        if epoch == 1:
            start = time.monotonic()
        if hasattr(loader, "set_epoch"):
            loader.set_epoch(epoch)
        for batch in loader:
            if epoch >= 1:
                seen += batch[0].shape[0]
    return seen / (time.monotonic() - start)


def stoker_rate(manifest, socket, args, masks):
    import stoker
    loader = stoker.DataLoader(
        manifest=manifest, fields=("path", "mask") if masks else ("path",),
        masks=("mask",) if masks else (), transform=train_preset(),
        batch_size=args.batch_size, shuffle=True, socket=socket)
    try:
        return rate(loader, args.epochs)
    finally:
        loader.close()


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", required=True)
    parser.add_argument("--build", default="build")
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--batch_size", type=int, default=16)
    parser.add_argument("--cores", type=int, default=os.cpu_count())
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        rows, manifest = make_pairs(args.data, tmp)
        theirs = rate(torch.utils.data.DataLoader(
            Pairs(rows), batch_size=args.batch_size, shuffle=True,
            num_workers=args.cores, persistent_workers=True), args.epochs)
        socket = os.path.join(tmp, "stoker.sock")
        daemon = subprocess.Popen(
            [os.path.join(args.build, "daemon", "stokerd"), "--config=",
             f"--socket={socket}", f"--workers={args.cores}"],
            stderr=subprocess.DEVNULL)
        try:
            for _ in range(200):
                if os.path.exists(socket):
                    break
                time.sleep(0.05)
            runs = {True: [], False: []}
            for _ in range(args.rounds):
                for masks in (True, False):
                    runs[masks].append(stoker_rate(manifest, socket, args,
                                                   masks))
        finally:
            daemon.terminate()
            daemon.wait()
    ours = {k: sorted(r)[len(r) // 2] for k, r in runs.items()}
    print(f"{len(rows)} images with masks, batch {args.batch_size}, "
          f"{args.cores} cores, {args.epochs - 1} epochs timed, stoker's the "
          f"median of {args.rounds} rounds\n")
    print("| loader | images/s | against torch |")
    print("|---|---|---|")
    print(f"| torch DataLoader, the reference's pair transforms "
          f"({args.cores} workers) | {theirs:.1f} | 1.00x |")
    print(f"| stoker, image and mask | {ours[True]:.1f} | "
          f"{ours[True] / theirs:.2f}x |")
    print(f"| stoker, the image alone | {ours[False]:.1f} | "
          f"{ours[False] / theirs:.2f}x |")
    print(f"\nthe mask takes {(1 - ours[True] / ours[False]) * 100:.0f}% of "
          "stoker's time per sample")


if __name__ == "__main__":
    sys.exit(main())
