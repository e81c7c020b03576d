"""torchvision transforms -> the daemon's pipeline.

translate() turns a torchvision Compose (or one transform) into the job's
pipeline (a list of stoker.v1.Op messages in their JSON form) and its output
(dtype and layout). What the daemon cannot run exactly is refused with
UnsupportedTransform naming it; nothing is dropped. This module orders the
steps and converts the tensor; each image op's fields come from image_ops
(crops, resizes, flips, jitter, blur, warps) or augment_ops (the automatic
augmentations, RandomErasing).
"""
from __future__ import annotations

from typing import Any, Dict, List, Optional, Tuple

from stoker import augment_ops, image_ops
from stoker.errors import UnsupportedTransform

SUPPORTED = (
    "RandomResizedCrop(size, scale, ratio, interpolation=BILINEAR|BICUBIC|NEAREST), "
    "Resize(size, interpolation=BILINEAR|BICUBIC|NEAREST, max_size=None), "
    "CenterCrop(size), RandomCrop(size, padding, pad_if_needed, fill, "
    "padding_mode), Pad(padding, fill, padding_mode), RandomHorizontalFlip(p), "
    "RandomVerticalFlip(p), "
    "ColorJitter(brightness, contrast, saturation, hue), RandomGrayscale(p), "
    "Grayscale(3), GaussianBlur(kernel_size, sigma), RandomSolarize, "
    "stoker.PILGaussianBlur, stoker.Solarization, stoker.RandomResize, "
    "stoker.SegmentationRandomCrop (after a flip too), RandomRotation, "
    "RandomAffine (each of these, or a flip, also alone in RandomApply([...], p), "
    "and RandomChoice([...], p) among ops of one kind), "
    "TrivialAugmentWide, RandAugment, AutoAugment, AugMix (interpolation "
    "NEAREST|BILINEAR, fill), "
    "ToTensor(), PILToTensor(), ConvertImageDtype(torch.float32|torch.float16), "
    "Normalize(mean, std), RandomErasing(p, scale, ratio, value), "
    "torchvision's ImageClassification preset (weights.transforms()) and "
    "objects holding a Compose in .transforms; in torchvision's order: a "
    "crop or resize first, then flip, jitter, one automatic augmentation, "
    "ToTensor/PILToTensor, Normalize, RandomErasing (a flip may also come "
    "after colour ops, Pillow's blur and solarize, which it commutes with); "
    "a list of such transforms: several views of each image "
    "(see docs/transforms.md)"
)

# Geometric and colour ops run on the decoded image; conversion after them.
_GEOMETRY = ("RandomResizedCrop", "Resize", "CenterCrop", "Pad", "RandomCrop",
             "RandomResize", "SegmentationRandomCrop")
_IMAGE_OPS = _GEOMETRY + (
              "RandomHorizontalFlip", "RandomVerticalFlip", "ColorJitter",
              "RandomApply", "RandomGrayscale", "Grayscale",
              "RandomRotation", "RandomAffine", "GaussianBlur",
              "PILGaussianBlur", "RandomSolarize", "Solarization") + \
    augment_ops.AUGMENTS
# transforms.v2 names with the same meaning here.
_V2_NAMES = {"ToImage": "PILToTensor", "ToImageTensor": "PILToTensor",
             "ToPureTensor": None}

# transforms.v2 ops that move boxes with the image: detection, which needs
# targets that follow the image's geometry and images of varying size.
_DETECTION = ("SanitizeBoundingBoxes", "ClampBoundingBoxes",
              "ConvertBoundingBoxFormat", "RandomIoUCrop", "RandomZoomOut",
              "RandomShortestSize", "ScaleJitter")
_NO_DETECTION = (
    "detection targets (boxes that follow the image's geometry, images of "
    "varying size) are not supported yet; stoker serves fixed-size images "
    "and passes other fields (fields=) through unchanged")


