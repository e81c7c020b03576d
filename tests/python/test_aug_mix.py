"""AugMix in the daemon against torchvision's AugMix, which turns the PIL
image into a uint8 tensor and works on tensors: each of its ops
(daemon/image/tensor_ops.cc) against torchvision's _apply_op on that
tensor, on 200 crops of the photographs and 30 oblong ones; loaders whose
every image is torchvision's mix of torchvision's chains for the draws
stoker reports; the draws' distributions.

Every byte is torchvision's: the colour and tonal ops compute in float32
element by element, and the warps follow torch's grid (three terms summed
in order) and its vectorised grid_sample, whose build fuses the
unnormalisation and the taps' sum into fused multiply-adds.
"""
import os
import subprocess
import tempfile

import numpy as np
import pytest
from conftest import _tool, photo_folder
from test_augment import crops
from test_augment import draws as augment_draws

T = pytest.importorskip("torchvision.transforms")
F = pytest.importorskip("torchvision.transforms.functional")
autoaugment = pytest.importorskip("torchvision.transforms.autoaugment")
torch = pytest.importorskip("torch")
Mode = T.InterpolationMode
MODES = {"nearest": Mode.NEAREST, "bilinear": Mode.BILINEAR}


@pytest.fixture(scope="module")
def square():
    return crops(200, (224, 224), 5)


@pytest.fixture(scope="module")
def oblong():
    return crops(30, (176, 132), 6)


def stoker_tensor_op(images, op, magnitude, interpolation, fill):
    w, h = images[0].size
    with tempfile.TemporaryDirectory() as tmp:
        src, dst = os.path.join(tmp, "in.rgb"), os.path.join(tmp, "out.rgb")
        with open(src, "wb") as f:
            for image in images:
                f.write(image.tobytes())
        rgb = list(fill) if fill is not None else [-1, 0, 0]
        subprocess.run([_tool("AUGMENT_TOOL"), "tensor_op", src, dst, str(w),
                        str(h), op, repr(float(magnitude)), interpolation,
                        *map(str, rgb)], check=True)
        out = np.fromfile(dst, np.uint8)
    return out.reshape(len(images), h, w, 3)


def torchvision_tensor_op(image, op, magnitude, interpolation, fill):
    tensor = F.pil_to_tensor(image)
    out = autoaugment._apply_op(tensor, op, magnitude, MODES[interpolation],
                                None if fill is None else list(fill))
    return out.permute(1, 2, 0).numpy()


def compare(images, op, magnitude, interpolation="bilinear", fill=None):
    """(values equal, values, largest difference) over the images."""
    got = stoker_tensor_op(images, op, magnitude, interpolation, fill)
    equal = total = worst = 0
    for k, image in enumerate(images):
        want = torchvision_tensor_op(image, op, magnitude, interpolation, fill)
        diff = np.abs(got[k].astype(int) - want.astype(int))
        equal += int((diff == 0).sum())
        total += diff.size
        worst = max(worst, int(diff.max()))
    return equal, total, worst


def space(all_ops=True, size=(224, 224)):
    return T.AugMix(all_ops=all_ops)._augmentation_space(10, size)


EXACT = ["Posterize", "Solarize", "AutoContrast", "Equalize", "Brightness",
         "Color", "Contrast", "Sharpness"]
WARPS = ["ShearX", "ShearY", "TranslateX", "TranslateY", "Rotate"]


def magnitudes(op, size):
    values, signed = space(size=size)[op]
    if values.ndim == 0:
        return [0.0]
    picks = [float(values[i]) for i in (1, 4, 9)]
    return picks + ([-m for m in picks] if signed else [])


@pytest.mark.parametrize("op", EXACT)
def test_colour_and_tonal_ops_are_torchvisions(square, oblong, op):
    for images in (square, oblong):
        size = images[0].size[::-1]
        for magnitude in magnitudes(op, size):
            equal, total, worst = compare(images, op, magnitude)
            assert equal == total, (op, magnitude, total - equal, worst)


