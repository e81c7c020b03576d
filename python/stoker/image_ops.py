"""torchvision's crops, resizes, pads, flips, grayscale, colour jitter, blur,
solarize, rotation and affine warps (and stoker's PILGaussianBlur and
Solarization) -> the daemon's ops (stoker.v1.RandomResizedCrop,
Resize, ...), each as the dict of its JSON form; RandomApply around one of
them becomes the op with its probability.

stoker.transforms decides which transform goes where in the pipeline and
calls op() for each of these; what cannot run exactly is refused with the
`refuse` it passes (as augment_ops' functions do).
"""
from __future__ import annotations

import math
from typing import Any, Callable, Dict, Optional, Tuple

from stoker import augment_ops
from stoker.augment_ops import Refuse

# What RandomApply([one of these], p) becomes: the op with its own p, or
# (for ops that already have one) the product of the two.
APPLIED = {"ColorJitter", "GaussianBlur", "RandomRotation", "RandomAffine",
           "Grayscale", "RandomGrayscale", "RandomHorizontalFlip",
           "RandomVerticalFlip", "RandomSolarize", "PILGaussianBlur",
           "Solarization"}


def _size(transform: Any, value: Any, refuse: Refuse) -> Tuple[int, int]:
    if isinstance(value, int):
        return value, value
    values = list(value)
    if len(values) == 1:
        return int(values[0]), int(values[0])
    if len(values) == 2:
        return int(values[0]), int(values[1])
    raise refuse(repr(transform), f"size {value!r} is not (height, width)")


def _interpolation(transform: Any, refuse: Refuse) -> str:
    mode = getattr(transform, "interpolation", None)
    name = getattr(mode, "name", None)  # InterpolationMode
    if name is None:  # a PIL constant in old torchvision
        name = {0: "NEAREST", 2: "BILINEAR", 3: "BICUBIC"}.get(mode, str(mode))
    if name in ("BILINEAR", "NEAREST", "BICUBIC"):
        return "INTERPOLATION_" + name
    raise refuse(repr(transform), f"interpolation {name} is not supported")


def _jitter_factor(transform: Any, name: str, refuse: Refuse) -> float:
    value = getattr(transform, name, None)
    if value is None:
        return 0.0
    if isinstance(value, (int, float)):
        return float(value)
    lo, hi = float(value[0]), float(value[1])
    factor = hi - 1.0
    if factor < 0 or not math.isclose(lo, max(0.0, 1.0 - factor), abs_tol=1e-6):
        raise refuse(repr(transform),
                     f"{name} range ({lo}, {hi}) is not centred on 1")
    return factor


def _hue_factor(transform: Any, refuse: Refuse) -> float:
    """h for a hue range [-h, h] (torchvision keeps ColorJitter(hue=h) as
    that range, or None for 0)."""
    value = getattr(transform, "hue", None)
    if value is None:
        return 0.0
    if isinstance(value, (int, float)):
        lo, hi = -abs(float(value)), abs(float(value))
    else:
        lo, hi = float(value[0]), float(value[1])
    if not math.isclose(lo, -hi, abs_tol=1e-9) or not 0.0 <= hi <= 0.5:
        raise refuse(repr(transform),
                     f"hue range ({lo}, {hi}) is not [-h, h] with h <= 0.5")
    return hi


def _padding(transform: Any, padding: Any, prefix: str,
             refuse: Refuse) -> Dict[str, Any]:
    """Pad's or RandomCrop's padding (an int, or 1, 2 or 4 values: left,
    top, right, bottom), fill and padding_mode as the daemon's fields."""
    values = [padding] if isinstance(padding, int) else list(padding)
    if len(values) == 1:
        values *= 4
    elif len(values) == 2:
        values *= 2
    if len(values) != 4 or any(not isinstance(v, int) or v < 0
                               for v in values):
        raise refuse(repr(transform), f"padding {padding!r} is not 1, 2 or 4 "
                     "sizes >= 0")
    mode = transform.padding_mode
    if mode not in ("constant", "edge", "reflect", "symmetric"):
        raise refuse(repr(transform), f"padding_mode {mode!r} is unknown")
    fill = augment_ops.fill(transform, refuse) or [0]  # None is 0
    out: Dict[str, Any] = {prefix + side: v for side, v in
                           zip(("left", "top", "right", "bottom"), values)}
    out["fill"] = fill
    out["padding_mode"] = "PADDING_MODE_" + mode.upper()
    return out


