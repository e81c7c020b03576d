"""RandomVerticalFlip, RandomGrayscale / Grayscale(3) and
RandomApply([ColorJitter]) in the daemon against torchvision's functional
ops on torchvision's own images: each image the loader gives is one of
the outcomes torchvision could give, and every outcome occurs.
"""
import os

import numpy as np
import pytest
from conftest import loader_epochs, photo_folder

T = pytest.importorskip("torchvision.transforms")
F = pytest.importorskip("torchvision.transforms.functional")
torch = pytest.importorskip("torch")

EVAL = [T.Resize(72), T.CenterCrop(64)]


def load(root, transform, socket):
    return loader_epochs(root, transform, socket, seed=5)[0]


def reference(root):
    from torchvision import datasets
    return datasets.ImageFolder(root, T.Compose(EVAL))


def as_array(image):
    return np.asarray(image)


def test_vertical_flip_and_grayscale_give_torchvisions_outcomes(
        daemon, scratch):
    root = photo_folder(os.path.join(scratch, "photos"))
    transform = T.Compose(EVAL + [T.RandomVerticalFlip(0.5),
                                  T.RandomHorizontalFlip(0.5),
                                  T.RandomGrayscale(0.5), T.PILToTensor()])
    got = load(root, transform, daemon.socket)
    ref = reference(root)
    seen = set()
    for i in range(len(ref)):
        image = ref[i][0]
        mine = got[i].permute(1, 2, 0).numpy()
        matches = []
        for v in (False, True):
            for h in (False, True):
                for g in (False, True):
                    out = F.vflip(image) if v else image
                    out = F.hflip(out) if h else out
                    out = F.rgb_to_grayscale(out, 3) if g else out
                    if np.array_equal(mine, as_array(out)):
                        matches.append((v, h, g))
        assert matches, f"image {i}: no outcome of torchvision's matches"
        seen.update(matches)
    assert {m[0] for m in seen} == {False, True}
    assert {m[2] for m in seen} == {False, True}


def test_grayscale_three_channels_always(daemon, scratch):
    import stoker
    root = photo_folder(os.path.join(scratch, "photos"))
    got = load(root, T.Compose(EVAL + [T.Grayscale(3), T.PILToTensor()]),
               daemon.socket)
    ref = reference(root)
    for i in range(len(ref)):
        want = as_array(F.rgb_to_grayscale(ref[i][0], 3))
        assert np.array_equal(got[i].permute(1, 2, 0).numpy(), want), i
    with pytest.raises(stoker.UnsupportedTransform, match="3 channels"):
        stoker.translate_transform(T.Compose(EVAL + [T.Grayscale()]))


# The bytes np.uint8(h * 255) takes for h in [-0.5, 0.5] (128 never).
SHIFTS = [s for s in range(256) if s != 128]


def factor_of(shift):
    h = (shift + 0.5) / 255 if shift < 128 else -(256 - shift + 0.5) / 255
    return max(-0.5, h)


def test_random_apply_jitter_applies_with_its_probability(daemon, scratch):
    import stoker
    root = photo_folder(os.path.join(scratch, "photos"))
    transform = T.Compose(EVAL + [
        T.RandomApply([T.ColorJitter(hue=0.5)], p=0.5), T.PILToTensor()])
    pipeline, _ = stoker.translate_transform(transform)
    assert pipeline[-1]["color_jitter"]["p"] == 0.5
    got = load(root, transform, daemon.socket)
    ref = reference(root)
    applied = untouched = 0
    for i in range(len(ref)):
        image = ref[i][0]
        mine = got[i].permute(1, 2, 0).numpy()
        if np.array_equal(mine, as_array(image)):
            untouched += 1
            continue
        assert any(np.array_equal(mine, as_array(F.adjust_hue(
            image, factor_of(s)))) for s in SHIFTS), i
        applied += 1
    assert applied > 5 and untouched > 5, (applied, untouched)
    for bad in (T.RandomApply([T.RandomHorizontalFlip(), T.ColorJitter(0.1)]),
                T.RandomChoice([T.ColorJitter(0.1)])):
        with pytest.raises(stoker.UnsupportedTransform):
            stoker.translate_transform(T.Compose(EVAL + [bad]))


