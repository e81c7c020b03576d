"""torchvision transforms -> the daemon's pipeline.

translate() turns a torchvision Compose (or one transform) into the job's
pipeline (a list of stoker.v1.Op messages in their JSON form) and its output
(dtype and layout). What the daemon cannot run exactly is refused with
UnsupportedTransform naming it; nothing is dropped.
"""
from __future__ import annotations

import math
from typing import Any, Dict, List, Tuple

from stoker.errors import UnsupportedTransform

SUPPORTED = (
    "RandomResizedCrop(size, scale, ratio, interpolation=BILINEAR|BICUBIC|NEAREST), "
    "Resize(size, interpolation=BILINEAR|BICUBIC|NEAREST, max_size=None), "
    "CenterCrop(size), RandomHorizontalFlip(p), "
    "ColorJitter(brightness, contrast, saturation, hue), "
    "ToTensor(), PILToTensor(), ConvertImageDtype(torch.float32|torch.float16), "
    "Normalize(mean, std), in torchvision's order: a crop or resize first, "
    "ToTensor/PILToTensor after the ops on images, Normalize last"
)

# Geometric and colour ops run on the decoded image; conversion after them.
_IMAGE_OPS = ("RandomResizedCrop", "Resize", "CenterCrop",
              "RandomHorizontalFlip", "ColorJitter")


def _refuse(what: str, why: str) -> UnsupportedTransform:
    return UnsupportedTransform(
        f"{what}: {why}. stoker's daemon runs: {SUPPORTED}")


def _flatten(transform: Any) -> List[Any]:
    inner = getattr(transform, "transforms", None)
    if type(transform).__name__ == "Compose" and inner is not None:
        out = []
        for t in inner:
            out.extend(_flatten(t))
        return out
    return [transform]


def _size(transform: Any, value: Any) -> Tuple[int, int]:
    if isinstance(value, int):
        return value, value
    values = list(value)
    if len(values) == 1:
        return int(values[0]), int(values[0])
    if len(values) == 2:
        return int(values[0]), int(values[1])
    raise _refuse(repr(transform), f"size {value!r} is not (height, width)")


def _interpolation(transform: Any) -> str:
    mode = getattr(transform, "interpolation", None)
    name = getattr(mode, "name", None)  # InterpolationMode
    if name is None:  # a PIL constant in old torchvision
        name = {0: "NEAREST", 2: "BILINEAR", 3: "BICUBIC"}.get(mode, str(mode))
    if name in ("BILINEAR", "NEAREST", "BICUBIC"):
        return "INTERPOLATION_" + name
    raise _refuse(repr(transform), f"interpolation {name} is not supported")


def _jitter_factor(transform: Any, name: str) -> float:
    value = getattr(transform, name, None)
    if value is None:
        return 0.0
    if isinstance(value, (int, float)):
        return float(value)
    lo, hi = float(value[0]), float(value[1])
    factor = hi - 1.0
    if factor < 0 or not math.isclose(lo, max(0.0, 1.0 - factor), abs_tol=1e-6):
        raise _refuse(repr(transform),
                      f"{name} range ({lo}, {hi}) is not centred on 1")
    return factor


def _hue_factor(transform: Any) -> float:
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
        raise _refuse(repr(transform),
                      f"hue range ({lo}, {hi}) is not [-h, h] with h <= 0.5")
    return hi


def _op(transform: Any) -> Dict[str, Any]:
    kind = type(transform).__name__
    if kind == "RandomResizedCrop":
        height, width = _size(transform, transform.size)
        scale, ratio = transform.scale, transform.ratio
        return {"random_resized_crop": {
            "height": height, "width": width,
            "scale_min": float(scale[0]), "scale_max": float(scale[1]),
            "ratio_min": float(ratio[0]), "ratio_max": float(ratio[1]),
            "interpolation": _interpolation(transform)}}
    if kind == "Resize":
        if getattr(transform, "max_size", None) is not None:
            raise _refuse(repr(transform), "max_size is not supported")
        size = transform.size
        resize: Dict[str, Any] = {"interpolation": _interpolation(transform)}
        if isinstance(size, int) or len(list(size)) == 1:
            resize["shorter_side"] = size if isinstance(size, int) else int(list(size)[0])
        else:
            resize["height"], resize["width"] = _size(transform, size)
        return {"resize": resize}
    if kind == "CenterCrop":
        height, width = _size(transform, transform.size)
        return {"center_crop": {"height": height, "width": width}}
    if kind == "RandomHorizontalFlip":
        return {"random_horizontal_flip": {"p": float(transform.p)}}
    if kind == "ColorJitter":
        return {"color_jitter": {
            "brightness": _jitter_factor(transform, "brightness"),
            "contrast": _jitter_factor(transform, "contrast"),
            "saturation": _jitter_factor(transform, "saturation"),
            "hue": _hue_factor(transform)}}
    raise AssertionError(kind)


