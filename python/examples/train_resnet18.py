#!/usr/bin/python3
"""Trains torchvision's ResNet-18 for a few steps on an ImageFolder served by
stokerd, on CUDA when there is a GPU (else the CPU), and prints images/s and
how much of the time went to waiting for input.

  python3 train_resnet18.py --data=DIR [--socket=PATH] [--steps=20]

The only stoker-specific lines are the ones building the loader; the
training loop is the one a torch DataLoader would have.
"""
import argparse
import time

import torch
import torchvision
import torchvision.transforms as T

import stoker


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", required=True, help="ImageFolder root")
    parser.add_argument("--socket", default=None,
                        help="stokerd's socket (default: $STOKER_SOCKET, "
                        "then /run/stoker/stoker.sock)")
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--batch_size", type=int, default=32)
    parser.add_argument("--size", type=int, default=224)
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available()
                        else "cpu")
    args = parser.parse_args()
    device = torch.device(args.device)

    # Before: torch.utils.data.DataLoader(torchvision.datasets.ImageFolder(
    #     args.data, transform), batch_size=..., shuffle=True,
    #     num_workers=..., pin_memory=True)
    transform = T.Compose([
        T.RandomResizedCrop(args.size), T.RandomHorizontalFlip(),
        T.ToTensor(), T.Normalize([0.485, 0.456, 0.406], [0.229, 0.224, 0.225])])
    loader = stoker.DataLoader(args.data, batch_size=args.batch_size,
                               transform=transform, shuffle=True,
                               device=device, socket=args.socket)

    model = torchvision.models.resnet18(num_classes=len(loader.classes))
    model = model.to(device).train()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    loss_fn = torch.nn.CrossEntropyLoss()
    print(f"{len(loader.classes)} classes, {loader.num_samples} images, "
          f"{len(loader)} batches per epoch, on {device}")

    step, images_seen, start = 0, 0, None
    epoch = 0
    while step < args.steps:
        loader.set_epoch(epoch)
        for images, labels in loader:
            # With a torch DataLoader these would be
            # images.to(device, non_blocking=True); stoker already did it.
            loss = loss_fn(model(images), labels)
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()
            step += 1
            if step == 1:  # the first step warms up; measure the others
                if device.type == "cuda":
                    torch.cuda.synchronize()
                start = time.monotonic()
            else:
                images_seen += images.shape[0]
            if step % 5 == 0 or step == args.steps:
                print(f"step {step}: loss {loss.item():.3f}")
            if step == args.steps:
                break
        epoch += 1
    if device.type == "cuda":
        torch.cuda.synchronize()
    elapsed = time.monotonic() - start
    stats = loader.input_stats()
    print(f"{images_seen / elapsed:.1f} images/s over {args.steps - 1} steps; "
          f"input-bound {stats['input_bound_percent']:.1f}% "
          f"(below ~10%: the input pipeline keeps up)")
    loader.close()


if __name__ == "__main__":
    main()
