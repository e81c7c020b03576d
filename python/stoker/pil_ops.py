"""The two small Pillow transforms self-supervised recipes ship as their own
classes, here so that stokerd can run them: DINO's and MoCo v3's
GaussianBlur (Pillow's ImageFilter.GaussianBlur with a random radius) and
Solarization (ImageOps.solarize). Each is also a plain transform on a PIL
image, drawing from Python's `random` as the recipes' classes do, so that
one Compose serves a torch DataLoader and stoker.DataLoader alike.

    from stoker import PILGaussianBlur, Solarization
    global2 = transforms.Compose([
        transforms.RandomResizedCrop(224, scale=(0.4, 1.0),
                                     interpolation=InterpolationMode.BICUBIC),
        flip_and_color_jitter,
        PILGaussianBlur(0.1),
        Solarization(0.2),
        normalize])
"""
from __future__ import annotations

import random


class PILGaussianBlur:
    """Blurs a PIL image with probability p as
    img.filter(ImageFilter.GaussianBlur(radius)), radius drawn uniformly
    from [radius_min, radius_max]: DINO's utils.GaussianBlur and MoCo v3's
    loader.GaussianBlur (whose sigma is this radius). Pillow's three-pass box
    blur, which is not torchvision's GaussianBlur kernel; stokerd's is
    Pillow's, byte for byte."""

    def __init__(self, p: float = 0.5, radius_min: float = 0.1,
                 radius_max: float = 2.0):
        if not 0.0 <= p <= 1.0:
            raise ValueError(f"p must be in [0, 1], got {p}")
        if not 0.0 <= radius_min <= radius_max:
            raise ValueError("radius_min and radius_max must satisfy "
                             f"0 <= min <= max, got [{radius_min}, "
                             f"{radius_max}]")
        self.p = float(p)
        self.radius_min, self.radius_max = float(radius_min), float(radius_max)

    def __call__(self, img):
        from PIL import ImageFilter
        if random.random() > self.p:  # DINO's `random.random() <= p`
            return img
        radius = random.uniform(self.radius_min, self.radius_max)
        return img.filter(ImageFilter.GaussianBlur(radius=radius))

    def __repr__(self) -> str:
        return (f"PILGaussianBlur(p={self.p}, radius_min={self.radius_min}, "
                f"radius_max={self.radius_max})")


class Solarization:
    """ImageOps.solarize(img) (every value >= 128 inverted) with
    probability p: DINO's utils.Solarization and MoCo v3's
    loader.Solarize (use p=1.0 inside RandomApply, or p directly)."""

    threshold = 128

    def __init__(self, p: float = 0.2):
        if not 0.0 <= p <= 1.0:
            raise ValueError(f"p must be in [0, 1], got {p}")
        self.p = float(p)

    def __call__(self, img):
        from PIL import ImageOps
        if random.random() < self.p:
            return ImageOps.solarize(img, self.threshold)
        return img

    def __repr__(self) -> str:
        return f"Solarization(p={self.p})"
