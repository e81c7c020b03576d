"""stoker's eval output against torchvision + this machine's Pillow, byte
for byte, on every image of an ImageFolder (run.sh: 500 generated photos).

  fidelity.py --data=DIR [--device=cuda]

Eval transforms: Resize(256) + CenterCrop(224) as uint8; the ResNet-50 V2
recipe's Resize(232) + CenterCrop(224) + ConvertImageDtype + Normalize as
float32; Resize(256, bicubic) + CenterCrop(224) as uint8; and, where
torchvision has transforms.v2, v2's Resize(256) + CenterCrop(224) + ToImage
+ ToDtype(float32, scale=True) + Normalize. The reference is
torchvision's ImageFolder with the same transform object, through torch's
DataLoader (8 workers) in the same order.
"""
import argparse

import torch
import torchvision
import torchvision.transforms as T

import stoker

from common import Stokerd, emit

MEAN, STD = (0.485, 0.456, 0.406), (0.229, 0.224, 0.225)
BICUBIC = T.InterpolationMode.BICUBIC
TRANSFORMS = {
    "resize256_crop224_uint8": T.Compose([
        T.Resize(256), T.CenterCrop(224), T.PILToTensor()]),
    "recipe_eval_232_224_float32": T.Compose([
        T.Resize(232), T.CenterCrop(224), T.PILToTensor(),
        T.ConvertImageDtype(torch.float), T.Normalize(MEAN, STD)]),
    "bicubic256_crop224_uint8": T.Compose([
        T.Resize(256, interpolation=BICUBIC), T.CenterCrop(224),
        T.PILToTensor()]),
}
try:  # transforms.v2 (torchvision >= 0.16): the same eval transform in v2
    from torchvision.transforms import v2
    TRANSFORMS["v2_resize256_crop224_float32"] = v2.Compose([
        v2.Resize(256), v2.CenterCrop(224), v2.ToImage(),
        v2.ToDtype(torch.float32, scale=True), v2.Normalize(MEAN, STD)])
except ImportError:
    pass


def compare(args, socket, name, transform):
    reference = torch.utils.data.DataLoader(
        torchvision.datasets.ImageFolder(args.data, transform),
        batch_size=50, num_workers=8)
    ours = stoker.DataLoader(args.data, batch_size=50, transform=transform,
                             socket=socket, device=args.device)
    equal = total = 0
    worst, first_bad = 0.0, None
    try:
        for (want, want_labels), (got, got_labels) in zip(reference, ours):
            got = got.cpu()
            assert torch.equal(want_labels, got_labels.cpu()), "labels differ"
            for i in range(want.shape[0]):
                same = torch.equal(want[i], got[i])
                equal += same
                if not same:
                    diff = (want[i].double() - got[i].double()).abs().max()
                    worst = max(worst, float(diff))
                    if first_bad is None:
                        first_bad = reference.dataset.samples[total][0]
                total += 1
    finally:
        ours.close()
    emit("fidelity", transform=name, images=total, byte_equal=equal,
         max_abs_diff=worst, first_different=first_bad, device=args.device)
    return equal == total


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--data", required=True)
    parser.add_argument("--device",
                        default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--workers", type=int, default=8)
    args = parser.parse_args()
    with Stokerd(args.workers) as daemon:
        results = [compare(args, daemon.socket, name, transform)
                   for name, transform in TRANSFORMS.items()]
    raise SystemExit(0 if all(results) else 1)


if __name__ == "__main__":
    main()