def _refuse(what: str, why: str) -> UnsupportedTransform:
    # Short: what the daemon runs is docs/transforms.md's (and SUPPORTED's);
    # `what` (a repr, a container's of many lines) on one line, cut.
    what = " ".join(what.split())
    return UnsupportedTransform(
        f"{what if len(what) <= 100 else what[:97] + '...'}: {why} (what "
        "stoker runs: docs/transforms.md, or stoker.transforms.SUPPORTED)")


class _Step:
    """One step the translation knows by name (a preset expands to several)."""

    def __init__(self, kind: str, **attributes: Any):
        self.kind = kind
        self.__dict__.update(attributes)

    def __repr__(self) -> str:
        return f"{self.kind}({self.__dict__})"


def _image_classification(t: Any) -> List[Any]:
    """torchvision's ImageClassification preset (weights.transforms()):
    resize, centre crop, to float, normalize."""
    if getattr(t, "antialias", True) is False:
        raise _refuse(repr(t), "antialias=False is not supported")
    crop, resize = list(t.crop_size), list(t.resize_size)
    return [_Step("Resize", size=resize[0] if len(resize) == 1 else resize,
                  interpolation=t.interpolation, max_size=None),
            _Step("CenterCrop", size=crop),
            _Step("PILToTensor"),
            _Step("ConvertImageDtype", dtype="float32"),
            _Step("Normalize", mean=t.mean, std=t.std)]


def _kind(transform: Any) -> str:
    """The name the translation knows a transform by: a preset step's, a
    random container's (also for a subclass of one), or its class name."""
    if isinstance(transform, _Step):
        return transform.kind
    return image_ops.container_kind(transform) or type(transform).__name__


def _flatten(transform: Any) -> List[Any]:
    """The steps of a transform: a Compose's, a preset's (an object holding
    a Compose or a list in .transforms, like the classification
    reference's ClassificationPresetTrain), or the transform itself."""
    kind = _kind(transform)
    if kind == "ImageClassification":
        return _image_classification(transform)
    inner = getattr(transform, "transforms", None)
    if kind in ("RandomApply", "RandomChoice", "RandomOrder"):
        return [transform]  # random containers: translated or refused whole
    if inner is not None and (kind == "Compose" or type(inner).__name__ ==
                              "Compose" or isinstance(inner, (list, tuple))):
        out = []
        for t in (inner if kind == "Compose" or isinstance(inner, (list, tuple))
                  else [inner]):
            out.extend(_flatten(t))
        return out
    if kind in _V2_NAMES:
        return [] if _V2_NAMES[kind] is None else [_Step(_V2_NAMES[kind])]
    if kind == "ToDtype":  # transforms.v2
        return [_Step("ConvertImageDtype", dtype=_v2_dtype(transform),
                      reciprocal=True)]
    return [transform]


def _v2_dtype(t: Any) -> Any:
    dtype = augment_ops.v2_value(t.dtype)
    if not getattr(t, "scale", False):
        raise _refuse(repr(t), "ToDtype without scale=True keeps 0..255; "
                      "stoker's float output is scaled to [0, 1]")
    return dtype


def _op(transform: Any) -> Dict[str, Any]:
    return image_ops.op(transform, _kind(transform), _refuse)


def _inner(transform: Any) -> Any:
    """The one transform a RandomApply holds, if it is one stokerd runs."""
    return image_ops.inner(transform, _refuse)


def _named(transform: Any) -> str:
    """A container by the kinds it holds; another transform by its kind."""
    kind = _kind(transform)
    random = kind in ("RandomApply", "RandomChoice", "RandomOrder")
    if not (random or kind in ("Compose", "ImageClassification")
            or hasattr(transform, "transforms")):
        return kind
    held = list(transform.transforms) if random else _flatten(transform)
    return f"{kind}([{', '.join(_kind(t) for t in held)}])"


def _held_kind(option: Any) -> str:
    """A RandomChoice option's kind: a RandomApply's, what it holds."""
    kind = _kind(option)
    return type(_inner(option)).__name__ if kind == "RandomApply" else kind