def _random_resized_crop(t: Any, refuse: Refuse) -> Dict[str, Any]:
    height, width = _size(t, t.size, refuse)
    scale, ratio = t.scale, t.ratio
    return {"random_resized_crop": {
        "height": height, "width": width,
        "scale_min": float(scale[0]), "scale_max": float(scale[1]),
        "ratio_min": float(ratio[0]), "ratio_max": float(ratio[1]),
        "interpolation": _interpolation(t, refuse)}}


def _resize(t: Any, refuse: Refuse) -> Dict[str, Any]:
    if getattr(t, "max_size", None) is not None:
        raise refuse(repr(t), "max_size is not supported")
    size = t.size
    resize: Dict[str, Any] = {"interpolation": _interpolation(t, refuse)}
    if isinstance(size, int) or len(list(size)) == 1:
        resize["shorter_side"] = size if isinstance(size, int) else int(list(size)[0])
    else:
        resize["height"], resize["width"] = _size(t, size, refuse)
    return {"resize": resize}


def _center_crop(t: Any, refuse: Refuse) -> Dict[str, Any]:
    height, width = _size(t, t.size, refuse)
    return {"center_crop": {"height": height, "width": width}}


def _refuse_v2_padding(t: Any, refuse: Refuse) -> None:
    if type(t).__module__.startswith("torchvision.transforms.v2"):
        # v2 keeps its padding in another order and pads in one step, not
        # as v1 (whose bytes stokerd reproduces) does.
        raise refuse(repr(t), "transforms.v2's Pad and RandomCrop "
                     "are not supported: use torchvision.transforms' ones")


def _pad(t: Any, refuse: Refuse) -> Dict[str, Any]:
    _refuse_v2_padding(t, refuse)
    return {"pad": _padding(t, t.padding, "", refuse)}


def _random_crop(t: Any, refuse: Refuse) -> Dict[str, Any]:
    _refuse_v2_padding(t, refuse)
    height, width = _size(t, t.size, refuse)
    crop = {"height": height, "width": width,
            "pad_if_needed": bool(t.pad_if_needed)}
    if t.padding is not None:
        crop.update(_padding(t, t.padding, "pad_", refuse))
    else:  # the fill and mode still serve pad_if_needed
        crop.update(_padding(t, 0, "pad_", refuse))
    return {"random_crop": crop}


def _random_resize(t: Any, refuse: Refuse) -> Dict[str, Any]:
    most = t.max_size
    if type(t).__module__.startswith("torchvision"):
        # v2.RandomResize draws torch.randint(min_size, max_size): the
        # most is one less; stoker's and the reference's random.randint.
        if getattr(t, "antialias", True) is False:
            raise refuse(repr(t), "antialias=False is not supported")
        most -= 1
    resize = {"shorter_side": t.min_size,
              "interpolation": _interpolation(t, refuse)
              if hasattr(t, "interpolation") else "INTERPOLATION_BILINEAR"}
    if most > t.min_size:
        resize["shorter_side_max"] = most
    return {"resize": resize}


def _segmentation_crop(t: Any, refuse: Refuse) -> Dict[str, Any]:
    return {"random_crop": {"height": t.size, "width": t.size,
                            "pad_if_needed": True, "pad_end": True,
                            "fill": [0]}}


def _grayscale(t: Any, refuse: Refuse) -> Dict[str, Any]:
    if t.num_output_channels != 3:
        raise refuse(repr(t), "stoker's images have 3 channels: "
                     "use Grayscale(num_output_channels=3)")
    return {"random_grayscale": {"p": 1.0}}


def _gaussian_blur(t: Any, refuse: Refuse) -> Dict[str, Any]:
    kx, ky = (int(k) for k in t.kernel_size)
    lo, hi = (float(s) for s in t.sigma)
    return {"gaussian_blur": {"kernel_x": kx, "kernel_y": ky,
                              "sigma_min": lo, "sigma_max": hi}}


def _pil_gaussian_blur(t: Any, refuse: Refuse) -> Dict[str, Any]:
    return {"pillow_gaussian_blur": {"radius_min": float(t.radius_min),
                                     "radius_max": float(t.radius_max),
                                     "p": float(t.p)}}


def _solarize(t: Any, refuse: Refuse) -> Dict[str, Any]:
    threshold = float(t.threshold)
    if not 0.0 <= threshold <= 256.0:
        raise refuse(repr(t), f"threshold {threshold} is not in [0, 256] "
                     "(a PIL image's values)")
    return {"random_solarize": {"threshold": threshold, "p": float(t.p)}}


def _color_jitter(t: Any, refuse: Refuse) -> Dict[str, Any]:
    return {"color_jitter": {
        "brightness": _jitter_factor(t, "brightness", refuse),
        "contrast": _jitter_factor(t, "contrast", refuse),
        "saturation": _jitter_factor(t, "saturation", refuse),
        "hue": _hue_factor(t, refuse)}}


