"""Batch-level ops, run in the trainer on each batch the loader yields:
MixUp, CutMix and RandomChoice, as torchvision 0.14's classification
reference (references/classification/transforms.py: RandomMixup and
RandomCutmix with p=1.0, chosen by RandomChoice).

    mix = stoker.RandomChoice([stoker.MixUp(alpha=0.2, num_classes=1000),
                               stoker.CutMix(alpha=1.0, num_classes=1000)])
    loader = stoker.DataLoader(root, ..., batch_transform=mix)
    for images, labels in loader:   # labels: one-hot floats, mixed

Each op is called as op(images, labels, generator=None) and returns new
tensors (images, labels); the tensors given are not written. Its random
draws come from `generator` (a CPU torch.Generator; None: torch's global
one), in the reference's order: under torch.manual_seed(s) an op gives what
the reference gives under torch.manual_seed(s). Draws are made on the CPU;
the arithmetic runs on the tensors' device (CPU or CUDA).

The DataLoader passes each batch a generator seeded from (seed, rank,
epoch, batch index) (batch_generator): a batch gets the same mix on a
re-run and after load_state_dict().
"""
from __future__ import annotations

import hashlib
import inspect
import math
import numbers
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

import torch

from stoker.errors import InvalidArgument

Batch = Tuple[torch.Tensor, torch.Tensor]
_LAYOUTS = ("NCHW", "NHWC")
_FLOAT_HINT = ("end the transform with ToTensor() (or PILToTensor() then "
               "ConvertImageDtype(torch.float32)); without them the loader "
               "yields uint8 NHWC")


def batch_generator(seed: int, rank: int, epoch: int, index: int
                    ) -> torch.Generator:
    """A CPU generator seeded from (seed, rank, epoch, batch index): the same
    four numbers give the same draws in any process."""
    key = f"stoker.batch_transform/{seed}/{rank}/{epoch}/{index}".encode()
    digest = hashlib.blake2b(key, digest_size=8).digest()
    return torch.Generator().manual_seed(int.from_bytes(digest, "little") >> 1)


def accepts_generator(fn: Callable) -> bool:
    """Whether `fn` (or an nn.Module's forward) names a `generator`
    parameter that can be passed by keyword."""
    target = fn.forward if isinstance(fn, torch.nn.Module) else fn
    try:
        parameter = inspect.signature(target).parameters.get("generator")
    except (TypeError, ValueError):  # a builtin without a signature
        return False
    return parameter is not None and parameter.kind in (
        inspect.Parameter.POSITIONAL_OR_KEYWORD,
        inspect.Parameter.KEYWORD_ONLY)


def call_batch_transform(fn: Callable, images: torch.Tensor,
                         labels: torch.Tensor,
                         generator: Optional[torch.Generator],
                         with_generator: Optional[bool] = None) -> Batch:
    """fn(images, labels[, generator=generator]) checked to return a pair;
    the generator is passed only when fn accepts one."""
    if with_generator is None:
        with_generator = accepts_generator(fn)
    if with_generator:
        result = fn(images, labels, generator=generator)
    else:
        result = fn(images, labels)
    if not isinstance(result, (tuple, list)) or len(result) != 2:
        raise InvalidArgument(
            f"batch_transform {fn!r} returned {type(result).__name__}, not "
            "(images, labels)")
    return result[0], result[1]


def _beta(alpha: float, generator: Optional[torch.Generator]) -> float:
    """One draw from Beta(alpha, alpha), as the reference draws it (the
    first coordinate of a Dirichlet(alpha, alpha))."""
    sample = torch._sample_dirichlet(torch.tensor([alpha, alpha]),
                                     generator=generator)
    return float(sample[0])


def _mix_labels(one_hot: torch.Tensor, lam: float) -> torch.Tensor:
    """lam * one_hot + (1 - lam) * one_hot rolled by one (in place)."""
    rolled = one_hot.roll(1, 0).mul_(1.0 - lam)
    return one_hot.mul_(lam).add_(rolled)


