#!/usr/bin/python3
"""Trains a few steps with the data settings of torchvision's ResNet-50 V2
recipe (references/classification, 80.9% top-1) on an ImageFolder served by
stokerd: train crop 176, TrivialAugmentWide, RandomErasing 0.1, MixUp 0.2 /
CutMix 1.0 in the trainer, repeated augmentation 4, eval resize 232 and
crop 224; then evaluates.

  python3 train_resnet50_recipe.py --data=DIR [--socket=PATH] [--steps=10]

The transforms are the recipe's own objects; only the loader lines differ
from the reference's train.py (its RASampler is repeated_augmentations=4).
"""
import argparse
import time

import torch
import torchvision
import torchvision.transforms as T

import stoker

MEAN, STD = (0.485, 0.456, 0.406), (0.229, 0.224, 0.225)


def recipe_transforms(train_crop, val_resize, val_crop):
    train = T.Compose([
        T.RandomResizedCrop(train_crop), T.RandomHorizontalFlip(0.5),
        T.TrivialAugmentWide(), T.PILToTensor(),
        T.ConvertImageDtype(torch.float), T.Normalize(MEAN, STD),
        T.RandomErasing(p=0.1)])
    val = T.Compose([
        T.Resize(val_resize), T.CenterCrop(val_crop), T.PILToTensor(),
        T.ConvertImageDtype(torch.float), T.Normalize(MEAN, STD)])
    return train, val


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", required=True, help="ImageFolder root")
    parser.add_argument("--socket", default=None)
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--batch_size", type=int, default=32)
    parser.add_argument("--model", default="resnet50")
    parser.add_argument("--train_crop", type=int, default=176)
    parser.add_argument("--val_resize", type=int, default=232)
    parser.add_argument("--val_crop", type=int, default=224)
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available()
                        else "cpu")
    args = parser.parse_args()
    device = torch.device(args.device)
    train_tf, val_tf = recipe_transforms(args.train_crop, args.val_resize,
                                         args.val_crop)
    probe = stoker.DataLoader(args.data, transform=val_tf, batch_size=1,
                              socket=args.socket)
    num_classes = len(probe.classes)
    probe.close()
    # The recipe: mixup_alpha 0.2, cutmix_alpha 1.0, one of them per batch.
    mix = stoker.RandomChoice([stoker.MixUp(alpha=0.2, num_classes=num_classes),
                               stoker.CutMix(alpha=1.0, num_classes=num_classes)])
    train = stoker.DataLoader(args.data, transform=train_tf,
                              batch_size=args.batch_size, shuffle=True,
                              drop_last=True, batch_transform=mix,
                              repeated_augmentations=4,
                              device=device, socket=args.socket)
    val = stoker.DataLoader(args.data, transform=val_tf,
                            batch_size=args.batch_size, device=device,
                            socket=args.socket)
    model = getattr(torchvision.models, args.model)(num_classes=num_classes)
    model = model.to(device).train()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.5, momentum=0.9,
                                weight_decay=2e-5)
    loss_fn = torch.nn.CrossEntropyLoss(label_smoothing=0.1)
    print(f"{num_classes} classes, {len(train.dataset)} images, "
          f"{len(train)} batches per epoch, on {device}")
    step, seen, start, epoch = 0, 0, time.monotonic(), 0
    while step < args.steps:
        train.set_epoch(epoch)
        for images, targets in train:  # targets: mixed one-hot rows
            loss = loss_fn(model(images), targets)
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()
            step += 1
            seen += images.shape[0]
            print(f"step {step}: loss {loss.item():.3f}")
            if step == args.steps:
                break
        epoch += 1
    elapsed = time.monotonic() - start
    model.eval()
    correct = 0
    with torch.inference_mode():
        for images, labels in val:
            correct += int((model(images).argmax(1) == labels).sum())
    print(f"{seen / elapsed:.1f} train images/s; eval accuracy "
          f"{correct}/{len(val.dataset)}")
    for loader in (train, val):
        loader.close()


if __name__ == "__main__":
    main()