@pytest.mark.parametrize("op", WARPS)
@pytest.mark.parametrize("interpolation", ["bilinear", "nearest"])
def test_warps_are_torchvisions(square, oblong, op, interpolation):
    for images in (square, oblong):
        size = images[0].size[::-1]
        for magnitude in magnitudes(op, size):
            for fill in (None, (30, 60, 90)):
                equal, total, worst = compare(images, op, magnitude,
                                              interpolation, fill)
                assert equal == total, (op, magnitude, fill,
                                        total - equal, worst)


def draws(pipeline, output, seed, count):
    """The AugMix weights and chains of samples 0..count-1."""
    return [d["augmix"] for d in augment_draws(pipeline, output, seed, count)]


def torchvision_mix(image, drawn, interpolation, fill):
    """AugMix.forward's mixing for the given weights and chains."""
    batch = F.pil_to_tensor(image)
    mix = torch.tensor(drawn["original"], dtype=torch.float32) * batch
    for weight, chain in zip(drawn["weights"], drawn["chains"]):
        aug = batch
        for op, magnitude in chain:
            aug = autoaugment._apply_op(aug, op, magnitude,
                                        MODES[interpolation], fill)
        mix.add_(torch.tensor(weight, dtype=torch.float32) * aug)
    return mix.to(torch.uint8)


EVAL = [T.Resize(256), T.CenterCrop(224)]


@pytest.mark.parametrize("augmix, interpolation, fill", [
    (T.AugMix(), "bilinear", None),
    (T.AugMix(severity=7, mixture_width=4, chain_depth=2, alpha=0.5,
              all_ops=False, interpolation=Mode.NEAREST), "nearest", None),
    (T.AugMix(fill=[124, 116, 104]), "bilinear", [124, 116, 104]),
])
def test_loader_images_are_torchvisions_mix(daemon, scratch, augmix,
                                            interpolation, fill):
    import stoker
    from torchvision import datasets
    root = photo_folder(os.path.join(scratch, "photos"))
    transform = T.Compose(EVAL + [augmix, T.PILToTensor()])
    pipeline, output = stoker.translate_transform(transform)
    loader = stoker.DataLoader(root, transform=transform, batch_size=8,
                               shuffle=False, seed=21, socket=daemon.socket)
    try:
        got = torch.cat([images.clone() for images, _ in loader])
    finally:
        loader.close()
    drawn = draws(pipeline, output, 21, len(got))
    ref = datasets.ImageFolder(root, T.Compose(EVAL))
    for i in range(len(ref)):
        want = torchvision_mix(ref[i][0], drawn[i], interpolation, fill)
        diff = (got[i].to(torch.int16) - want.to(torch.int16)).abs()
        assert int(diff.max()) == 0, (i, int((diff > 0).sum()), drawn[i])


def chi_square(counts):
    counts = np.asarray(counts, dtype=float)
    expected = counts.sum() / len(counts)
    return float(((counts - expected) ** 2 / expected).sum())


def test_draws_follow_torchvisions_distributions():
    """The weights: the original's is Beta(alpha, alpha) (two-sample KS
    against torch._sample_dirichlet); chain depths 1 to 3 and ops of the
    space about equally often (chi-square). Bounds at p ~ 0.001."""
    import stoker
    transform = T.Compose(EVAL + [T.AugMix(alpha=0.7)])
    pipeline, output = stoker.translate_transform(transform)
    n = 4000
    drawn = draws(pipeline, output, 3, n)
    mine = np.sort([d["original"] for d in drawn])
    theirs = np.sort(torch._sample_dirichlet(
        torch.tensor([[0.7, 0.7]] * n, dtype=torch.float64))[:, 0].numpy())
    grid = np.concatenate([mine, theirs])
    d = np.abs(np.searchsorted(mine, grid, side="right") / n -
               np.searchsorted(theirs, grid, side="right") / n).max()
    assert d < 1.95 * np.sqrt(2 / n), d
    for one in drawn:
        assert abs(one["original"] + sum(one["weights"]) - 1) < 1e-5
    depths = np.bincount([len(c) for one in drawn for c in one["chains"]])
    assert depths[0] == 0 and chi_square(depths[1:]) < 13.82, depths
    names = list(space().keys())
    ops = np.bincount([names.index(op) for one in drawn
                       for c in one["chains"] for op, _ in c],
                      minlength=len(names))
    assert len(names) == 13 and chi_square(ops) < 32.91, ops
