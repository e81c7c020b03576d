#!/usr/bin/python3
"""Self-supervised training in DINO's way (self-distillation, multi-crop) for a
few steps on an ImageFolder served by stokerd, and prints images/s and how
much of the time went to waiting for input.

  python3 train_dino.py /data/imagenet/train [--socket=PATH] [--steps=20]
                        [--batch_size=64] [--global_size=224] [--local_size=96]

The augmentation is DINO's DataAugmentationDINO (main_dino.py), op for op:
two global crops (RandomResizedCrop(224, scale=(0.4, 1.0), bicubic), the flip
and colour jitter, Pillow's Gaussian blur with p 1.0, then 0.1 and solarize
0.2) and eight local crops (RandomResizedCrop(96, scale=(0.05, 0.4)), p 0.5
blur). DINO's own GaussianBlur and Solarization classes become
stoker.PILGaussianBlur and stoker.Solarization, which do the same Pillow
calls. stokerd decodes each image once and makes the ten views from it;
the batch is ([global1, global2, local1, ..., local8], labels).

The model is small (a ResNet-18 backbone and a projection head, student and
momentum teacher); the loss is DINO's cross-entropy between the teacher's
centred, sharpened outputs on the global crops and the student's on every
other crop.
"""
import argparse
import copy
import time

import torch
import torchvision
import torchvision.transforms as T

import stoker

MEAN, STD = (0.485, 0.456, 0.406), (0.229, 0.224, 0.225)


def dino_views(global_size=224, local_size=96, local_crops=8):
    """DataAugmentationDINO's transforms, as a list: one per view."""
    bicubic = T.InterpolationMode.BICUBIC
    flip_and_color_jitter = T.Compose([
        T.RandomHorizontalFlip(p=0.5),
        T.RandomApply([T.ColorJitter(brightness=0.4, contrast=0.4,
                                     saturation=0.2, hue=0.1)], p=0.8),
        T.RandomGrayscale(p=0.2)])
    normalize = T.Compose([T.ToTensor(), T.Normalize(MEAN, STD)])
    global1 = T.Compose([
        T.RandomResizedCrop(global_size, scale=(0.4, 1.0),
                            interpolation=bicubic),
        flip_and_color_jitter, stoker.PILGaussianBlur(1.0), normalize])
    global2 = T.Compose([
        T.RandomResizedCrop(global_size, scale=(0.4, 1.0),
                            interpolation=bicubic),
        flip_and_color_jitter, stoker.PILGaussianBlur(0.1),
        stoker.Solarization(0.2), normalize])
    local = T.Compose([
        T.RandomResizedCrop(local_size, scale=(0.05, 0.4),
                            interpolation=bicubic),
        flip_and_color_jitter, stoker.PILGaussianBlur(p=0.5), normalize])
    return [global1, global2] + [local] * local_crops


class Student(torch.nn.Module):
    """A backbone and DINO's head to `out_dim` prototypes."""

    def __init__(self, out_dim: int = 1024):
        super().__init__()
        self.backbone = torchvision.models.resnet18(num_classes=256)
        self.head = torch.nn.Sequential(torch.nn.GELU(),
                                        torch.nn.Linear(256, out_dim))

    def forward(self, crops):
        # Crops of one size at a time, as DINO's MultiCropWrapper does.
        sizes = sorted({c.shape[-1] for c in crops}, reverse=True)
        out = [self.backbone(torch.cat([c for c in crops
                                        if c.shape[-1] == s]))
               for s in sizes]
        return self.head(torch.cat(out))


def dino_loss(student, teacher, center, crops, student_temp=0.1,
              teacher_temp=0.04):
    """DINO's loss: each student crop against each other global crop."""
    student = (student / student_temp).chunk(crops)
    targets = torch.softmax((teacher - center) / teacher_temp, dim=-1)
    targets = targets.detach().chunk(2)
    total, terms = 0.0, 0
    for t, target in enumerate(targets):
        for s, output in enumerate(student):
            if s == t:
                continue
            total = total + torch.sum(
                -target * torch.log_softmax(output, dim=-1), dim=-1).mean()
            terms += 1
    return total / terms


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("root", help="an ImageFolder directory")
    parser.add_argument("--socket", default=None,
                        help="stokerd's socket (default: $STOKER_SOCKET, "
                        "then /run/stoker/stoker.sock)")
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--batch_size", type=int, default=64)
    parser.add_argument("--global_size", type=int, default=224)
    parser.add_argument("--local_size", type=int, default=96)
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available()
                        else "cpu")
    args = parser.parse_args()
    device = torch.device(args.device)

    views = dino_views(args.global_size, args.local_size)
    # Views come on the CPU; each moves to the GPU as DINO's loop moves it.
    loader = stoker.DataLoader(args.root, transform=views,
                               batch_size=args.batch_size, shuffle=True,
                               drop_last=True, socket=args.socket)
    print(f"{loader.num_samples} images, {len(views)} views each, "
          f"{len(loader)} batches per epoch, on {device}")

    student = Student().to(device).train()
    teacher = copy.deepcopy(student).requires_grad_(False)
    center = torch.zeros(1, 1024, device=device)
    optimizer = torch.optim.AdamW(student.parameters(), lr=5e-4)
    step, images_seen, start, epoch = 0, 0, None, 0
    while step < args.steps:
        loader.set_epoch(epoch)
        for crops, _ in loader:
            crops = [c.to(device, non_blocking=True) for c in crops]
            teacher_out = teacher(crops[:2])
            loss = dino_loss(student(crops), teacher_out, center, len(crops))
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()
            with torch.no_grad():  # momentum teacher and centre
                for p, q in zip(student.parameters(), teacher.parameters()):
                    q.mul_(0.996).add_(p.detach(), alpha=0.004)
                center.mul_(0.9).add_(teacher_out.mean(0, keepdim=True),
                                      alpha=0.1)
            step += 1
            if step == 1:  # the first step warms up; measure the others
                if device.type == "cuda":
                    torch.cuda.synchronize()
                start = time.monotonic()
            else:
                images_seen += crops[0].shape[0]
            if step % 5 == 0 or step == args.steps:
                print(f"step {step}: dino loss {loss.item():.3f}")
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
