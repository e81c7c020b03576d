"""RandomCrop(size, padding, pad_if_needed, fill, padding_mode) and Pad in
the daemon against torchvision on the photographs: every image the loader
gives is torchvision's crop of torchvision's padded image at some place,
and the places cover the padded image uniformly.
"""
import os

import numpy as np
import pytest
from conftest import loader_epochs, photo_folder

T = pytest.importorskip("torchvision.transforms")
F = pytest.importorskip("torchvision.transforms.functional")
torch = pytest.importorskip("torch")


def load(root, transform, socket, epochs=1):
    return loader_epochs(root, transform, socket, seed=11, epochs=epochs)


def padded_reference(image, crop):
    """What RandomCrop.forward makes of `image` before get_params."""
    if crop.padding is not None:
        image = F.pad(image, crop.padding, crop.fill, crop.padding_mode)
    width, height = image.size
    if crop.pad_if_needed and width < crop.size[1]:
        image = F.pad(image, [crop.size[1] - width, 0], crop.fill,
                      crop.padding_mode)
    if crop.pad_if_needed and height < crop.size[0]:
        image = F.pad(image, [0, crop.size[0] - height], crop.fill,
                      crop.padding_mode)
    return np.asarray(image)


def places(padded, mine):
    """Every (top, left) where `mine` is a window of `padded`."""
    h, w = mine.shape[:2]
    rows, cols = padded.shape[0] - h + 1, padded.shape[1] - w + 1
    candidates = [(i, j) for i in range(rows) for j in range(cols)]
    # Narrow by a few pixels first, then compare whole windows.
    for y, x in ((0, 0), (h // 2, w // 2), (h - 1, w - 1), (h // 3, w - 1)):
        want = mine[y, x]
        candidates = [(i, j) for i, j in candidates
                      if np.array_equal(padded[i + y, j + x], want)]
    return [(i, j) for i, j in candidates
            if np.array_equal(padded[i:i + h, j:j + w], mine)]


def check(root, before, crop, socket, epochs=1):
    """The loader's images against torchvision's; the places found."""
    from torchvision import datasets
    transform = T.Compose(before + [crop, T.PILToTensor()])
    batches = load(root, transform, socket, epochs)
    ref = datasets.ImageFolder(root, T.Compose(before) if before else None)
    found = []
    for got in batches:
        for i in range(len(ref)):
            image = ref[i][0].convert("RGB")
            padded = padded_reference(image, crop)
            mine = got[i].permute(1, 2, 0).numpy()
            where = places(padded, mine)
            assert where, f"image {i}: no crop of torchvision's padded image"
            if len(where) == 1:
                found.append(where[0] + padded.shape[:2])
    return found


@pytest.mark.parametrize("mode", ["constant", "edge", "reflect", "symmetric"])
def test_cifar_crop_is_torchvisions(daemon, scratch, mode):
    root = photo_folder(os.path.join(scratch, "photos"))
    crop = T.RandomCrop(32, padding=4, fill=(30, 60, 90), padding_mode=mode)
    found = check(root, [T.Resize((32, 32))], crop, daemon.socket, epochs=5)
    assert len(found) > 180, len(found)
    # Each of the 9 rows and 9 columns of places about equally often
    # (chi-square, 8 degrees of freedom, p ~ 0.001 at 26.1).
    for axis in (0, 1):
        counts = np.bincount([f[axis] for f in found], minlength=9)
        expected = len(found) / 9
        chi2 = float(((counts - expected) ** 2 / expected).sum())
        assert chi2 < 26.1, (axis, counts)


def test_pad_then_crop_on_whole_photographs(daemon, scratch):
    """No resize: the crop reads the decoded photograph itself (JPEG partial
    decode, PNG, palette and greyscale images), after a Pad and the crop's
    own uneven reflect padding; pad_if_needed pads the small ones."""
    root = photo_folder(os.path.join(scratch, "photos"))
    crop = T.RandomCrop((150, 180), padding=(3, 5, 7, 9), pad_if_needed=True,
                        padding_mode="reflect")
    before = [T.Pad(6, fill=(200, 10, 10))]
    found = check(root, before, crop, daemon.socket)
    assert len(found) > 30, len(found)


def test_wide_reflection_is_numpys(daemon, scratch):
    """Padding wider than the image: numpy reflects it piecewise."""
    root = photo_folder(os.path.join(scratch, "photos"))
    crop = T.RandomCrop(40, padding=(17, 3, 2, 19), pad_if_needed=True,
                        padding_mode="reflect")
    check(root, [T.Resize((5, 7))], crop, daemon.socket)
    crop = T.RandomCrop(30, pad_if_needed=True, padding_mode="symmetric")
    check(root, [T.Resize((4, 3))], crop, daemon.socket)


def test_crop_larger_than_the_image_fails_the_sample(daemon, scratch):
    import stoker
    root = photo_folder(os.path.join(scratch, "photos"))
    # The error names the sample, its size and the way out (it may come
    # while the loader opens, or from the batch).
    with pytest.raises(stoker.StokerError,
                       match="padded, is [0-9]+x[0-9]+, smaller than the crop "
                             "600x600 \\(pad_if_needed pads it\\)"):
        loader = stoker.DataLoader(
            root, transform=T.Compose([T.RandomCrop(600), T.PILToTensor()]),
            batch_size=4, shuffle=False, socket=daemon.socket,
            on_error="fail")
        try:
            for _ in loader:
                pass
        finally:
            loader.close()


def test_translation_and_refusals():
    import stoker
    pipeline, _ = stoker.translate_transform(T.Compose([
        T.Pad((1, 2)), T.RandomCrop(32, padding_mode="edge"),
        T.RandomHorizontalFlip()]))
    assert list(pipeline[0]) == ["pad"]
    assert pipeline[0]["pad"]["left"] == 1 and pipeline[0]["pad"]["top"] == 2
    assert pipeline[1]["random_crop"]["padding_mode"] == "PADDING_MODE_EDGE"
    none, _ = stoker.translate_transform(T.RandomCrop(32, 4, fill=None))
    assert none[0]["random_crop"]["fill"] == [0]  # _parse_fill's None
    for bad in (T.RandomCrop(32, padding=[1, 2, 3]),
                T.RandomCrop(32, padding=4, fill=300),
                T.Pad(4, fill=(1, 2))):
        with pytest.raises(stoker.UnsupportedTransform):
            stoker.translate_transform(T.Compose([bad, T.RandomCrop(8)]))
    # A geometry op keeps its place: a crop before the resize is refused by
    # the daemon, not quietly moved after it.
    pipeline, _ = stoker.translate_transform(
        T.Compose([T.RandomCrop(64), T.Resize((32, 32))]))
    assert [next(iter(op)) for op in pipeline] == ["random_crop", "resize"]
