#!/usr/bin/python3
"""The ResNet-50 V2 recipe's train transform (RandomResizedCrop 176, flip,
TrivialAugmentWide, PILToTensor, ConvertImageDtype, Normalize,
RandomErasing 0.1) through stoker.DataLoader against torch's DataLoader
with the same torchvision transform, same files, same cores, one run; the
rate with and without the automatic augmentation; and each op's CPU cost
in stokerd's code next to Pillow's for the same op on 224x224 photos.

  PYTHONPATH=build/python /usr/bin/python3 bench/bench_recipe.py \\
      --data=DIR --build=build [--epochs=3] [--batch_size=64]

DIR is an ImageFolder (bench/make_dataset makes a photo-like one).
"""
import argparse
import os
import subprocess
import sys
import tempfile
import time

import torch
from PIL import Image
from torchvision import datasets
from torchvision import transforms as T
from torchvision.transforms import autoaugment

MEAN, STD = (0.485, 0.456, 0.406), (0.229, 0.224, 0.225)


def recipe(augment):
    steps = [T.RandomResizedCrop(176), T.RandomHorizontalFlip()]
    if augment:
        steps.append(T.TrivialAugmentWide())
    steps += [T.PILToTensor(), T.ConvertImageDtype(torch.float),
              T.Normalize(MEAN, STD)]
    if augment:
        steps.append(T.RandomErasing(p=0.1))
    return T.Compose(steps)


def rate(loader, epochs):
    """Images/s over the epochs after the first."""
    seen, start = 0, None
    for epoch in range(epochs):
        if epoch == 1:
            start = time.monotonic()
        if hasattr(loader, "set_epoch"):
            loader.set_epoch(epoch)
        for images, _ in loader:
            if epoch >= 1:
                seen += images.shape[0]
    return seen / (time.monotonic() - start)


def torch_rate(data, transform, args):
    loader = torch.utils.data.DataLoader(
        datasets.ImageFolder(data, transform), batch_size=args.batch_size,
        shuffle=True, num_workers=args.cores, persistent_workers=True)
    return rate(loader, args.epochs)


def stoker_rate(data, transform, socket, args):
    import stoker
    loader = stoker.DataLoader(data, transform=transform,
                               batch_size=args.batch_size, shuffle=True,
                               socket=socket)
    try:
        return rate(loader, args.epochs)
    finally:
        loader.close()


def photos(data, count):
    paths = [os.path.join(d, f) for d, _, fs in os.walk(data) for f in fs]
    out = []
    for path in sorted(paths)[:count]:
        with Image.open(path) as im:
            out.append(im.convert("RGB").resize((224, 224)))
    return out


def op_costs(tool, images, ops):
    """ms per image of each op, 5 passes over the images: stokerd's code
    (augment_tool times the op alone) and Pillow's (torchvision's
    _apply_op, which includes its Python call)."""
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        src, dst = os.path.join(tmp, "in"), os.path.join(tmp, "out")
        with open(src, "wb") as f:
            for image in images:
                f.write(image.tobytes())

        for op, magnitude in ops:
            mine = float(subprocess.run(
                [tool, "op", src, dst, "224", "224", op, repr(magnitude),
                 "nearest", "0", "0", "0", "5"], check=True,
                capture_output=True, text=True).stdout)
            start = time.monotonic()
            for _ in range(5):
                for image in images:
                    autoaugment._apply_op(image, op, magnitude,
                                          T.InterpolationMode.NEAREST, None)
            pillow = (time.monotonic() - start) / (5 * len(images)) * 1e3
            rows.append((op, magnitude, mine, pillow))
    return rows


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", required=True)
    parser.add_argument("--build", default="build")
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--batch_size", type=int, default=64)
    parser.add_argument("--cores", type=int, default=os.cpu_count())
    args = parser.parse_args()
    stokerd = os.path.join(args.build, "daemon", "stokerd")
    tool = os.path.join(args.build, "tests", "augment_tool")
    with tempfile.TemporaryDirectory() as tmp:
        socket = os.path.join(tmp, "stoker.sock")
        daemon = subprocess.Popen([stokerd, "--config=", f"--socket={socket}",
                                   f"--workers={args.cores}"],
                                  stderr=subprocess.DEVNULL)
        try:
            for _ in range(200):
                if os.path.exists(socket):
                    break
                time.sleep(0.05)
            print(f"| transform | torch DataLoader ({args.cores} workers) "
                  f"images/s | stoker.DataLoader ({args.cores} workers) "
                  "images/s | ratio |")
            print("|---|---|---|---|")
            for name, augment in (("recipe (TrivialAugmentWide + "
                                   "RandomErasing)", True),
                                  ("same without them", False)):
                transform = recipe(augment)
                theirs = torch_rate(args.data, transform, args)
                mine = stoker_rate(args.data, transform, socket, args)
                print(f"| {name} | {theirs:.0f} | {mine:.0f} | "
                      f"{mine / theirs:.2f}x |")
        finally:
            daemon.terminate()
            daemon.wait()
    wide = T.TrivialAugmentWide()._augmentation_space(31)
    ops = [(name, float(values[20].item()) if values.ndim else 0.0)
           for name, (values, _) in wide.items() if name != "Identity"]
    print("\n| op (TrivialAugmentWide bin 20) | stokerd ms/image | "
          "Pillow ms/image | ratio |")
    print("|---|---|---|---|")
    for op, magnitude, mine, pillow in op_costs(tool, photos(args.data, 300),
                                                ops):
        ratio = f"{pillow / mine:.1f}x" if mine > 0 else "-"
        print(f"| {op}({magnitude:g}) | {mine:.3f} | {pillow:.3f} | {ratio} |")


if __name__ == "__main__":
    sys.exit(main())
