#!/usr/bin/python3
"""A torch DataLoader with the standard torchvision training pipeline, as a
trainer would write it: ImageFolder, RandomResizedCrop(224),
RandomHorizontalFlip, ToTensor, Normalize; batch 64, num_workers = cores,
persistent workers. Prints images/s over the epochs after the first, and
how long the trainer waited for the first batch of an epoch versus any
other batch (with --step_ms, a simulated training step per batch)."""
import argparse
import os
import time

import torch
from torchvision import datasets, transforms


def train_transform(size):
    """RandomResizedCrop + RandomHorizontalFlip + ToTensor + Normalize."""
    return transforms.Compose([
        transforms.RandomResizedCrop(size),
        transforms.RandomHorizontalFlip(),
        transforms.ToTensor(),
        transforms.Normalize(mean=[0.485, 0.456, 0.406],
                             std=[0.229, 0.224, 0.225]),
    ])


def measure(loader, epochs, step_ms, touch=None):
    """Iterates `epochs` epochs (calling `touch` on each batch's images, then
    sleeping `step_ms`) and prints images/s over the epochs after the first,
    the mean wait for an epoch's first batch and the median wait for the
    others."""
    measured, start = 0, None
    first_waits, other_waits = [], []
    for epoch in range(epochs):
        if epoch == 1:
            start = time.monotonic()
        asked = time.monotonic()
        for index, (images, _) in enumerate(loader):
            wait = time.monotonic() - asked
            if touch is not None:
                touch(images)
            if epoch >= 1:
                measured += images.shape[0]
                (first_waits if index == 0 else other_waits).append(wait)
            time.sleep(step_ms / 1e3)
            asked = time.monotonic()
    print(f"images_per_s {measured / (time.monotonic() - start):.1f}",
          flush=True)
    other_waits.sort()
    print(f"epoch_start_wait_ms {1e3 * sum(first_waits) / len(first_waits):.1f}")
    print(f"median_wait_ms {1e3 * other_waits[len(other_waits) // 2]:.1f}")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--data", required=True)
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--batch_size", type=int, default=64)
    parser.add_argument("--workers", type=int, default=os.cpu_count())
    parser.add_argument("--size", type=int, default=224)
    parser.add_argument("--step_ms", type=float, default=0,
                        help="simulated training step per batch")
    args = parser.parse_args()
    loader = torch.utils.data.DataLoader(
        datasets.ImageFolder(args.data, train_transform(args.size)),
        batch_size=args.batch_size, shuffle=True, num_workers=args.workers,
        persistent_workers=True)
    measure(loader, args.epochs, args.step_ms)


if __name__ == "__main__":
    main()