# The order stokerd applies the image ops in (the geometry, 0 and 1, is
# checked by the daemon, which names the field).
# The two flips commute, so either may come first.
_ORDER = {"RandomHorizontalFlip": 2, "RandomVerticalFlip": 2,
          "RandomRotation": 3, "RandomAffine": 3,
          "ColorJitter": 4, "RandomGrayscale": 5,
          "Grayscale": 5, "GaussianBlur": 6, "PILGaussianBlur": 6,
          "RandomSolarize": 7, "Solarization": 7,
          **{name: 8 for name in augment_ops.AUGMENTS}}
_FLIPS = ("RandomHorizontalFlip", "RandomVerticalFlip")
# What a flip may follow, as the result is the same either way: pixelwise
# ops, ColorJitter's contrast (a mean over the image) and Pillow's box blur
# (symmetric, in integers). MoCo v3 flips last. torchvision's GaussianBlur
# sums its taps in floating point, in an order a flip reverses.
_FLIP_COMMUTES = {"ColorJitter", "RandomGrayscale", "Grayscale",
                  "PILGaussianBlur", "RandomSolarize", "Solarization"}
# The order the daemon takes its ops in (proto/stoker/v1/loader.proto).
_DAEMON_ORDER = ["random_resized_crop", "resize", "pad", "center_crop",
                 "random_crop",
                 "random_horizontal_flip", "random_vertical_flip",
                 "random_rotation", "random_affine",
                 "color_jitter", "random_grayscale", "gaussian_blur",
                 "pillow_gaussian_blur", "random_solarize",
                 "trivial_augment_wide", "aug_mix",
                 "rand_augment", "auto_augment", "normalize", "random_erasing"]