class _MixOp:
    """What MixUp and CutMix share: arguments, checks, the p draw."""

    def __init__(self, alpha: float, num_classes: int, p: float):
        if not isinstance(num_classes, numbers.Integral) or num_classes < 1:
            raise InvalidArgument(
                f"num_classes={num_classes!r}: a positive int (the "
                "dataset's, len(loader.dataset.classes))")
        if not alpha > 0:
            raise InvalidArgument(f"alpha={alpha!r}: must be above 0")
        if not 0.0 <= p <= 1.0:
            raise InvalidArgument(f"p={p!r}: a probability in [0, 1]")
        self.alpha = float(alpha)
        self.num_classes = int(num_classes)
        self.p = float(p)

    def _one_hot(self, images: torch.Tensor, labels: torch.Tensor
                 ) -> torch.Tensor:
        """Checks the batch; its labels as one-hot rows of images' dtype."""
        name = type(self).__name__
        if images.ndim != 4 or labels.ndim != 1:
            raise InvalidArgument(
                f"{name} takes images of 4 dimensions and labels of 1, not "
                f"{tuple(images.shape)} and {tuple(labels.shape)}")
        if not images.is_floating_point():
            raise InvalidArgument(
                f"{name} needs float images, not {images.dtype}: "
                + _FLOAT_HINT)
        if labels.dtype != torch.int64:
            raise InvalidArgument(f"{name} needs int64 labels, not "
                                  f"{labels.dtype}")
        return torch.nn.functional.one_hot(
            labels, num_classes=self.num_classes).to(dtype=images.dtype)

    def _skips(self, generator: Optional[torch.Generator]) -> bool:
        """The reference's `torch.rand(1) >= p` (drawn even when p=1)."""
        return torch.rand(1, generator=generator).item() >= self.p

    def __repr__(self) -> str:
        return (f"{type(self).__name__}(alpha={self.alpha}, "
                f"num_classes={self.num_classes}, p={self.p})")


class MixUp(_MixOp):
    """Mixes each image and its one-hot label with the previous ones in the
    batch (the batch rolled by one): lam * x + (1 - lam) * rolled, with one
    lam ~ Beta(alpha, alpha) per batch. Any layout. With probability 1 - p
    the batch is left as it is (labels still one-hot)."""

    def __init__(self, alpha: float = 1.0, *, num_classes: int, p: float = 1.0):
        super().__init__(alpha, num_classes, p)

    def __call__(self, images: torch.Tensor, labels: torch.Tensor,
                 generator: Optional[torch.Generator] = None) -> Batch:
        one_hot = self._one_hot(images, labels)
        if self._skips(generator):
            return images, one_hot
        lam = _beta(self.alpha, generator)
        rolled = images.roll(1, 0).mul_(1.0 - lam)
        return images.mul(lam).add_(rolled), _mix_labels(one_hot, lam)


