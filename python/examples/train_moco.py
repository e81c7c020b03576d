#!/usr/bin/python3
"""Self-supervised training in MoCo v3's way (two views, a momentum encoder,
a contrastive loss) for a few steps on an ImageFolder served by stokerd, and
prints images/s and how much of the time went to waiting for input.

  python3 train_moco.py /data/imagenet/train [--socket=PATH] [--steps=20]
                        [--batch_size=64] [--size=224]

The augmentation is MoCo v3's (main_moco.py) op for op: augmentation1 and
augmentation2, each RandomResizedCrop(224, scale=(0.08, 1.0)), colour
jitter with p 0.8, grayscale 0.2, Pillow's Gaussian blur (p 1.0, then 0.1),
solarize (0.2, the second only), and the horizontal flip last. MoCo's own
GaussianBlur and Solarize classes become stoker.PILGaussianBlur and
stoker.Solarization. The batch is ([view1, view2], labels), each image
decoded once.
"""
import argparse
import copy
import time

import torch
import torchvision
import torchvision.transforms as T

import stoker

MEAN, STD = (0.485, 0.456, 0.406), (0.229, 0.224, 0.225)


def moco_views(size=224, crop_min=0.08):
    """MoCo v3's augmentation1 and augmentation2, in its op order."""
    def augmentation(blur_p, solarize_p):
        ops = [T.RandomResizedCrop(size, scale=(crop_min, 1.0)),
               T.RandomApply([T.ColorJitter(0.4, 0.4, 0.2, 0.1)], p=0.8),
               T.RandomGrayscale(p=0.2),
               T.RandomApply([stoker.PILGaussianBlur(1.0, 0.1, 2.0)],
                             p=blur_p)]
        if solarize_p:
            ops.append(T.RandomApply([stoker.Solarization(1.0)],
                                     p=solarize_p))
        return T.Compose(ops + [T.RandomHorizontalFlip(), T.ToTensor(),
                                T.Normalize(MEAN, STD)])
    return [augmentation(1.0, 0.0), augmentation(0.1, 0.2)]


class Encoder(torch.nn.Module):
    """A backbone and MoCo v3's projection (and, for the query, predictor)."""

    def __init__(self, dim: int = 128, predictor: bool = True):
        super().__init__()
        self.backbone = torchvision.models.resnet18(num_classes=512)
        self.projector = torch.nn.Sequential(
            torch.nn.BatchNorm1d(512), torch.nn.ReLU(),
            torch.nn.Linear(512, dim))
        self.predictor = torch.nn.Sequential(
            torch.nn.Linear(dim, 512), torch.nn.BatchNorm1d(512),
            torch.nn.ReLU(), torch.nn.Linear(512, dim)) if predictor else None

    def forward(self, x):
        z = self.projector(self.backbone(x))
        return self.predictor(z) if self.predictor is not None else z


def contrastive_loss(q, k, temperature=1.0):
    q = torch.nn.functional.normalize(q, dim=1)
    k = torch.nn.functional.normalize(k, dim=1)
    logits = q @ k.t() / temperature
    labels = torch.arange(len(q), device=q.device)
    return torch.nn.functional.cross_entropy(logits, labels) * 2 * temperature


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("root", help="an ImageFolder directory")
    parser.add_argument("--socket", default=None,
                        help="stokerd's socket (default: $STOKER_SOCKET, "
                        "then /run/stoker/stoker.sock)")
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--batch_size", type=int, default=64)
    parser.add_argument("--size", type=int, default=224)
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available()
                        else "cpu")
    args = parser.parse_args()
    device = torch.device(args.device)

    loader = stoker.DataLoader(args.root, transform=moco_views(args.size),
                               batch_size=args.batch_size, shuffle=True,
                               drop_last=True, socket=args.socket)
    print(f"{loader.num_samples} images, 2 views each, {len(loader)} batches "
          f"per epoch, on {device}")

    query = Encoder().to(device).train()
    key = copy.deepcopy(query).requires_grad_(False)
    key.predictor = None  # the momentum encoder has no predictor
    optimizer = torch.optim.AdamW(query.parameters(), lr=1.5e-4)
    step, images_seen, start, epoch = 0, 0, None, 0
    while step < args.steps:
        loader.set_epoch(epoch)
        for (x1, x2), _ in loader:
            x1 = x1.to(device, non_blocking=True)
            x2 = x2.to(device, non_blocking=True)
            q1, q2 = query(x1), query(x2)
            with torch.no_grad():
                for p, m in zip(query.parameters(), key.parameters()):
                    m.mul_(0.99).add_(p.detach(), alpha=0.01)
                k1, k2 = key(x1), key(x2)
            loss = contrastive_loss(q1, k2) + contrastive_loss(q2, k1)
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()
            step += 1
            if step == 1:  # the first step warms up; measure the others
                if device.type == "cuda":
                    torch.cuda.synchronize()
                start = time.monotonic()
            else:
                images_seen += x1.shape[0]
            if step % 5 == 0 or step == args.steps:
                print(f"step {step}: contrastive loss {loss.item():.3f}")
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