def _dtype_name(dtype: Any) -> str:
    return str(dtype).replace("torch.", "")


def translate(transform: Any) -> Tuple[List[Dict[str, Any]], Dict[str, str]]:
    """(pipeline, output) for a torchvision transform, a Compose of them, or
    a list of stoker.v1.Op dicts (the native spec, passed through).

    output is {"dtype": "DTYPE_UINT8"|"DTYPE_FLOAT32"|"DTYPE_FLOAT16",
    "layout": "LAYOUT_NHWC"|"LAYOUT_NCHW"}: ToTensor gives float32 NCHW in
    [0, 1], PILToTensor uint8 NCHW, neither uint8 NHWC.
    """
    if transform is None:
        raise _refuse("transform=None", "a transform must fix the image size "
                      "(RandomResizedCrop, or Resize with CenterCrop)")
    if isinstance(transform, (list, tuple)) and all(
            isinstance(op, dict) for op in transform):
        return [dict(op) for op in transform], {
            "dtype": "DTYPE_UINT8", "layout": "LAYOUT_NHWC"}
    pipeline: List[Dict[str, Any]] = []
    dtype, layout = "DTYPE_UINT8", "LAYOUT_NHWC"
    converted = False  # ToTensor or PILToTensor seen
    for t in _flatten(transform):
        kind = type(t).__name__
        if kind in _IMAGE_OPS:
            if converted:
                raise _refuse(repr(t), "it comes after ToTensor/PILToTensor; "
                              "the daemon crops, flips and jitters the decoded "
                              "image, then converts: move it before")
            pipeline.append(_op(t))
        elif kind == "ToTensor":
            if converted:
                raise _refuse(repr(t), "the image is already a tensor")
            dtype, layout, converted = "DTYPE_FLOAT32", "LAYOUT_NCHW", True
        elif kind == "PILToTensor":
            if converted:
                raise _refuse(repr(t), "the image is already a tensor")
            dtype, layout, converted = "DTYPE_UINT8", "LAYOUT_NCHW", True
        elif kind == "ConvertImageDtype":
            name = _dtype_name(t.dtype)
            if dtype != "DTYPE_UINT8" or not converted:
                raise _refuse(repr(t), "it converts only PILToTensor's uint8")
            if name not in ("float32", "float16"):
                raise _refuse(repr(t), f"dtype {name} is not supported")
            dtype = "DTYPE_FLOAT32" if name == "float32" else "DTYPE_FLOAT16"
        elif kind == "Normalize":
            if dtype == "DTYPE_UINT8":
                raise _refuse(repr(t), "Normalize needs a float tensor "
                              "(ToTensor before it)")
            if getattr(t, "inplace", False):
                pass  # the daemon writes a new tensor either way
            mean, std = list(map(float, t.mean)), list(map(float, t.std))
            if len(mean) != 3 or len(std) != 3:
                raise _refuse(repr(t), "mean and std need 3 values (RGB)")
            pipeline.append({"normalize": {"mean": mean, "std": std}})
        else:
            raise _refuse(repr(t), f"{kind} is not supported")
    if not any(next(iter(op)) in ("random_resized_crop", "resize")
               for op in pipeline):
        raise _refuse(repr(transform), "a transform must fix the image size "
                      "(RandomResizedCrop, or Resize with CenterCrop)")
    return pipeline, {"dtype": dtype, "layout": layout}
