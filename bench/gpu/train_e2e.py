"""ResNet-50 trained for a fixed time on stoker.DataLoader(device="cuda")
or on torch's DataLoader, same files, same torchvision transform.

  train_e2e.py --data=DIR --loader=stoker|torch [--transform=classic|recipe]
               [--seconds=60] [--workers=15] [--batch=256]

classic: RandomResizedCrop(224) + RandomHorizontalFlip + ToTensor +
Normalize. recipe: the data side of torchvision's ResNet-50 V2 recipe
(RandomResizedCrop(176), flip, TrivialAugmentWide, PILToTensor,
ConvertImageDtype, Normalize, RandomErasing(0.1), then MixUp(0.2) or
CutMix(1.0) per batch; repeated augmentation left out on both sides).

Random weights, AMP bf16, channels_last, SGD. torch's DataLoader gets
`workers` worker processes, pin_memory and non_blocking copies; stoker a
stokerd of `workers` threads. Measured after a warm-up: images/s, GPU busy
% (NVML), input-bound % (the loop's time blocked in next()), host CPU % and
peak PSS of the trainer, its workers and stokerd.
"""
import argparse
import importlib
import os
import time

import torch
import torchvision
import torchvision.transforms as T

import stoker

from common import Sampler, Stokerd, emit, timed_steps

MEAN, STD = (0.485, 0.456, 0.406), (0.229, 0.224, 0.225)


def train_transform(kind, crop):
    if kind == "classic":
        return T.Compose([T.RandomResizedCrop(crop), T.RandomHorizontalFlip(),
                          T.ToTensor(), T.Normalize(MEAN, STD)])
    return T.Compose([T.RandomResizedCrop(crop), T.RandomHorizontalFlip(0.5),
                      T.TrivialAugmentWide(), T.PILToTensor(),
                      T.ConvertImageDtype(torch.float), T.Normalize(MEAN, STD),
                      T.RandomErasing(p=0.1)])


def torch_mix(num_classes):
    """The recipe's MixUp/CutMix on torch's side, in the workers' collate."""
    from torch.utils.data import default_collate
    from torchvision.transforms import v2
    mix = v2.RandomChoice([v2.MixUp(alpha=0.2, num_classes=num_classes),
                           v2.CutMix(alpha=1.0, num_classes=num_classes)])
    return lambda batch: mix(*default_collate(batch))


def torch_loader(args, transform, device):
    dataset = torchvision.datasets.ImageFolder(args.data, transform)
    collate = (torch_mix(len(dataset.classes)) if args.transform == "recipe"
               else None)
    loader = torch.utils.data.DataLoader(
        dataset, batch_size=args.batch, shuffle=True, drop_last=True,
        num_workers=args.workers, pin_memory=device.type == "cuda",
        persistent_workers=True, collate_fn=collate)
    loader.classes = dataset.classes

    def batches():
        while True:
            for images, labels in loader:
                yield (images.to(device, non_blocking=True),
                       labels.to(device, non_blocking=True))
    return loader, batches()


def stoker_loader(args, transform, device, socket):
    mix = None
    if args.transform == "recipe":
        probe = stoker.DataLoader(args.data, batch_size=1, socket=socket,
                                  transform=T.Compose([T.Resize(8), T.CenterCrop(8),
                                                       T.PILToTensor()]))
        classes = len(probe.classes)
        probe.close()
        mix = stoker.RandomChoice([stoker.MixUp(alpha=0.2, num_classes=classes),
                                   stoker.CutMix(alpha=1.0, num_classes=classes)])
    loader = stoker.DataLoader(args.data, batch_size=args.batch,
                               transform=transform, shuffle=True,
                               drop_last=True, socket=socket,
                               device=str(device), batch_transform=mix)

    def batches():
        while True:
            for images, labels in loader:
                yield images, labels
    return loader, batches()


def run(args, device, socket, pids):
    crop = args.crop or (224 if args.transform == "classic" else 176)
    transform = train_transform(args.transform, crop)
    if args.loader == "torch":
        loader, batches = torch_loader(args, transform, device)
    else:
        loader, batches = stoker_loader(args, transform, device, socket)
    model = getattr(torchvision.models, args.model)(num_classes=len(loader.classes))
    model = model.to(device, memory_format=torch.channels_last).train()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    loss_fn = torch.nn.CrossEntropyLoss(label_smoothing=0.1)
    dtype = torch.bfloat16

    def step(images, labels):
        images = images.contiguous(memory_format=torch.channels_last)
        with torch.autocast(device.type, dtype=dtype):
            loss = loss_fn(model(images), labels)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()

    sync = torch.cuda.synchronize if device.type == "cuda" else (lambda: None)
    warm_end = time.monotonic() + args.warmup
    while time.monotonic() < warm_end:
        step(*next(batches))
    sync()
    sampler = Sampler(pids + [os.getpid()])
    steps, waited, elapsed = timed_steps(batches, step, args.seconds, sync)
    sampled = sampler.stop()
    copies = ("the loader's own stream" if args.loader == "stoker"
              else "pin_memory + non_blocking on the trainer's stream")
    result = dict(loader=args.loader, transform=args.transform, crop=crop,
                  copies=copies if device.type == "cuda" else "none (CPU)",
                  model=args.model, batch=args.batch, workers=args.workers,
                  seconds=elapsed, steps=steps,
                  images_per_s=steps * args.batch / elapsed,
                  input_bound_percent=100 * waited / elapsed, **sampled)
    if args.loader == "stoker":
        result["stoker_input_bound_percent"] = \
            loader.input_stats()["input_bound_percent"]
        loader.close()
    else:
        del batches, loader  # ends the worker processes
    return result


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--data", required=True)
    parser.add_argument("--loader", choices=("stoker", "torch"), required=True)
    parser.add_argument("--transform", choices=("classic", "recipe"),
                        default="classic")
    parser.add_argument("--seconds", type=float, default=60)
    parser.add_argument("--warmup", type=float, default=10)
    parser.add_argument("--workers", type=int, default=15)
    parser.add_argument("--batch", type=int, default=256)
    parser.add_argument("--model", default="resnet50")
    parser.add_argument("--crop", type=int, default=0,
                        help="0: 224 (classic) or 176 (recipe)")
    parser.add_argument("--device", default="cuda")
    args = parser.parse_args()
    device = torch.device(args.device)
    if device.type == "cuda" and not torch.cuda.is_available():
        emit("e2e", loader=args.loader, transform=args.transform,
             skipped="no CUDA device")
        return
    if args.loader == "torch" and args.transform == "recipe":
        try:
            importlib.import_module("torchvision.transforms.v2")
        except ImportError:  # torchvision < 0.16: no v2.MixUp/CutMix
            emit("e2e", loader=args.loader, transform=args.transform,
                 skipped="torchvision has no transforms.v2.MixUp")
            return
    torch.backends.cudnn.benchmark = True
    if args.loader == "stoker":
        with Stokerd(args.workers) as daemon:
            result = run(args, device, daemon.socket, [daemon.process.pid])
    else:
        result = run(args, device, None, [])
    emit("e2e", device=str(device), **result)


if __name__ == "__main__":
    main()