def test_orders_stokerd_cannot_keep_are_refused():
    import stoker
    with pytest.raises(stoker.UnsupportedTransform, match="impossible order"):
        stoker.translate_transform(T.Compose(
            EVAL + [T.RandomGrayscale(), T.ColorJitter(0.2)]))
    # The flips commute: either order is the same transform.
    a, _ = stoker.translate_transform(T.Compose(
        EVAL + [T.RandomVerticalFlip(), T.RandomHorizontalFlip()]))
    b, _ = stoker.translate_transform(T.Compose(
        EVAL + [T.RandomHorizontalFlip(), T.RandomVerticalFlip()]))
    assert a == b


def drawn_warps(pipeline, output, count):
    import json
    import subprocess
    from conftest import _tool
    spec = {"pipeline": pipeline, "output": output}
    out = subprocess.run(
        [_tool("AUGMENT_TOOL"), "draws", json.dumps(spec), "640", "480", "5",
         "0", "0", str(count)], check=True, capture_output=True,
        text=True).stdout
    return [json.loads(line)["warp"] for line in out.splitlines()]


@pytest.mark.parametrize("warp", [
    T.RandomRotation(30),
    T.RandomRotation((-180, 180), interpolation=T.InterpolationMode.BILINEAR,
                     fill=[10, 20, 30]),
    T.RandomAffine(15, translate=(0.1, 0.2), scale=(0.8, 1.2), shear=10),
    T.RandomAffine((-5, 40), shear=(-10, 10, -5, 5),
                   interpolation=T.InterpolationMode.BILINEAR, fill=99),
    T.RandomRotation(45, interpolation=T.InterpolationMode.BICUBIC),
    T.RandomAffine(20, translate=(0.1, 0.1), scale=(0.7, 1.3), shear=15,
                   interpolation=T.InterpolationMode.BICUBIC, fill=[0, 9, 200]),
])
def test_rotation_and_affine_are_torchvisions_for_the_drawn_parameters(
        daemon, scratch, warp):
    import stoker
    root = photo_folder(os.path.join(scratch, "photos"))
    transform = T.Compose(EVAL + [warp, T.PILToTensor()])
    got = load(root, transform, daemon.socket)
    pipeline, output = stoker.translate_transform(transform)
    drawn = drawn_warps(pipeline, output, len(got))
    ref = reference(root)
    fill = warp.fill if not isinstance(warp.fill, (int, float)) else \
        [warp.fill] * 3
    for i in range(len(ref)):
        angle, tx, ty, scale, shx, shy = drawn[i]
        if type(warp).__name__ == "RandomRotation":
            want = F.rotate(ref[i][0], angle, warp.interpolation, fill=fill)
        else:
            want = F.affine(ref[i][0], angle, [tx, ty], scale, [shx, shy],
                            warp.interpolation, fill)
        assert np.array_equal(got[i].permute(1, 2, 0).numpy(),
                              as_array(want)), (i, drawn[i])
    assert len({round(d[0], 3) for d in drawn}) > 10  # drawn, not fixed


def test_affine_draws_follow_torchvisions_distribution():
    import math
    import stoker
    warp = T.RandomAffine(20, translate=(0.1, 0.3), scale=(0.7, 1.3),
                          shear=(-10, 10, -4, 6))
    transform = T.Compose([T.Resize((64, 96)), warp])
    pipeline, output = stoker.translate_transform(transform)
    count = 4000
    mine = np.array(drawn_warps(pipeline, output, count))
    torch.manual_seed(8)
    theirs = []
    for _ in range(count):
        angle, (tx, ty), scale, (shx, shy) = T.RandomAffine.get_params(
            warp.degrees, warp.translate, warp.scale, warp.shear, [96, 64])
        theirs.append([angle, tx, ty, scale, shx, shy])
    theirs = np.array(theirs)
    bound = 1.95 * math.sqrt(2 / count)  # two-sample KS, p = 0.001
    for column in range(6):
        a, b = np.sort(mine[:, column]), np.sort(theirs[:, column])
        both = np.concatenate([a, b])
        d = np.max(np.abs(np.searchsorted(a, both, "right") / count -
                          np.searchsorted(b, both, "right") / count))
        assert d < bound, (column, d, bound)
