#!/usr/bin/python3
"""Semantic segmentation in the way of torchvision's segmentation reference
(train preset, cross-entropy with ignore index 255) for a few steps on
(image, mask) samples served by stokerd, and prints images/s and how much
of the time went to waiting for input.

  python3 train_segmentation.py --manifest=pairs.csv [--socket=PATH]
      [--steps=20] [--batch_size=8] [--base_size=520] [--crop_size=480]
  python3 train_segmentation.py --shards=/data/voc-{000..015}.tar ...

A manifest has a "path" column (the image) and a "mask" column (its PNG
label mask, mode P or L, as VOC's SegmentationClass); shards hold "jpg"
and "seg.png" members. The transform is the reference's train preset op
for op: RandomResize(0.5 base, 2.0 base), RandomHorizontalFlip(0.5),
RandomCrop(crop) padding the right and bottom (0 for the image, 255 for
the mask), PILToTensor, ConvertImageDtype, Normalize. stokerd applies the
geometric ops to the mask with the image's draws, nearest, and yields
(images, masks) with masks int64 [B, H, W].
"""
import argparse
import time

import torch
import torchvision
import torchvision.transforms as T

import stoker

MEAN, STD = (0.485, 0.456, 0.406), (0.229, 0.224, 0.225)


def train_preset(base_size=520, crop_size=480, hflip_prob=0.5):
    """The reference's SegmentationPresetTrain (PIL backend) for stoker."""
    return T.Compose([
        stoker.RandomResize(int(0.5 * base_size), int(2.0 * base_size)),
        T.RandomHorizontalFlip(hflip_prob),
        stoker.SegmentationRandomCrop(crop_size),
        T.PILToTensor(),
        T.ConvertImageDtype(torch.float),
        T.Normalize(MEAN, STD)])


def open_loader(args):
    fields = ("path", "mask") if args.manifest else ("jpg", "seg.png")
    return stoker.DataLoader(
        manifest=args.manifest, shards=args.shards, fields=fields,
        masks=fields[1:], transform=train_preset(args.base_size,
                                                 args.crop_size),
        batch_size=args.batch_size, shuffle=True, drop_last=True,
        socket=args.socket)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--manifest", default=None,
                        help="a .csv or .jsonl of path and mask columns")
    parser.add_argument("--shards", default=None,
                        help="tar shards of jpg and seg.png members")
    parser.add_argument("--socket", default=None,
                        help="stokerd's socket (default: $STOKER_SOCKET, "
                        "then /run/stoker/stoker.sock)")
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--batch_size", type=int, default=8)
    parser.add_argument("--base_size", type=int, default=520)
    parser.add_argument("--crop_size", type=int, default=480)
    parser.add_argument("--classes", type=int, default=21)
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available()
                        else "cpu")
    args = parser.parse_args()
    if (args.manifest is None) == (args.shards is None):
        parser.error("give --manifest or --shards")
    device = torch.device(args.device)

    loader = open_loader(args)
    print(f"{loader.num_samples} images with masks, {len(loader)} batches "
          f"per epoch, on {device}")
    model = torchvision.models.segmentation.lraspp_mobilenet_v3_large(
        num_classes=args.classes, weights=None, weights_backbone=None)
    model = model.to(device).train()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.02, momentum=0.9,
                                weight_decay=1e-4)
    criterion = torch.nn.CrossEntropyLoss(ignore_index=255)
    step, images_seen, start, epoch = 0, 0, None, 0
    while step < args.steps:
        loader.set_epoch(epoch)
        for images, masks in loader:
            images = images.to(device, non_blocking=True)
            masks = masks.to(device, non_blocking=True)
            loss = criterion(model(images)["out"], masks)
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
          f"input-bound {stats['input_bound_percent']:.1f}%")
    loader.close()


if __name__ == "__main__":
    main()
