#!/usr/bin/python3
"""A torch DataLoader with the standard torchvision training pipeline, as a
trainer would write it: ImageFolder, RandomResizedCrop(224),
RandomHorizontalFlip, ToTensor, Normalize; batch 64, num_workers = cores,
persistent workers. Prints images/s over the epochs after the first."""
import argparse
import os
import time

import torch
from torchvision import datasets, transforms


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--data", required=True)
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--batch_size", type=int, default=64)
    parser.add_argument("--workers", type=int, default=os.cpu_count())
    parser.add_argument("--size", type=int, default=224)
    args = parser.parse_args()
    transform = transforms.Compose([
        transforms.RandomResizedCrop(args.size),
        transforms.RandomHorizontalFlip(),
        transforms.ToTensor(),
        transforms.Normalize(mean=[0.485, 0.456, 0.406],
                             std=[0.229, 0.224, 0.225]),
    ])
    loader = torch.utils.data.DataLoader(
        datasets.ImageFolder(args.data, transform),
        batch_size=args.batch_size, shuffle=True, num_workers=args.workers,
        persistent_workers=True)
    measured, start = 0, None
    for epoch in range(args.epochs):
        if epoch == 1:
            start = time.monotonic()
        for images, _ in loader:
            if epoch >= 1:
                measured += images.shape[0]
    print(f"images_per_s {measured / (time.monotonic() - start):.1f}",
          flush=True)


if __name__ == "__main__":
    main()
