#!/usr/bin/python3
"""torch_loader.py's trainer with stoker.DataLoader in place of torch's: the
same torchvision transform (RandomResizedCrop(224), RandomHorizontalFlip,
ToTensor, Normalize), batch 64, shuffled; each batch read whole
(images.sum(), on one thread unless --threads says otherwise, like the C++
client's --touch). Prints the same lines as torch_loader.py, and the input-
bound share the loader measured."""
import argparse
import time

import torch
from torchvision import transforms

import stoker


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--data", required=True)
    parser.add_argument("--socket", required=True)
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--batch_size", type=int, default=64)
    parser.add_argument("--size", type=int, default=224)
    parser.add_argument("--step_ms", type=float, default=0)
    parser.add_argument("--threads", type=int, default=1,
                        help="torch's intra-op threads for the read (1: the "
                        "same single-threaded read as the C++ client's)")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    transform = transforms.Compose([
        transforms.RandomResizedCrop(args.size),
        transforms.RandomHorizontalFlip(),
        transforms.ToTensor(),
        transforms.Normalize(mean=[0.485, 0.456, 0.406],
                             std=[0.229, 0.224, 0.225]),
    ])
    loader = stoker.DataLoader(args.data, batch_size=args.batch_size,
                               transform=transform, shuffle=True,
                               socket=args.socket)
    measured, start, sink = 0, None, 0.0
    first_waits, other_waits = [], []
    for epoch in range(args.epochs):
        if epoch == 1:
            start = time.monotonic()
        asked = time.monotonic()
        for index, (images, _) in enumerate(loader):
            wait = time.monotonic() - asked
            sink += float(images.sum())  # reads every value of the batch
            if epoch >= 1:
                measured += images.shape[0]
                (first_waits if index == 0 else other_waits).append(wait)
            time.sleep(args.step_ms / 1e3)
            asked = time.monotonic()
    print(f"images_per_s {measured / (time.monotonic() - start):.1f}",
          flush=True)
    other_waits.sort()
    print(f"epoch_start_wait_ms {1e3 * sum(first_waits) / len(first_waits):.1f}")
    print(f"median_wait_ms {1e3 * other_waits[len(other_waits) // 2]:.1f}")
    print(f"input_bound_percent {loader.input_stats()['input_bound_percent']:.1f}")
    loader.close()


if __name__ == "__main__":
    main()
