"""torchvision's automatic augmentations and RandomErasing -> the daemon's
ops (stoker.v1.TrivialAugmentWide, RandAugment, AutoAugment, AugMix,
RandomErasing).

The magnitude tables are torchvision's own (its _augmentation_space, run
here), sent with the op: torch's vectorised CPU kernels may round a
linspace bin differently in the last bit from the formula the daemon would
use, and the bytes must be torchvision's.
"""
from __future__ import annotations

from typing import Any, Callable, Dict, List, Optional, Tuple

AUGMENTS = ("TrivialAugmentWide", "RandAugment", "AutoAugment", "AugMix")
_POLICIES = {"imagenet": "AUTO_AUGMENT_POLICY_IMAGENET",
             "cifar10": "AUTO_AUGMENT_POLICY_CIFAR10",
             "svhn": "AUTO_AUGMENT_POLICY_SVHN"}

Refuse = Callable[[str, str], Exception]


def v2_value(value: Any) -> Any:
    """transforms.v2 keeps some arguments per input type ({type: value});
    the value for images, else the value itself."""
    if not isinstance(value, dict):
        return value
    values = [v for v in value.values() if v is not None]
    return values[0] if values else None


def _interpolation(t: Any, refuse: Refuse) -> str:
    """NEAREST, BILINEAR or BICUBIC (Pillow's affine filters); AugMix warps
    a tensor, where bicubic is torch's own kernel: not BICUBIC there."""
    mode = getattr(t, "interpolation", None)
    name = getattr(mode, "name", None) or {
        0: "NEAREST", 2: "BILINEAR", 3: "BICUBIC"}.get(mode, str(mode))
    allowed = ("NEAREST", "BILINEAR") + (
        () if type(t).__name__ == "AugMix" else ("BICUBIC",))
    if name not in allowed:
        raise refuse(repr(t), f"interpolation {name} is not supported "
                     f"({' or '.join(allowed)})")
    return "INTERPOLATION_" + name


def fill(t: Any, refuse: Refuse) -> List[int]:
    """torchvision's fill as _parse_fill makes it for a PIL image: ints."""
    value = v2_value(getattr(t, "fill", None))
    if value is None:
        return []
    values = [value] if isinstance(value, (int, float)) else list(value)
    if len(values) not in (1, 3):
        raise refuse(repr(t), "fill needs one value or three (R, G, B)")
    out = [int(v) for v in values]
    if any(not 0 <= v <= 255 for v in out):
        raise refuse(repr(t), f"fill {value!r} is outside [0, 255]")
    return out


def _tables(space: Dict[str, Tuple[Any, bool]]) -> List[Dict[str, Any]]:
    return [{"op": name, "values": [float(v) for v in values.tolist()]}
            for name, (values, _) in space.items() if values.ndim > 0]


def _v1(kind: str) -> Any:
    """torchvision's v1 class of that name: its _augmentation_space computes
    the tables (v2 classes hold the same values in another form)."""
    from torchvision import transforms as T
    return getattr(T, kind)


def augment_op(t: Any, size: Optional[Tuple[int, int]],
               refuse: Refuse) -> Dict[str, Any]:
    """The op dict for a TrivialAugmentWide, RandAugment or AutoAugment;
    `size` is the (height, width) of the image it sees."""
    kind = type(t).__name__
    style = {"interpolation": _interpolation(t, refuse),
             "fill": fill(t, refuse)}
    if kind == "TrivialAugmentWide":
        bins = int(t.num_magnitude_bins)
        space = _v1(kind)()._augmentation_space(bins)
        return {"trivial_augment_wide": {"num_magnitude_bins": bins,
                                         "magnitudes": _tables(space),
                                         **style}}
    if size is None:
        raise refuse(repr(t), "the image size must be fixed before it")
    if kind == "AugMix":
        return _aug_mix(t, size, style)
    if kind == "RandAugment":
        bins = int(t.num_magnitude_bins)
        if not 0 <= int(t.magnitude) < bins:
            raise refuse(repr(t), "magnitude must be in [0, num_magnitude_bins)")
        space = _v1(kind)()._augmentation_space(bins, size)
        return {"rand_augment": {"num_ops": int(t.num_ops),
                                 "magnitude": int(t.magnitude),
                                 "num_magnitude_bins": bins,
                                 "magnitudes": _tables(space), **style}}
    policy = getattr(t.policy, "value", t.policy)
    if policy not in _POLICIES:
        raise refuse(repr(t), f"policy {policy!r} is not known")
    space = _v1(kind)()._augmentation_space(10, size)
    return {"auto_augment": {"policy": _POLICIES[policy],
                             "magnitudes": _tables(space), **style}}