class _State:
    """The translation so far: ops, output dtype and layout, image size."""

    def __init__(self):
        self.pipeline: List[Dict[str, Any]] = []
        self.erasing: List[Dict[str, Any]] = []  # after normalize, always
        self.dtype, self.layout = "DTYPE_UINT8", "LAYOUT_NHWC"
        self.reciprocal = False  # transforms.v2's ToDtype: x * (1/255)
        self.converted = False  # ToTensor or PILToTensor seen
        self.size: Optional[Tuple[int, int]] = None  # (height, width)
        self.rank = 0  # of the last image op, in _ORDER
        self.seen = set()  # image op kinds taken

    def add(self, t: Any, rest: List[Any]) -> None:
        if not isinstance(t, _Step):
            image_ops.check_known(t, _refuse)
        kind = _kind(t)
        if kind == "RandomApply":  # ordered as what it holds
            kind = type(_inner(t)).__name__
        if kind == "RandomChoice":
            kind = self._choice_kind(t)
        if kind in _IMAGE_OPS:
            if self.converted:
                raise _refuse(repr(t), "it comes after ToTensor/PILToTensor; "
                              "the daemon crops, flips and augments the "
                              "decoded image, then converts: move it before")
            rank = _ORDER.get(kind, 0)
            after_flip = kind == "SegmentationRandomCrop" and \
                self.seen - set(_GEOMETRY) == {"RandomHorizontalFlip"}
            if rank <= 1 and not after_flip and any(
                    _ORDER.get(k, 0) > 1 for k in self.seen):
                raise _refuse(repr(t), "impossible order: the crop or resize "
                              "comes first, before the flips, colour and "
                              "other image ops")
            if kind in _FLIPS and kind not in self.seen and \
                    self.seen - set(_GEOMETRY + _FLIPS) <= _FLIP_COMMUTES:
                rank = max(rank, self.rank)  # placed before what it follows
            elif rank > 1 and (rank < self.rank or kind in self.seen or (
                    rank > 2 and rank == self.rank)):
                raise _refuse(repr(t), "impossible order: stokerd runs a crop "
                              "or resize, then RandomHorizontalFlip, "
                              "ColorJitter, one automatic augmentation, in "
                              "that order, each once")
            self.rank = rank
            self.seen.add(kind)
            if _kind(t) == "RandomChoice":  # a flip commutes with all or none
                self.seen.update(_held_kind(o) for o in t.transforms)
            self.pipeline.append(self._image_op(t))
            if after_flip:  # the reference's order: resize, flip, crop
                self.pipeline[-1]["random_crop"]["after_flip"] = True
            self._track_size(self.pipeline[-1])
        elif kind in ("ToTensor", "PILToTensor"):
            if self.converted:
                raise _refuse(repr(t), "the image is already a tensor")
            self.dtype = "DTYPE_FLOAT32" if kind == "ToTensor" else "DTYPE_UINT8"
            self.layout, self.converted = "LAYOUT_NCHW", True
        elif kind == "ConvertImageDtype":
            self._convert(t)
        elif kind == "Normalize":
            self.pipeline.append(_normalize(t, self.dtype))
        elif kind == "RandomErasing":
            self._erase(t, rest)
        elif kind in _DETECTION:
            raise _refuse(repr(t), f"{kind}: {_NO_DETECTION}")
        else:
            raise _refuse(repr(t), f"{kind} is not supported")

    def _image_op(self, t: Any) -> Dict[str, Any]:
        kind = _kind(t)
        if kind == "RandomChoice":
            options = [self._image_op(o) for o in t.transforms]
            choice: Dict[str, Any] = {"options": options}
            if getattr(t, "p", None) is not None:
                choice["p"] = [float(w) for w in t.p]
            return {"random_choice": choice}
        if kind in augment_ops.AUGMENTS:
            return augment_ops.augment_op(t, self.size, _refuse)
        return _op(t)

    @staticmethod
    def _choice_kind(t: Any) -> str:
        """The kind a RandomChoice is ordered as: its options', which must
        be image ops of one place in the order (the daemon checks which)."""
        kinds = [_held_kind(o) for o in t.transforms]
        ranks = {_ORDER.get(k) for k in kinds}
        # The two flips are two places in the daemon's order.
        mixed_flips = {"RandomHorizontalFlip",
                       "RandomVerticalFlip"} <= set(kinds)
        if len(kinds) < 2 or None in ranks or len(ranks) != 1 or mixed_flips:
            raise _refuse(_named(t), "RandomChoice takes 2 to 16 image ops of "
                          "one kind (a flip; rotations, affines; ColorJitter; "
                          "grayscales; blurs; solarizes; augmentations)")
        return kinds[0]

    def _track_size(self, op: Dict[str, Any]) -> None:
        name, fields = next(iter(op.items()))
        if name in ("random_resized_crop", "center_crop", "random_crop") or (
                name == "resize" and "height" in fields):
            self.size = (fields["height"], fields["width"])
        elif name in ("resize", "pad"):
            self.size = None  # the shorter side, a pad: a crop fixes it

    def _convert(self, t: Any) -> None:
        name = str(t.dtype).replace("torch.", "")
        if self.dtype != "DTYPE_UINT8" or not self.converted:
            raise _refuse(repr(t), "it converts only PILToTensor's uint8")
        if name not in ("float32", "float16", "float"):
            raise _refuse(repr(t), f"dtype {name} is not supported")
        self.dtype = "DTYPE_FLOAT16" if name == "float16" else "DTYPE_FLOAT32"
        self.reciprocal = getattr(t, "reciprocal", False)

    def _erase(self, t: Any, rest: List[Any]) -> None:
        if not self.converted or self.dtype == "DTYPE_UINT8":
            raise _refuse(repr(t), "RandomErasing needs a float tensor "
                          "(ToTensor, or PILToTensor and ConvertImageDtype, "
                          "before it)")
        if self.erasing:
            raise _refuse(repr(t), "one RandomErasing per pipeline")
        later = [s for s in rest if _kind(s) == "Normalize"]
        normalize = _normalize(later[0], self.dtype)["normalize"] \
            if later else None
        self.erasing.append(augment_ops.erasing_op(t, normalize, _refuse))


