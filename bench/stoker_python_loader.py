#!/usr/bin/python3
"""torch_loader.py's trainer with stoker.DataLoader in place of torch's: the
same torchvision transform (RandomResizedCrop(224), RandomHorizontalFlip,
ToTensor, Normalize), batch 64, shuffled; each batch read whole
(images.sum(), on one thread unless --threads says otherwise, like the C++
client's --touch). Prints the same lines as torch_loader.py, and the input-
bound share the loader measured."""
import argparse

import torch

import stoker
from torch_loader import measure, train_transform


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
    loader = stoker.DataLoader(args.data, batch_size=args.batch_size,
                               transform=train_transform(args.size),
                               shuffle=True, socket=args.socket)
    # Reads every value of each batch (as the C++ client's --touch does).
    measure(loader, args.epochs, args.step_ms, touch=lambda images: images.sum())
    print(f"input_bound_percent {loader.input_stats()['input_bound_percent']:.1f}")
    loader.close()


if __name__ == "__main__":
    main()