def inner(transform: Any, refuse: Refuse) -> Any:
    """The one transform a RandomApply holds, if it is one stokerd runs."""
    held = list(transform.transforms)
    if len(held) == 1:
        check_known(held[0], refuse)
    if len(held) != 1 or type(held[0]).__name__ not in APPLIED:
        named = ", ".join(type(t).__name__ for t in held)
        raise refuse(f"RandomApply([{named}], p={transform.p})",
                     "RandomApply holds one image op: a flip, ColorJitter, a "
                     "grayscale, RandomRotation, RandomAffine, a blur or a "
                     "solarize")
    return held[0]


def _random_apply(transform: Any, refuse: Refuse) -> Dict[str, Any]:
    applied = inner(transform, refuse)
    out = op(applied, type(applied).__name__, refuse)
    fields = next(iter(out.values()))
    fields["p"] = float(transform.p) * fields.get("p", 1.0)
    return out


_BUILDERS: Dict[str, Callable[[Any, Refuse], Dict[str, Any]]] = {
    "RandomResizedCrop": _random_resized_crop,
    "Resize": _resize,
    "CenterCrop": _center_crop,
    "Pad": _pad,
    "RandomCrop": _random_crop,
    "RandomResize": _random_resize,
    "SegmentationRandomCrop": _segmentation_crop,
    "RandomHorizontalFlip": lambda t, refuse: {
        "random_horizontal_flip": {"p": float(t.p)}},
    "RandomVerticalFlip": lambda t, refuse: {
        "random_vertical_flip": {"p": float(t.p)}},
    "Grayscale": _grayscale,
    "RandomGrayscale": lambda t, refuse: {
        "random_grayscale": {"p": float(t.p)}},
    "RandomRotation": augment_ops.warp_op,
    "RandomAffine": augment_ops.warp_op,
    "RandomApply": _random_apply,
    "GaussianBlur": _gaussian_blur,
    "PILGaussianBlur": _pil_gaussian_blur,
    "RandomSolarize": _solarize,
    "Solarization": _solarize,
    "ColorJitter": _color_jitter,
}


def container_kind(transform: Any) -> Optional[str]:
    """"RandomApply", "RandomChoice" or "RandomOrder" for torchvision's
    random containers and their subclasses (DINOv2's GaussianBlur is a
    RandomApply of torchvision's GaussianBlur); None for anything else."""
    for cls in type(transform).__mro__:
        if cls.__name__ in ("RandomApply", "RandomChoice", "RandomOrder") \
                and cls.__module__.startswith("torchvision"):
            return cls.__name__
    return None


def check_known(transform: Any, refuse: Refuse) -> None:
    """Refuses the self-supervised recipes' own Pillow classes, which share
    names with torchvision's and stoker's (DINO's utils.GaussianBlur and
    Solarization, MoCo v3's loader.GaussianBlur and Solarize), naming the
    stand-in that makes the same Pillow calls."""
    kind, module = type(transform).__name__, type(transform).__module__
    if container_kind(transform) is not None:
        return  # what it holds is checked
    if kind == "GaussianBlur" and not module.startswith("torchvision"):
        raise refuse(repr(transform), f"{module}.GaussianBlur is not "
                     "torchvision's: for Pillow's ImageFilter.GaussianBlur "
                     "(DINO's, MoCo v3's) use stoker.PILGaussianBlur(p, "
                     "radius_min, radius_max)")
    if kind in ("Solarization", "Solarize") and not module.startswith(
            "stoker"):
        raise refuse(repr(transform), f"{module}.{kind}: for "
                     "ImageOps.solarize (DINO's, MoCo v3's) use "
                     "stoker.Solarization(p)")
    if kind in _BUILDERS and not any(
            c.__name__ == kind and c.__module__.startswith(("torchvision", "stoker"))
            for c in type(transform).__mro__):
        # The segmentation reference's transforms take (image, target).
        raise refuse(repr(transform), f"{module}.{kind} is not torchvision's "
                     "or stoker's: use torchvision.transforms' own, or "
                     "stoker.RandomResize and stoker.SegmentationRandomCrop for "
                     "the segmentation reference's")


def op(transform: Any, kind: str, refuse: Refuse) -> Dict[str, Any]:
    """The op dict for `transform`, one of the image ops above; `kind` is
    its class name (or the name of the preset step it stands for)."""
    check_known(transform, refuse)
    builder = _BUILDERS.get(kind)
    if builder is None:
        raise AssertionError(kind)
    return builder(transform, refuse)
