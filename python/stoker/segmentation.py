"""The two transforms of torchvision's semantic segmentation reference
(references/segmentation/transforms.py) that torchvision itself lacks,
here so that stokerd can run its train preset with a label mask
(DataLoader(masks=...)):

    transform = transforms.Compose([
        stoker.RandomResize(260, 1040),
        transforms.RandomHorizontalFlip(0.5),
        stoker.SegmentationRandomCrop(480),
        transforms.PILToTensor(),
        transforms.ConvertImageDtype(torch.float),
        transforms.Normalize(mean=(0.485, 0.456, 0.406),
                             std=(0.229, 0.224, 0.225))])

Each is also a plain transform, drawing from Python's `random` and torch's
generator as the reference's classes do: on a PIL image, or on an (image,
mask) pair in one call, `t(image, mask)`, which gives both the same draw
(two calls would draw twice; torchvision's Compose passes one argument, so
a torch DataLoader applies them to pairs in its own loop, as the
reference's Compose does).
"""
from __future__ import annotations

import random
from typing import Any, Optional


class RandomResize:
    """The shorter side of the image resized to an integer drawn uniformly
    from [min_size, max_size] (random.randint), bilinear with antialiasing;
    a mask resized to the same size, nearest (F.resize(mask, size,
    NEAREST)): the reference's RandomResize."""

    def __init__(self, min_size: int, max_size: Optional[int] = None):
        max_size = min_size if max_size is None else max_size
        if not 1 <= int(min_size) <= int(max_size):
            raise ValueError("RandomResize needs 1 <= min_size <= max_size, "
                             f"got {min_size}, {max_size}")
        self.min_size, self.max_size = int(min_size), int(max_size)

    def __call__(self, image: Any, target: Any = None) -> Any:
        from torchvision.transforms import InterpolationMode
        from torchvision.transforms import functional as F
        size = random.randint(self.min_size, self.max_size)
        image = F.resize(image, size)
        if target is None:
            return image
        return image, F.resize(target, size, InterpolationMode.NEAREST)

    def __repr__(self) -> str:
        return f"RandomResize(min_size={self.min_size}, max_size={self.max_size})"


class SegmentationRandomCrop:
    """The reference's RandomCrop(size): an image smaller than size x size
    is padded on the right and bottom only (pad_if_smaller: 0 for the
    image, 255 for a mask, as the reference; stokerd pads a mask with the
    loader's mask_fill, 255 by default), then a size x size crop at a place
    drawn uniformly. After a RandomHorizontalFlip, as in the reference, the
    flip comes first."""

    mask_fill = 255

    def __init__(self, size: int):
        if int(size) < 1:
            raise ValueError(f"size must be positive, got {size}")
        self.size = int(size)

    def _pad(self, img: Any, fill: int) -> Any:
        from torchvision.transforms import functional as F
        width, height = img.size
        if min(width, height) >= self.size:
            return img
        return F.pad(img, [0, 0, max(self.size - width, 0),
                           max(self.size - height, 0)], fill=fill)

    def __call__(self, image: Any, target: Any = None) -> Any:
        from torchvision import transforms as T
        from torchvision.transforms import functional as F
        image = self._pad(image, 0)
        top, left, h, w = T.RandomCrop.get_params(image, (self.size, self.size))
        image = F.crop(image, top, left, h, w)
        if target is None:
            return image
        target = self._pad(target, self.mask_fill)
        return image, F.crop(target, top, left, h, w)

    def __repr__(self) -> str:
        return f"SegmentationRandomCrop(size={self.size})"