def _normalize(t: Any, dtype: str) -> Dict[str, Any]:
    if dtype == "DTYPE_UINT8":
        raise _refuse(repr(t), "Normalize needs a float tensor "
                      "(ToTensor before it)")
    mean, std = list(map(float, t.mean)), list(map(float, t.std))
    if len(mean) != 3 or len(std) != 3:
        raise _refuse(repr(t), "mean and std need 3 values (RGB)")
    return {"normalize": {"mean": mean, "std": std}}


def uses_v2(transform: Any) -> bool:
    """Whether a step of `transform` is transforms.v2's: a mask then is a
    tv_tensors.Mask tensor, resized with torch's nearest."""
    steps = [] if isinstance(transform, (list, tuple)) else _flatten(transform)
    return any(type(s).__module__.startswith("torchvision.transforms.v2")
               for s in steps)


def is_views(transform: Any) -> bool:
    """Whether `transform` is several views' (a list or tuple of them), not
    one transform or one native pipeline (a list of stoker.v1.Op dicts)."""
    return isinstance(transform, (list, tuple)) and bool(transform) and \
        not all(isinstance(op, dict) for op in transform)


def views(transform: Any) -> Optional[List[Dict[str, Any]]]:
    """The job's views (JobSpec.views) for a list or tuple of transforms,
    one view each ({"pipeline": ..., "output": ...}); or of native
    pipelines (lists of stoker.v1.Op dicts). None for one transform."""
    if not is_views(transform):
        return None
    out = []
    for i, one in enumerate(transform):
        if isinstance(one, (list, tuple)) and not all(
                isinstance(op, dict) for op in one):
            raise _refuse(f"transform[{i}]", "a view is one transform (a "
                          "Compose), not a list of them")
        pipeline, output = translate(one)
        out.append({"pipeline": pipeline, "output": output})
    return out


def translate(transform: Any) -> Tuple[List[Dict[str, Any]], Dict[str, str]]:
    """(pipeline, output) for a torchvision transform, a Compose of them, or
    a list of stoker.v1.Op dicts (the native spec, passed through).

    output is {"dtype": "DTYPE_UINT8"|"DTYPE_FLOAT32"|"DTYPE_FLOAT16",
    "layout": "LAYOUT_NHWC"|"LAYOUT_NCHW"}: ToTensor gives float32 NCHW in
    [0, 1], PILToTensor uint8 NCHW, neither uint8 NHWC; transforms.v2's
    ToDtype(scale=True) adds "float_scale": "FLOAT_SCALE_RECIPROCAL".
    """
    if transform is None:
        raise _refuse("transform=None", "a transform must fix the image size "
                      "(RandomResizedCrop, Resize with CenterCrop, or RandomCrop; "
                      "images of varying size are not supported)")
    if isinstance(transform, (list, tuple)) and all(
            isinstance(op, dict) for op in transform):
        return [dict(op) for op in transform], {
            "dtype": "DTYPE_UINT8", "layout": "LAYOUT_NHWC"}
    state = _State()
    steps = _flatten(transform)
    for i, t in enumerate(steps):
        state.add(t, steps[i + 1:])

    # Geometry ops keep the order they were given (the daemon checks it);
    # the others go where the daemon applies them.
    def place(op: Dict[str, Any]) -> int:
        name = next(iter(op))
        if name == "random_choice":  # where its options go
            name = next(iter(op[name]["options"][0]))
        rank = _DAEMON_ORDER.index(name)
        return -1 if rank <= _DAEMON_ORDER.index("random_crop") else rank

    pipeline = sorted(state.pipeline + state.erasing, key=place)
    if not any(next(iter(op)) in ("random_resized_crop", "resize",
                                  "random_crop") for op in pipeline):
        raise _refuse(_named(transform), "a transform must fix the image size "
                      "(RandomResizedCrop, Resize with CenterCrop, or RandomCrop)")
    output = {"dtype": state.dtype, "layout": state.layout}
    if state.reciprocal:  # v2 scales by multiplying (see FloatScale)
        output["float_scale"] = "FLOAT_SCALE_RECIPROCAL"
    return pipeline, output