class CutMix(_MixOp):
    """Pastes a box of the previous image in the batch (the batch rolled by
    one) into each image; the box's side is sqrt(1 - lam) of the image's,
    lam ~ Beta(alpha, alpha), centred at a uniform pixel and clipped to the
    image; labels mix by the area kept. `layout` is "NCHW" (after ToTensor)
    or "NHWC". With probability 1 - p the batch is left as it is."""

    def __init__(self, alpha: float = 1.0, *, num_classes: int, p: float = 1.0,
                 layout: str = "NCHW"):
        super().__init__(alpha, num_classes, p)
        if layout not in _LAYOUTS:
            raise InvalidArgument(f"layout={layout!r}: NCHW or NHWC")
        self.layout = layout

    def box(self, lam: float, height: int, width: int,
            generator: Optional[torch.Generator]) -> Tuple[int, int, int, int]:
        """(x1, y1, x2, y2) of the box for lam; draws its centre."""
        r_x = int(torch.randint(width, (1,), generator=generator))
        r_y = int(torch.randint(height, (1,), generator=generator))
        r = 0.5 * math.sqrt(1.0 - lam)
        r_w_half, r_h_half = int(r * width), int(r * height)
        return (max(r_x - r_w_half, 0), max(r_y - r_h_half, 0),
                min(r_x + r_w_half, width), min(r_y + r_h_half, height))

    def __call__(self, images: torch.Tensor, labels: torch.Tensor,
                 generator: Optional[torch.Generator] = None) -> Batch:
        one_hot = self._one_hot(images, labels)
        if self._skips(generator):
            return images, one_hot
        lam = _beta(self.alpha, generator)
        h_dim = 2 if self.layout == "NCHW" else 1
        height, width = images.shape[h_dim], images.shape[h_dim + 1]
        x1, y1, x2, y2 = self.box(lam, height, width, generator)
        region = [slice(None)] * 4
        region[h_dim], region[h_dim + 1] = slice(y1, y2), slice(x1, x2)
        out = images.clone()
        out[tuple(region)] = images[tuple(region)].roll(1, 0)
        kept = float(1.0 - (x2 - x1) * (y2 - y1) / (width * height))
        return out, _mix_labels(one_hot, kept)

    def __repr__(self) -> str:
        return super().__repr__()[:-1] + f", layout={self.layout!r})"


class RandomChoice:
    """Applies one of `transforms` to each batch, drawn with weights `p`
    (None: equal), as torchvision's RandomChoice; the chosen one gets the
    same generator (when it takes one)."""

    def __init__(self, transforms: Sequence[Callable],
                 p: Optional[Sequence[float]] = None):
        self.transforms = list(transforms)
        if not self.transforms or not all(map(callable, self.transforms)):
            raise InvalidArgument("RandomChoice takes a non-empty list of "
                                  "callables (images, labels) -> (images, labels)")
        weights = [1.0] * len(self.transforms) if p is None else list(p)
        if (len(weights) != len(self.transforms) or min(weights) < 0
                or sum(weights) <= 0):
            raise InvalidArgument(
                f"p={p!r}: one weight >= 0 per transform, not all 0")
        self.p = None if p is None else weights
        self._weights = torch.tensor(weights, dtype=torch.float64)
        self._with_generator = [accepts_generator(t) for t in self.transforms]

    def __call__(self, images: torch.Tensor, labels: torch.Tensor,
                 generator: Optional[torch.Generator] = None) -> Batch:
        i = int(torch.multinomial(self._weights, 1, generator=generator))
        return call_batch_transform(self.transforms[i], images, labels,
                                    generator, self._with_generator[i])

    def __repr__(self) -> str:
        return f"RandomChoice({self.transforms!r}, p={self.p!r})"


def _mix_ops(fn: Any) -> List[_MixOp]:
    """The MixUp and CutMix in fn (itself, or inside RandomChoices)."""
    if isinstance(fn, _MixOp):
        return [fn]
    if isinstance(fn, RandomChoice):
        return [op for t in fn.transforms for op in _mix_ops(t)]
    return []


def check_for_loader(fn: Any, output: Dict[str, str], classes: int) -> None:
    """Refuses, before any batch, a batch_transform that cannot run on what
    the loader yields: MixUp/CutMix on uint8 images, or with fewer
    num_classes than the dataset's `classes` (0: unknown)."""
    if not callable(fn):
        raise InvalidArgument(
            f"batch_transform={fn!r}: a callable (images, labels) -> "
            "(images, labels), such as stoker.MixUp(...)")
    for op in _mix_ops(fn):
        if output.get("dtype") == "DTYPE_UINT8":
            layout = output.get("layout", "LAYOUT_NHWC")[len("LAYOUT_"):]
            raise InvalidArgument(
                f"{op!r} needs float images, but the transform gives uint8 "
                f"{layout}: " + _FLOAT_HINT)
        if op.num_classes < classes:
            raise InvalidArgument(
                f"{op!r}: the dataset has {classes} classes")
