#!/usr/bin/python3
"""Self-supervised multi-crop (DINO's ten views of each image) through
stoker.DataLoader against torch's DataLoader, same images, same transforms,
same cores, one run; and what share of stoker's cost per image the views
take (next to decoding the image once).

  (a) torch's DataLoader(ImageFolder(root, transform=DINO's augmentation),
      num_workers = cores, persistent workers): each worker decodes with
      PIL and runs the ten views (DINO's own Pillow blur and solarize, the
      Pillow calls stoker.PILGaussianBlur and stoker.Solarization make
      when called);
  (b) stoker.DataLoader(root, transform=[global1, global2] + [local] * 8):
      the same transforms in stokerd's workers (as many as cores), each
      image decoded once;
  (c) stoker with one 8x8 view: the decode alone, nearly; with MoCo v3's
      two views.
  The stoker runs take turns, --rounds times; each figure is the median.

  PYTHONPATH=build/python /usr/bin/python3 bench/bench_views.py \\
      --data=DIR --build=build [--epochs=2] [--batch_size=64]

DIR is an ImageFolder (bench/make_dataset makes a photo-like one).
"""
import argparse
import os
import subprocess
import sys
import tempfile
import time

import torch
from torchvision import datasets
from torchvision import transforms as T

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "python", "examples"))
from train_dino import dino_views  # noqa: E402
from train_moco import moco_views  # noqa: E402


class Views:
    """DINO's DataAugmentationDINO.__call__: the list of crops."""

    def __init__(self, transforms):
        self.transforms = transforms

    def __call__(self, image):
        return [t(image) for t in self.transforms]


def rate(loader, epochs):
    """Images/s over the epochs after the first."""
    seen, start = 0, None
    for epoch in range(epochs):
        if epoch == 1:
            start = time.monotonic()
        if hasattr(loader, "set_epoch"):
            loader.set_epoch(epoch)
        for views, _ in loader:
            if epoch >= 1:
                seen += views[0].shape[0]
    return seen / (time.monotonic() - start)


def torch_rate(root, views, args):
    loader = torch.utils.data.DataLoader(
        datasets.ImageFolder(root, Views(views)), batch_size=args.batch_size,
        shuffle=True, num_workers=args.cores, persistent_workers=True)
    return rate(loader, args.epochs)


def stoker_rate(root, views, socket, args):
    import stoker
    loader = stoker.DataLoader(root, transform=views,
                               batch_size=args.batch_size, shuffle=True,
                               socket=socket)
    try:
        return rate(loader, args.epochs)
    finally:
        loader.close()


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", required=True)
    parser.add_argument("--build", default="build")
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--batch_size", type=int, default=64)
    parser.add_argument("--cores", type=int, default=os.cpu_count())
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    cases = {"dino": dino_views(), "moco": moco_views(),
             "decode": [T.Compose([T.RandomResizedCrop(8), T.PILToTensor()])]}
    with tempfile.TemporaryDirectory() as tmp:
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
            theirs = torch_rate(args.data, cases["dino"], args)
            runs = {name: [] for name in cases}
            for _ in range(args.rounds):
                for name, views in cases.items():
                    runs[name].append(stoker_rate(args.data, views, socket,
                                                  args))
        finally:
            daemon.terminate()
            daemon.wait()
    ours = {name: sorted(r)[len(r) // 2] for name, r in runs.items()}
    images = len(datasets.ImageFolder(args.data))
    print(f"{images} images, batch {args.batch_size}, {args.cores} cores, "
          f"{args.epochs - 1} epochs timed, stoker's the median of "
          f"{args.rounds} rounds\n")
    print("| loader | images/s | against torch |")
    print("|---|---|---|")
    print(f"| torch DataLoader, DINO's ten views ({args.cores} workers) | "
          f"{theirs:.1f} | 1.00x |")
    for name, label in (("dino", "DINO's ten views"),
                        ("moco", "MoCo v3's two views"),
                        ("decode", "one 8x8 view (the decode, nearly)")):
        print(f"| stoker, {label} | {ours[name]:.1f} | "
              f"{ours[name] / theirs:.2f}x |")
    share = 1 - ours["dino"] / ours["decode"]
    print(f"\nthe ten views take {share * 100:.0f}% of stoker's time per "
          f"image ({1000 / ours['dino']:.2f} ms per image on {args.cores} "
          f"cores, {1000 / ours['decode']:.2f} ms for the decode alone)")


if __name__ == "__main__":
    sys.exit(main())
