"""stoker's automatic augmentation (daemon/image/augment_ops.cc,
auto_augment.cc) against torchvision itself on PIL images: every op of
TrivialAugmentWide, RandAugment and AutoAugment at magnitudes of their
tables, on 200 crops of the real photographs (and non-square ones), with
nearest, bilinear and bicubic warps and a fill; the magnitude tables; the
distribution of the draws against torchvision's own draws; and loaders
whose every image is torchvision's _apply_op of torchvision's image for
the draws stoker reports.
"""
import json
import math
import os
import subprocess
import tempfile

import numpy as np
import pytest
from conftest import _tool, photo_folder, photo_paths

Image = pytest.importorskip("PIL.Image")
T = pytest.importorskip("torchvision.transforms")
autoaugment = pytest.importorskip("torchvision.transforms.autoaugment")
torch = pytest.importorskip("torch")
InterpolationMode = T.InterpolationMode


def crops(count, size, seed):
    """`count` crops of the photographs resized to `size` (w, h), as a
    random resized crop gives the augmentation in a training pipeline."""
    rng = np.random.default_rng(seed)
    photos = []
    for path in photo_paths():
        with Image.open(path) as im:
            photos.append(im.convert("RGB"))
    out = []
    for i in range(count):
        photo = photos[i % len(photos)]
        w, h = photo.size
        cw, ch = int(rng.integers(w // 3, w + 1)), int(rng.integers(h // 3, h + 1))
        x, y = int(rng.integers(0, w - cw + 1)), int(rng.integers(0, h - ch + 1))
        out.append(photo.resize(size, Image.BILINEAR, box=(x, y, x + cw, y + ch)))
    return out


@pytest.fixture(scope="module")
def square():
    return crops(200, (224, 224), 1)


@pytest.fixture(scope="module")
def oblong():
    return crops(40, (176, 132), 2)


def stoker_op(images, op, magnitude, interpolation="nearest", fill=(0, 0, 0)):
    """stoker's op on each image, through augment_tool."""
    w, h = images[0].size
    with tempfile.TemporaryDirectory() as tmp:
        src, dst = os.path.join(tmp, "in.rgb"), os.path.join(tmp, "out.rgb")
        with open(src, "wb") as f:
            for image in images:
                f.write(image.tobytes())
        subprocess.run([_tool("AUGMENT_TOOL"), "op", src, dst, str(w), str(h),
                        op, repr(float(magnitude)), interpolation,
                        *map(str, fill)], check=True)
        out = np.fromfile(dst, np.uint8)
    return out.reshape(len(images), h, w, 3)


def torchvision_op(image, op, magnitude, interpolation="nearest", fill=None):
    mode = {"nearest": InterpolationMode.NEAREST,
            "bilinear": InterpolationMode.BILINEAR,
            "bicubic": InterpolationMode.BICUBIC}[interpolation]
    return np.asarray(autoaugment._apply_op(image, op, magnitude, mode, fill))


def assert_same(images, op, magnitude, interpolation="nearest", fill=None):
    got = stoker_op(images, op, magnitude, interpolation,
                    tuple(fill) if fill else (0, 0, 0))
    for k, image in enumerate(images):
        want = torchvision_op(image, op, magnitude, interpolation, fill)
        if not np.array_equal(got[k], want):
            diff = np.abs(got[k].astype(int) - want.astype(int))
            raise AssertionError(
                f"{op}({magnitude}, {interpolation}, fill={fill}) on image "
                f"{k} ({image.size}): {(diff > 0).sum()} values differ, "
                f"by up to {diff.max()}")


def wide_table(op):
    magnitudes, signed = T.TrivialAugmentWide()._augmentation_space(31)[op]
    return magnitudes, signed


def some_magnitudes(op, count=6):
    """Magnitudes of TrivialAugmentWide's table (the widest), both signs,
    spread over the bins; plus RandAugment's bin 9."""
    magnitudes, signed = wide_table(op)
    if magnitudes.ndim == 0:
        return [0.0]
    picks = sorted({0, 1, 30} | set(range(2, 31, max(1, 30 // count))))
    values = [float(magnitudes[i].item()) for i in picks]
    ra, _ = T.RandAugment()._augmentation_space(31, (224, 224))[op]
    values.append(float(ra[9].item()))
    if signed:
        values += [-v for v in values if v]
    return values


OPS = ["Identity", "ShearX", "ShearY", "TranslateX", "TranslateY", "Rotate",
       "Brightness", "Color", "Contrast", "Sharpness", "Posterize",
       "Solarize", "AutoContrast", "Equalize"]


@pytest.mark.parametrize("op", OPS)
def test_each_op_equals_torchvisions_on_photo_crops(square, op):
    for magnitude in some_magnitudes(op):
        assert_same(square, op, magnitude)


def test_invert_equals_torchvisions(square):
    assert_same(square, "Invert", 0.0)


@pytest.mark.parametrize("op", ["ShearX", "ShearY", "TranslateX",
                                "TranslateY", "Rotate"])
def test_warps_bilinear_with_fill_and_on_oblong_images(square, oblong, op):
    for magnitude in some_magnitudes(op, count=3):
        assert_same(square[:60], op, magnitude, "bilinear", [124, 116, 104])
        assert_same(oblong, op, magnitude, "nearest", [255, 0, 7])
        assert_same(oblong, op, magnitude, "bilinear")
        # Pillow's affine bicubic (Swin's and MaxViT's recipes).
        assert_same(square[:60], op, magnitude, "bicubic", [124, 116, 104])
        assert_same(oblong, op, magnitude, "bicubic")


def test_rotations_by_right_angles_take_pillows_transposes(square, oblong):
    for angle in (90.0, -90.0, 180.0, 270.0, 45.0, 135.0, -135.0):
        assert_same(square[:20], "Rotate", angle)
        assert_same(oblong[:20], "Rotate", angle)


def tables(spec):
    out = subprocess.run([_tool("AUGMENT_TOOL"), "tables", json.dumps(spec)],
                         check=True, capture_output=True, text=True).stdout
    return json.loads(out)


def spec_with(op, height=224, width=224):
    return {"pipeline": [{"resize": {"height": height, "width": width}}, op],
            "output": {"dtype": "DTYPE_FLOAT32"}}


def assert_tables_equal(mine, theirs, ulps=0):
    """Equal op lists and signs, and values within `ulps` float32 steps."""
    assert list(mine) == list(theirs)
    for name, (values, signed) in theirs.items():
        want = np.float32(values.reshape(-1).numpy()) if values.ndim else \
            np.float32([])
        got = np.float32(mine[name][0])
        assert mine[name][1] == signed, name
        assert got.shape == want.shape, name
        steps = np.abs(got.view(np.int32).astype(np.int64) -
                       want.view(np.int32).astype(np.int64))
        assert np.all(steps <= ulps), (name, got, want)


# stokerd's own tables follow torch.linspace's scalar formula; torch's
# vectorised kernels may round a bin up to two float32 steps away, which is
# why the Python package sends torchvision's tables with the op.
@pytest.mark.parametrize("bins", [2, 3, 7, 10, 31, 32, 100])
def test_trivial_augment_tables(bins):
    import stoker
    theirs = T.TrivialAugmentWide()._augmentation_space(bins)
    computed = tables(spec_with({"trivial_augment_wide":
                                 {"num_magnitude_bins": bins}}))
    assert_tables_equal(computed, theirs, ulps=2)
    pipeline, output = stoker.translate_transform(T.Compose([
        T.Resize((224, 224)), T.TrivialAugmentWide(num_magnitude_bins=bins)]))
    sent = tables({"pipeline": pipeline, "output": output})
    assert_tables_equal(sent, theirs)


@pytest.mark.parametrize("bins, size", [(31, (224, 224)), (10, (176, 176)),
                                        (17, (200, 331))])
def test_rand_augment_tables(bins, size):
    import stoker
    h, w = size
    theirs = T.RandAugment()._augmentation_space(bins, (h, w))
    computed = tables(spec_with({"rand_augment": {"num_magnitude_bins": bins,
                                                  "magnitude": 1}}, h, w))
    assert_tables_equal(computed, theirs, ulps=2)
    pipeline, output = stoker.translate_transform(T.Compose([
        T.Resize(size), T.RandAugment(num_magnitude_bins=bins, magnitude=1)]))
    assert_tables_equal(tables({"pipeline": pipeline, "output": output}),
                        theirs)


def test_auto_augment_tables():
    import stoker
    theirs = T.AutoAugment()._augmentation_space(10, (160, 240))
    assert_tables_equal(tables(spec_with({"auto_augment": {}}, 160, 240)),
                        theirs, ulps=2)
    pipeline, output = stoker.translate_transform(T.Compose([
        T.Resize((160, 240)), T.AutoAugment()]))
    assert_tables_equal(tables({"pipeline": pipeline, "output": output}),
                        theirs)


def draws(pipeline, output, seed, count, epoch=0, image=(640, 480)):
    """The ops and erasing box each of samples 0..count-1 draws."""
    spec = {"pipeline": pipeline, "output": output}
    out = subprocess.run(
        [_tool("AUGMENT_TOOL"), "draws", json.dumps(spec), str(image[0]),
         str(image[1]), str(seed), str(epoch), "0", str(count)],
        check=True, capture_output=True, text=True).stdout
    return [json.loads(line) for line in out.splitlines()]


def load_all(root, transform, socket, seed):
    import stoker
    loader = stoker.DataLoader(root, transform=transform, batch_size=8,
                               shuffle=False, seed=seed, socket=socket)
    try:
        images = torch.cat([images.clone() for images, _ in loader])
    finally:
        loader.close()
    return images


EVAL = [T.Resize(256), T.CenterCrop(224)]


@pytest.mark.parametrize("augment, interpolation", [
    (T.TrivialAugmentWide(), "nearest"),
    (T.TrivialAugmentWide(interpolation=InterpolationMode.BILINEAR,
                          fill=[124, 116, 104]), "bilinear"),
    (T.TrivialAugmentWide(interpolation=InterpolationMode.BICUBIC),
     "bicubic"),
    (T.RandAugment(num_ops=2, magnitude=9), "nearest"),
    (T.RandAugment(num_ops=3, magnitude=15, num_magnitude_bins=21,
                   interpolation=InterpolationMode.BILINEAR, fill=128),
     "bilinear"),
    (T.AutoAugment(T.AutoAugmentPolicy.IMAGENET), "nearest"),
    (T.AutoAugment(T.AutoAugmentPolicy.SVHN), "nearest"),
    (T.AutoAugment(T.AutoAugmentPolicy.CIFAR10), "nearest"),
])
def test_loader_images_are_torchvisions_for_the_drawn_ops(
        daemon, scratch, augment, interpolation):
    """Each image the loader gives is torchvision's _apply_op, op after op,
    of torchvision's eval image, for the ops stoker drew for that sample."""
    import stoker
    from torchvision import datasets
    root = photo_folder(os.path.join(scratch, "photos"))
    transform = T.Compose(EVAL + [augment, T.PILToTensor()])
    got = load_all(root, transform, daemon.socket, seed=11)
    pipeline, output = stoker.translate_transform(transform)
    drawn = draws(pipeline, output, 11, len(got))
    reference = datasets.ImageFolder(root, T.Compose(EVAL))
    fill = augment.fill
    fill = [fill] * 3 if isinstance(fill, (int, float)) else fill
    seen = set()
    for i in range(len(reference)):
        image = reference[i][0]
        for op, magnitude in drawn[i]["ops"]:
            image = autoaugment._apply_op(
                image, op, magnitude, augment.interpolation, fill)
            seen.add(op)
        want = np.asarray(image)
        mine = got[i].permute(1, 2, 0).numpy()
        assert np.array_equal(mine, want), (i, drawn[i])
    assert len(seen) >= 5, seen  # drawn, not fixed


def chi_square_critical(dof, z=3.09):
    """The chi-square quantile at p = 0.001 (Wilson-Hilferty)."""
    return dof * (1 - 2 / (9 * dof) + z * math.sqrt(2 / (9 * dof))) ** 3


def assert_same_distribution(mine, theirs):
    """Two-sample chi-square test of homogeneity on categorical samples."""
    keys = sorted(set(mine) | set(theirs), key=repr)
    a = np.array([mine.count(k) for k in keys], float)
    b = np.array([theirs.count(k) for k in keys], float)
    total = a + b
    ea, eb = total * a.sum() / total.sum(), total * b.sum() / total.sum()
    stat = (((a - ea) ** 2) / ea + ((b - eb) ** 2) / eb).sum()
    dof = len(keys) - 1
    assert stat < chi_square_critical(dof), (stat, dof)


def torchvision_draws(augment, count, size=(224, 224)):
    """What torchvision's own forward draws, op by op, over `count` calls."""
    recorded = []
    original = autoaugment._apply_op

    def record(img, op_name, magnitude, interpolation, fill):
        recorded[-1].append((op_name, round(magnitude, 4)))
        return img
    image = Image.new("RGB", size)
    torch.manual_seed(5)
    autoaugment._apply_op = record
    try:
        for _ in range(count):
            recorded.append([])
            augment(image)
    finally:
        autoaugment._apply_op = original
    return [tuple(r) for r in recorded]


@pytest.mark.parametrize("augment", [
    T.TrivialAugmentWide(), T.RandAugment(num_ops=2, magnitude=9),
    T.AutoAugment(T.AutoAugmentPolicy.IMAGENET),
    T.AutoAugment(T.AutoAugmentPolicy.CIFAR10)])
def test_draws_follow_torchvisions_distribution(augment):
    import stoker
    count = 20000
    transform = T.Compose([T.Resize((224, 224)), augment])
    pipeline, output = stoker.translate_transform(transform)
    mine = [tuple((op, round(m, 4)) for op, m in d["ops"])
            for d in draws(pipeline, output, 3, count)]
    theirs = torchvision_draws(augment, count)
    # Every (op, magnitude) sequence, and each op alone.
    assert_same_distribution(mine, theirs)
    assert_same_distribution([s[0][0] if s else "" for s in mine],
                             [s[0][0] if s else "" for s in theirs])
    assert len(set(mine)) > 20