def _aug_mix(t: Any, size: Tuple[int, int],
             style: Dict[str, Any]) -> Dict[str, Any]:
    """AugMix: its space's tables (10 bins, translations a third of the
    image) for an image of `size` (height, width)."""
    all_ops = bool(t.all_ops)
    space = _v1("AugMix")(all_ops=all_ops)._augmentation_space(10, size)
    return {"aug_mix": {"severity": int(t.severity),
                        "mixture_width": int(t.mixture_width),
                        "chain_depth": max(int(t.chain_depth), -1),
                        "alpha": float(t.alpha), "all_ops": all_ops,
                        "magnitudes": _tables(space), **style}}


def warp_op(t: Any, refuse: Refuse) -> Dict[str, Any]:
    """The op dict for a RandomRotation or RandomAffine (same size, about
    the centre)."""
    kind = type(t).__name__
    if getattr(t, "expand", False):
        raise refuse(repr(t), "expand=True changes the image size")
    if getattr(t, "center", None) is not None:
        raise refuse(repr(t), "only the image's centre is supported")
    degrees = [float(d) for d in t.degrees]
    op: Dict[str, Any] = {"degrees_min": degrees[0],
                          "degrees_max": degrees[1],
                          "interpolation": _interpolation(t, refuse),
                          "fill": fill(t, refuse)}
    if kind == "RandomRotation":
        return {"random_rotation": op}
    if t.translate is not None:
        op["translate_x"], op["translate_y"] = map(float, t.translate)
    if t.scale is not None:
        op["scale_min"], op["scale_max"] = map(float, t.scale)
    shear = list(t.shear) if t.shear is not None else []
    if shear:
        op["shear_x_min"], op["shear_x_max"] = map(float, shear[:2])
    if len(shear) == 4:
        op["shear_y_min"], op["shear_y_max"] = map(float, shear[2:])
    return {"random_affine": op}


def erasing_op(t: Any, normalize: Optional[Dict[str, Any]],
               refuse: Refuse) -> Dict[str, Any]:
    """The op dict for a RandomErasing. `normalize`: the Normalize that comes
    after it, if any; a constant value is then normalised as torchvision's
    Normalize would normalise the erased pixels."""
    import torch
    value = v2_value(t.value)
    value = 0 if value is None else value
    op: Dict[str, Any] = {"p": float(t.p), "scale_min": float(t.scale[0]),
                          "scale_max": float(t.scale[1]),
                          "ratio_min": float(t.ratio[0]),
                          "ratio_max": float(t.ratio[1])}
    if isinstance(value, str):
        if value != "random":
            raise refuse(repr(t), f"value {value!r}: a number, a tuple or "
                         "'random'")
        if normalize is not None:
            raise refuse(repr(t), "value='random' before Normalize is not "
                         "supported: put RandomErasing after Normalize")
        op["random_value"] = True
        return {"random_erasing": op}
    values = [float(value)] if isinstance(value, (int, float)) else \
        [float(v) for v in value]
    if len(values) not in (1, 3):
        raise refuse(repr(t), "value needs one number or three (R, G, B)")
    if normalize is not None:
        tensor = torch.tensor(values * (3 if len(values) == 1 else 1),
                              dtype=torch.float32)
        mean = torch.tensor(normalize["mean"], dtype=torch.float32)
        std = torch.tensor(normalize["std"], dtype=torch.float32)
        values = tensor.sub_(mean).div_(std).tolist()
    op["value"] = values
    return {"random_erasing": op}
