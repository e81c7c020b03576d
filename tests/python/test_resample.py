"""stoker's Pillow-exact resampler (daemon/image/pillow_resample.cc) against
Pillow's own Image.resize: the same bytes for every filter, for shrinks
below and above 2x, enlargements, odd sizes, fractional boxes, and a window
of the output equal to the whole resize cropped (Resize + CenterCrop).
Every case runs twice: with the best kernels the CPU has (AVX2) and with
the portable ones.

Pillow 12.2 and 13.0 run the vertical pass first for some resizes: the
tool follows the Pillow it is told (--pillow), checked against this
Pillow and, for the other versions' orders, against the two single-pass
resizes those versions run (Pillow 12.2's own way of doing it).

The images are real photographs (tests/fixtures/photos), photo-sized
JPEGs from make_dataset (textured, as photos are) decoded by Pillow, and
noise, which no smoothing can hide behind.
"""
import os
import random
import subprocess
import tempfile

import numpy as np
import pytest
from conftest import _tool, photo_paths

Image = pytest.importorskip("PIL.Image")
PIL = pytest.importorskip("PIL")

FILTERS = {"nearest": Image.NEAREST, "bilinear": Image.BILINEAR,
           "bicubic": Image.BICUBIC}


@pytest.fixture(scope="module")
def images():
    """Photo-like and noise images, RGB, of assorted odd sizes."""
    make_dataset = _tool("MAKE_DATASET")
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run([make_dataset, f"--out={tmp}/d", "--classes=1",
                        "--per_class=6", "--height=375"], check=True,
                       stdout=subprocess.DEVNULL)
        photos = []
        for root, _, files in os.walk(f"{tmp}/d"):
            for name in sorted(files):
                with Image.open(os.path.join(root, name)) as im:
                    photos.append(im.convert("RGB"))
    for path in photo_paths()[::6]:  # real photographs, 8 of the 43
        with Image.open(path) as im:
            photos.append(im.convert("RGB"))
    rng = np.random.default_rng(7)
    noise = [Image.fromarray(rng.integers(0, 256, (h, w, 3), np.uint8))
             for w, h in ((37, 23), (101, 77), (480, 353))]
    return photos + noise


def vertical_first(image_size, size, box, version):
    """Whether Pillow `version` runs the vertical pass first (both run)."""
    (W, H), (w, h) = image_size, size
    both = ((w != W or box[0] or box[2] != w) and
            (h != H or box[1] or box[3] != h))
    if not both or version < (12, 2):
        return False
    if version < (13, 0):
        return H > 100 * W and h < H
    return H - h > 0 and H - h > 2 * (W - w)


def ordered_resize(image, size, resample, box, version):
    """Pillow `version`'s resize built from passes of this Pillow: each
    single-axis resize runs exactly one pass in every version."""
    (W, H), (w, h) = image.size, size
    if resample == Image.NEAREST:
        return image.resize(size, resample, box=box)
    if vertical_first(image.size, size, box, version):
        tall = image.resize((W, h), resample, box=(0, box[1], W, box[3]))
        return tall.resize(size, resample, box=(box[0], 0, box[2], h))
    wide = image.resize((w, H), resample, box=(box[0], 0, box[2], H))
    return wide.resize(size, resample, box=(0, box[1], w, box[3]))


def version_of(text):
    return tuple(int(part) for part in text.split(".")[:2])


class Tool:
    """Batches cases for pillow_resample_tool, then runs them at once;
    `pillow`: another version's order than this Pillow's."""

    def __init__(self, directory, kernels, pillow=None):
        self.dir = directory
        self.kernels = kernels
        self.pillow = pillow
        self.lines = []
        self.expected = []
        self.sources = {}

    def add(self, image, filter_name, size, box=None, window=None):
        box = box or (0, 0) + image.size
        window = window or (0, 0) + size
        n = len(self.lines)
        src = self.sources.get(id(image))
        if src is None:
            src = os.path.join(self.dir, f"in{len(self.sources)}.rgb")
            with open(src, "wb") as f:
                f.write(image.tobytes())
            self.sources[id(image)] = src
        out = os.path.join(self.dir, f"out{n}.rgb")
        fields = [src, *image.size, filter_name, *[repr(float(v)) for v in box],
                  *size, *window, out]
        self.lines.append(" ".join(str(f) for f in fields))
        if self.pillow is None:
            want = image.resize(size, FILTERS[filter_name], box=box)
        else:
            want = ordered_resize(image, size, FILTERS[filter_name], box,
                                  version_of(self.pillow))
        x, y, w, h = window
        want = np.asarray(want.crop((x, y, x + w, y + h)))
        self.expected.append((out, want, (image.size, filter_name, size, box,
                                          window)))

    def check(self):
        cases = os.path.join(self.dir, "cases")
        with open(cases, "w") as f:
            f.write("\n".join(self.lines) + "\n")
        extra = ["--portable"] if self.kernels == "portable" else []
        extra.append(f"--pillow={self.pillow or PIL.__version__}")
        subprocess.run([_tool("PILLOW_RESAMPLE_TOOL"), cases, *extra],
                       check=True)
        mismatches = []
        for out, want, case in self.expected:
            got = np.fromfile(out, np.uint8).reshape(want.shape)
            if not np.array_equal(got, want):
                diff = np.abs(got.astype(int) - want.astype(int))
                mismatches.append((case, int((diff > 0).sum()),
                                   int(diff.max())))
        assert not mismatches, (f"{len(mismatches)} of {len(self.expected)} "
                                f"differ (case, values off, max): "
                                f"{mismatches[:5]}")
        return len(self.expected)


