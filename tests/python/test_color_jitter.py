"""stoker's ColorJitter arithmetic (daemon/image/color_jitter.cc) against
torchvision's own functional ops on PIL images: hue on every one of the
16.7 million RGB colours and on photographs, brightness, contrast and
saturation on photographs; and a loader with a hue jitter gives, image by
image, torchvision's adjust_hue of torchvision's eval image.
"""
import os
import subprocess
import tempfile

import numpy as np
import pytest
from conftest import _tool, photo_folder, photo_paths

Image = pytest.importorskip("PIL.Image")
F = pytest.importorskip("torchvision.transforms.functional")
T = pytest.importorskip("torchvision.transforms")


def adjust(image, op, factor):
    """stoker's adjustment of a PIL RGB image, through color_jitter_tool."""
    with tempfile.TemporaryDirectory() as tmp:
        src, dst = os.path.join(tmp, "in.rgb"), os.path.join(tmp, "out.rgb")
        with open(src, "wb") as f:
            f.write(image.tobytes())
        subprocess.run([_tool("COLOR_JITTER_TOOL"), src, dst, op,
                        repr(float(factor))], check=True)
        out = np.fromfile(dst, np.uint8)
    return out.reshape(image.height, image.width, 3)


def reference(image, op, factor):
    fn = {"brightness": F.adjust_brightness, "contrast": F.adjust_contrast,
          "saturation": F.adjust_saturation, "hue": F.adjust_hue}[op]
    return np.asarray(fn(image, factor))


def differences(got, want):
    diff = np.abs(got.astype(int) - want.astype(int))
    return int((diff > 0).sum()), int(diff.max())


@pytest.fixture(scope="module")
def every_colour():
    values = np.arange(1 << 24, dtype=np.uint32)
    rgb = np.stack([values >> 16, (values >> 8) & 255, values & 255], -1)
    return Image.fromarray(rgb.astype(np.uint8).reshape(4096, 4096, 3))


@pytest.fixture(scope="module")
def photos():
    images = []
    for path in photo_paths():
        with Image.open(path) as im:
            images.append(im.convert("RGB"))
    return images


# Negative factors wrap (np.uint8(-0.05 * 255) is 244); |h| < 1/255 shifts
# nothing but still round-trips through HSV, which changes pixels.
@pytest.mark.parametrize("factor", [-0.5, -0.27, -0.05, -0.002, 0.0, 0.1,
                                    0.37, 0.5])
def test_hue_equals_torchvisions_on_every_colour(every_colour, factor):
    got = adjust(every_colour, "hue", factor)
    assert differences(got, reference(every_colour, "hue", factor)) == (0, 0)


@pytest.mark.parametrize("op, factors", [
    ("hue", [-0.41, 0.003, 0.23]),
    ("brightness", [0.6, 1.37]),
    ("contrast", [0.5, 1.43]),
    ("saturation", [0.0, 0.31, 1.77]),
])
def test_adjustments_equal_torchvisions_on_photos(photos, op, factors):
    for image in photos:
        for factor in factors:
            assert differences(adjust(image, op, factor),
                               reference(image, op, factor)) == (0, 0), \
                (image.size, op, factor)


# The bytes np.uint8(h * 255) takes for h in [-0.5, 0.5] (128 never).
SHIFTS = [s for s in range(256) if s != 128]


def factor_of(shift):
    """A hue factor whose np.uint8(h * 255) is `shift`."""
    h = (shift + 0.5) / 255 if shift < 128 else -(256 - shift + 0.5) / 255
    return max(-0.5, h)


def test_loader_hue_jitter_is_torchvisions_adjust_hue(daemon, scratch):
    """Each image the loader gives is adjust_hue(torchvision's eval image,
    h) for the h it drew: one of the 256 shifts matches it exactly."""
    import torch
    from torchvision import datasets

    import stoker
    root = photo_folder(os.path.join(scratch, "photos"))
    plain = T.Compose([T.Resize(256), T.CenterCrop(224)])
    reference_set = datasets.ImageFolder(root, plain)
    jitter = T.Compose([T.Resize(256), T.CenterCrop(224),
                        T.ColorJitter(hue=0.5), T.PILToTensor()])
    loader = stoker.DataLoader(root, transform=jitter, batch_size=8,
                               shuffle=False, socket=daemon.socket)
    try:
        got = torch.cat([images.clone() for images, _ in loader])
    finally:
        loader.close()
    shifts = set()
    for i in range(0, len(reference_set), 3):
        image = reference_set[i][0]
        mine = got[i].permute(1, 2, 0).numpy()
        matches = [s for s in SHIFTS if np.array_equal(
            mine, reference(image, "hue", factor_of(s)))]
        assert matches, f"image {i}: no hue shift of torchvision's matches"
        shifts.update(matches)
    assert len(shifts) > 5  # drawn, not fixed