@pytest.fixture(params=["best", "portable"])
def tool(request):
    with tempfile.TemporaryDirectory() as tmp:
        yield Tool(tmp, request.param)


@pytest.mark.parametrize("filter_name", sorted(FILTERS))
def test_whole_image_resizes_equal_pillows(images, tool, filter_name):
    for image in images:
        w, h = image.size
        for fx, fy in ((0.9, 0.9), (0.61, 0.55), (0.5, 0.5), (0.3, 0.41),
                       (0.11, 0.13), (1.0, 0.7), (0.8, 1.0), (1.7, 2.3)):
            tool.add(image, filter_name,
                     (max(1, round(w * fx)), max(1, round(h * fy))))
    tool.check()


@pytest.mark.parametrize("filter_name", sorted(FILTERS))
def test_random_boxes_equal_pillows_resize_with_box(images, tool,
                                                    filter_name):
    rng = random.Random(filter_name)
    for image in images:
        w, h = image.size
        for _ in range(12):
            x0, x1 = sorted(rng.uniform(0, w) for _ in range(2))
            y0, y1 = sorted(rng.uniform(0, h) for _ in range(2))
            if x1 - x0 < 1 or y1 - y0 < 1:
                continue
            size = (rng.randint(1, 300), rng.randint(1, 300))
            tool.add(image, filter_name, size, box=(x0, y0, x1, y1))
    assert tool.check() > 50


@pytest.mark.parametrize("filter_name", sorted(FILTERS))
def test_a_window_equals_the_whole_resize_cropped(images, tool, filter_name):
    # Resize(256) + CenterCrop(224) as torchvision computes them, and odd
    # windows anywhere.
    rng = random.Random(1)
    for image in images:
        w, h = image.size
        short = 256 if min(w, h) > 100 else 31
        size = ((short, int(short * h / w)) if w <= h
                else (int(short * w / h), short))
        crop = min(224, short - 3)
        left = int(round((size[0] - crop) / 2.0))
        top = int(round((size[1] - crop) / 2.0))
        tool.add(image, filter_name, size, window=(left, top, crop, crop))
        for _ in range(3):
            ww, wh = rng.randint(1, size[0]), rng.randint(1, size[1])
            tool.add(image, filter_name, size,
                     window=(rng.randint(0, size[0] - ww),
                             rng.randint(0, size[1] - wh), ww, wh))
    tool.check()


@pytest.mark.parametrize("filter_name", ["bilinear", "bicubic"])
def test_shrinks_by_a_hundred_equal_pillows(tool, filter_name):
    # Over 128 taps a side: the vector kernels' weights no longer fit their
    # precomputed pairs and are split as they are used.
    rng = np.random.default_rng(11)
    tall = Image.fromarray(rng.integers(0, 256, (9000, 48, 3), np.uint8))
    wide = Image.fromarray(rng.integers(0, 256, (48, 9000, 3), np.uint8))
    for image, size in ((tall, (48, 80)), (tall, (31, 41)), (wide, (80, 48)),
                        (wide, (41, 31))):
        tool.add(image, filter_name, size)
    tool.check()


def order_cases(images, rng):
    """(image, size, box, window) cases that reach both orders: heights
    shrunk more than widths (13.0's vertical first), an image over 100
    times taller than wide (12.2's), boxes and windows."""
    tall = Image.fromarray(np.random.default_rng(3).integers(
        0, 256, (1250, 12, 3), np.uint8))
    for image in images + [tall]:
        w, h = image.size
        for fx, fy in ((0.9, 0.3), (1.4, 0.5), (0.3, 0.9), (0.5, 0.5),
                       (1.2, 1.1), (1.0, 0.4)):
            size = (max(1, round(w * fx)), max(1, round(h * fy)))
            yield image, size, (0, 0) + image.size, (0, 0) + size
            ww, wh = rng.randint(1, size[0]), rng.randint(1, size[1])
            yield image, size, (0, 0) + image.size, (
                rng.randint(0, size[0] - ww), rng.randint(0, size[1] - wh),
                ww, wh)
        for _ in range(4):
            x0, x1 = sorted(rng.uniform(0, w) for _ in range(2))
            y0, y1 = sorted(rng.uniform(0, h) for _ in range(2))
            if x1 - x0 >= 1 and y1 - y0 >= 1:
                size = (rng.randint(1, 300), rng.randint(1, 300))
                yield image, size, (x0, y0, x1, y1), (0, 0) + size


@pytest.mark.parametrize("filter_name", ["bilinear", "bicubic"])
def test_the_order_model_is_this_pillows(images, filter_name):
    """ordered_resize at this Pillow's own version equals its resize: the
    model the next test holds stoker to is Pillow's, wherever it runs
    (Debian 12's 9.4, the GPU machine's 12.3, Debian unstable's 13.0)."""
    version = version_of(PIL.__version__)
    resample = FILTERS[filter_name]
    for image, size, box, _ in order_cases(images, random.Random(5)):
        want = np.asarray(image.resize(size, resample, box=box))
        got = np.asarray(ordered_resize(image, size, resample, box, version))
        assert np.array_equal(got, want), (image.size, size, box)


@pytest.mark.parametrize("version", ["12.1", "12.2", "13.0"])
@pytest.mark.parametrize("filter_name", ["bilinear", "bicubic"])
def test_each_pillows_order_of_passes(images, version, filter_name):
    """stoker's resampler told a Pillow version against that version's
    order built from single-pass resizes, windows included, with both
    kernels; the cases include resizes where the orders' bytes differ."""
    resample = FILTERS[filter_name]
    vertical = differ = 0
    for kernels in ("best", "portable"):
        with tempfile.TemporaryDirectory() as tmp:
            tool = Tool(tmp, kernels, pillow=version)
            for image, size, box, window in order_cases(
                    images, random.Random(version + filter_name)):
                tool.add(image, filter_name, size, box=box, window=window)
                if kernels == "best" and vertical_first(
                        image.size, size, box, version_of(version)):
                    vertical += 1
                    old = ordered_resize(image, size, resample, box, (12, 1))
                    new = ordered_resize(image, size, resample, box,
                                         version_of(version))
                    differ += not np.array_equal(np.asarray(old),
                                                 np.asarray(new))
            tool.check()
    if version != "12.1":
        assert vertical > 0 and differ > 0, (vertical, differ)


@pytest.mark.parametrize("name", ["eval", "resize_to_size", "nearest",
                                  "bicubic", "eval_float"])
def test_loader_gives_torchvisions_bytes(daemon, scratch, name):
    """stoker.DataLoader against torchvision's ImageFolder with the same
    transform, image by image, on photo-sized JPEGs (about 500x375)."""
    import torch
    from torchvision import datasets, transforms as T

    import stoker
    from conftest import make_dataset
    root = make_dataset(os.path.join(scratch, "photos"), classes=2,
                        per_class=12, width=500, height=375)
    nearest = T.InterpolationMode.NEAREST
    bicubic = T.InterpolationMode.BICUBIC
    transform = {
        "eval": T.Compose([T.Resize(256), T.CenterCrop(224),
                           T.PILToTensor()]),
        "resize_to_size": T.Compose([T.Resize((160, 200)), T.PILToTensor()]),
        "nearest": T.Compose([T.Resize(256, interpolation=nearest),
                              T.CenterCrop(224), T.PILToTensor()]),
        "bicubic": T.Compose([T.Resize(256, interpolation=bicubic),
                              T.CenterCrop(224), T.PILToTensor()]),
        "eval_float": T.Compose([
            T.Resize(256), T.CenterCrop(224), T.ToTensor(),
            T.Normalize([0.485, 0.456, 0.406], [0.229, 0.224, 0.225])]),
    }[name]
    reference = datasets.ImageFolder(root, transform)
    loader = stoker.DataLoader(root, transform=transform, batch_size=5,
                               shuffle=False, socket=daemon.socket)
    got = torch.cat([images.clone() for images, _ in loader])
    loader.close()
    want = torch.stack([reference[i][0] for i in range(len(reference))])
    assert got.shape == want.shape
    if name == "eval_float":
        # The same uint8 pixels, through the same arithmetic in float32.
        assert torch.allclose(got, want, rtol=0, atol=1e-6), \
            float((got - want).abs().max())
    else:
        identical = sum(bool(torch.equal(g, w)) for g, w in zip(got, want))
        assert identical == len(want), (
            f"{identical} of {len(want)} identical, max diff "
            f"{int((got.int() - want.int()).abs().max())}")
