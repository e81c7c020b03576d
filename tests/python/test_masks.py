"""Label masks (DataLoader(masks=...)) through a real daemon: every mask
equal to what torchvision's functional ops give on the PIL mask (nearest,
fill 255) with the parameters stoker drew for its image, and the image
equal to torchvision's for the same draws; palette masks of 1 to 8 bits
and greyscale masks keep their indices; refusals by name.
"""
import io
import json
import os
import subprocess
import tarfile

import numpy as np
import pytest
from conftest import _tool, photo_paths

torch = pytest.importorskip("torch")
T = pytest.importorskip("torchvision.transforms")
F = pytest.importorskip("torchvision.transforms.functional")
import stoker  # noqa: E402
from PIL import Image  # noqa: E402

NEAREST = T.InterpolationMode.NEAREST
FILL = 255
# A VOC-like palette: each class a colour.
MANIFEST = {}  # the segmentation fixture's manifest of the same pairs
PALETTE = [v for c in range(256)
           for v in ((c * 37) % 256, (c * 91) % 256, (c * 53) % 256)]


def mask_of(photo, number):
    """A mask for `photo`: its grey levels cut into classes, a border of
    254 (not the fill, which only padding and warps write). Palette masks
    at 8, 4, 2 and 1 bits, and L masks."""
    with Image.open(photo) as im:
        grey = np.asarray(im.convert("L"), dtype=np.uint8)
    kind = number % 5
    classes = (21, 16, 4, 2, 21)[kind]
    labels = (grey.astype(np.int32) * classes // 256).astype(np.uint8)
    labels[:3, :] = labels[:, :3] = 254 if classes > 16 else 0
    if kind == 4:
        return Image.fromarray(labels, "L"), {}
    mask = Image.fromarray(labels, "P")
    mask.putpalette(PALETTE[:3 * max(classes, 2)] if classes <= 16 else PALETTE)
    return mask, {"bits": (8, 4, 2, 1)[kind]}


@pytest.fixture(scope="module")
def segmentation(tmp_path_factory):
    """A shard of (photograph, mask) samples, the masks saved as PNG; the
    same pairs as a manifest (masks/NNNNN.png beside it), in
    MANIFEST["pairs"]."""
    root = tmp_path_factory.mktemp("masks")
    shard = str(root / "seg.tar")
    samples, rows = [], ["path,mask"]
    os.makedirs(root / "masks")
    with tarfile.open(shard, "w") as tar:
        for i, path in enumerate(photo_paths()):
            mask, options = mask_of(path, i)
            data = io.BytesIO()
            mask.save(data, "PNG", **options)
            mask.save(root / "masks" / f"{i:05d}.png", "PNG", **options)
            rows.append(f"{path},masks/{i:05d}.png")
            suffix = os.path.splitext(path)[1]
            for name, payload in ((f"{i:05d}{suffix}", open(path, "rb").read()),
                                  (f"{i:05d}.seg.png", data.getvalue())):
                info = tarfile.TarInfo(name)
                info.size = len(payload)
                tar.addfile(info, io.BytesIO(payload))
            samples.append(path)
    (root / "pairs.csv").write_text("\n".join(rows) + "\n")
    MANIFEST["pairs"] = str(root / "pairs.csv")
    return shard, samples


def draws(transform, index, size, seed, epoch):
    pipeline, output = stoker.translate_transform(transform)
    spec = json.dumps({"pipeline": pipeline, "output": output})
    out = subprocess.run(
        [_tool("AUGMENT_TOOL"), "draws", spec, str(size[0]), str(size[1]),
         str(seed), str(epoch), str(index), "1"],
        check=True, capture_output=True, text=True).stdout
    return json.loads(out)


def pad_end(img, size, fill):
    """The segmentation reference's pad_if_smaller."""
    w, h = img.size
    if min(w, h) >= size:
        return img
    return F.pad(img, [0, 0, max(size - w, 0), max(size - h, 0)], fill=fill)


def replay(transform, img, mask, d, fill=FILL):
    """`transform`'s ops in their own order on the PIL image and mask, with
    what stoker drew; the mask as torchvision's functional ops take it."""
    for t in transform.transforms:
        kind = type(t).__name__
        if kind == "RandomResize":
            img = F.resize(img, d["side"])
            mask = F.resize(mask, d["side"], NEAREST)
        elif kind == "SegmentationRandomCrop":
            top, left, _, _, padded_w, _ = d["crop"]
            if d["flip"]:  # drawn on the flipped image's mirror
                left = padded_w - left - t.size
            img, mask = pad_end(img, t.size, 0), pad_end(mask, t.size, fill)
            img = F.crop(img, top, left, t.size, t.size)
            mask = F.crop(mask, top, left, t.size, t.size)
        elif kind == "RandomResizedCrop":
            x, y, w, h = d["box"]
            img = F.resized_crop(img, y, x, h, w, list(t.size), t.interpolation)
            mask = F.resized_crop(mask, y, x, h, w, list(t.size), NEAREST)
        elif kind in ("Resize", "CenterCrop"):
            img, mask = t(img), (F.resize(mask, t.size, NEAREST)
                                 if kind == "Resize" else t(mask))
        elif kind in ("Pad", "RandomCrop"):
            img, mask = _crop(t, img, mask, d, kind, fill)
        elif kind == "RandomHorizontalFlip":
            img, mask = (F.hflip(img), F.hflip(mask)) if d["flip"] else (img, mask)
        elif kind == "RandomVerticalFlip":
            img, mask = (F.vflip(img), F.vflip(mask)) if d["vflip"] else (img, mask)
        elif kind in ("RandomRotation", "RandomAffine"):
            img, mask = _warp(t, img, mask, d["warp"], fill)
        else:  # PILToTensor
            img = t(img)
    return img, torch.as_tensor(np.array(mask), dtype=torch.int64)


def _crop(t, img, mask, d, kind, fill):
    if kind == "Pad":
        return (F.pad(img, t.padding, t.fill, t.padding_mode),
                F.pad(mask, t.padding, fill, t.padding_mode))
    if t.padding is not None:
        img = F.pad(img, t.padding, t.fill, t.padding_mode)
        mask = F.pad(mask, t.padding, fill, t.padding_mode)
    top, left = d["crop"][:2]
    h, w = t.size
    return F.crop(img, top, left, h, w), F.crop(mask, top, left, h, w)


def _warp(t, img, mask, warp, fill):
    angle, tx, ty, scale, shear_x, shear_y = warp
    if type(t).__name__ == "RandomRotation":
        return (F.rotate(img, angle, t.interpolation, fill=t.fill),
                F.rotate(mask, angle, NEAREST, fill=fill))
    args = (angle, [tx, ty], scale, [shear_x, shear_y])
    return (F.affine(img, *args, interpolation=t.interpolation, fill=t.fill),
            F.affine(mask, *args, interpolation=NEAREST, fill=fill))


def load(socket, shard, transform, epochs, seed, **flags):
    where = ({"shards": shard, "fields": ("jpg;png", "seg.png"),
              "masks": ("seg.png",)} if shard.endswith(".tar") else
             {"manifest": shard, "fields": ("path", "mask"),
              "masks": ("mask",)})
    loader = stoker.DataLoader(transform=transform, batch_size=8, seed=seed,
                               socket=socket, **where, **flags)
    try:
        out = []
        for epoch in range(epochs):
            loader.set_epoch(epoch)
            batches = [(i.clone(), m) for i, m in loader]
            out.append((torch.cat([b[0] for b in batches]),
                        torch.cat([b[1] for b in batches])))
        return out
    finally:
        loader.close()


PRESET = T.Compose([stoker.RandomResize(120, 420), T.RandomHorizontalFlip(),
                    stoker.SegmentationRandomCrop(288), T.PILToTensor()])
CLASSIC = T.Compose([T.RandomResizedCrop((160, 192), scale=(0.2, 1.0)),
                     T.RandomHorizontalFlip(), T.RandomVerticalFlip(),
                     T.RandomRotation(25, fill=(10, 20, 30)),
                     T.PILToTensor()])
PADDED = T.Compose([T.Resize(176),
                    T.Pad(12, fill=(50, 60, 70), padding_mode="reflect"),
                    T.RandomCrop(208, padding=8, fill=(1, 2, 3)),
                    T.RandomHorizontalFlip(),
                    T.RandomAffine(10, translate=(0.1, 0.05),
                                   scale=(0.9, 1.1), shear=(-8, 8, -4, 4)),
                    T.PILToTensor()])
EVAL = T.Compose([T.Resize(200), T.CenterCrop(184), T.PILToTensor()])


@pytest.mark.parametrize("name, transform, epochs, fill", [
    ("preset", PRESET, 5, FILL), ("classic", CLASSIC, 5, FILL),
    ("padded", PADDED, 5, FILL), ("eval", EVAL, 1, FILL),
    ("preset, mask_fill 7", PRESET, 2, 7), ("classic, mask_fill 7", CLASSIC, 2, 7)])
def test_masks_follow_the_images_geometry(daemon, segmentation, name,
                                          transform, epochs, fill):
    """Each mask (and image) equal to torchvision's functional ops on the
    PIL mask (and image) for stoker's draws: 43 photographs a epoch, with
    palette (8, 4, 2, 1 bits) and L masks, padding and warps filled with
    the loader's mask_fill."""
    shard, paths = segmentation
    flags = {} if fill == FILL else {"mask_fill": fill}
    got = load(daemon.socket, shard, transform, epochs, seed=5, **flags)
    checked, flipped, padded = 0, 0, 0
    for epoch in range(epochs):
        images, masks = got[epoch]
        assert masks.dtype == torch.int64 and masks.dim() == 3
        for i, path in enumerate(paths):
            with Image.open(path) as im:
                img = im.convert("RGB")
            mask, _ = mask_of(path, i)
            d = draws(transform, i, img.size, seed=5, epoch=epoch)
            want_image, want_mask = replay(transform, img, mask, d, fill)
            assert torch.equal(images[i], want_image), (name, epoch, path, d)
            assert torch.equal(masks[i], want_mask), (name, epoch, path, d)
            checked += 1
            flipped += d["flip"]
            padded += bool((want_mask == fill).any())
    assert checked >= (200 if epochs == 5 else 43 * epochs)
    if name != "eval":
        assert 0 < flipped < checked and padded > 0, (flipped, padded)


def test_palette_indices_are_kept(daemon, segmentation):
    """A mask arrives as its indices (np.array of the PIL mask), never its
    palette's colours, at every bit depth."""
    shard, paths = segmentation
    loader = stoker.DataLoader(
        shards=shard, fields=("jpg;png", "seg.png"), masks=("seg.png",),
        transform=T.Compose([T.Resize((64, 64), NEAREST), T.PILToTensor()]),
        batch_size=5, socket=daemon.socket)
    try:
        _, masks = next(iter(loader))
    finally:
        loader.close()
    for i in range(5):
        mask, _ = mask_of(paths[i], i)
        want = np.array(F.resize(mask, [64, 64], NEAREST))
        assert np.array_equal(masks[i].numpy(), want), i


def write_shard(path, pairs):
    with tarfile.open(path, "w") as tar:
        for i, (image, mask) in enumerate(pairs):
            for suffix, img in (("jpg", image), ("seg.png", mask)):
                data = io.BytesIO()
                img.save(data, "JPEG" if suffix == "jpg" else "PNG")
                info = tarfile.TarInfo(f"{i:05d}.{suffix}")
                info.size = len(data.getvalue())
                tar.addfile(info, io.BytesIO(data.getvalue()))


@pytest.mark.parametrize("mask, message", [
    (Image.new("P", (40, 30)), r"the mask is 40x30 \(width x height\), its image 64x48"),
    (Image.new("RGB", (64, 48)), "opens as mode RGB"),
    (Image.new("I;16", (64, 48)), "opens as mode I;16"),
    (Image.new("LA", (64, 48)), "opens as mode LA"),
])
def test_a_bad_mask_fails_its_sample_by_name(daemon, tmp_path, mask, message):
    shard = str(tmp_path / "bad.tar")
    write_shard(shard, [(Image.new("RGB", (64, 48), (9, 9, 9)), mask)])
    with pytest.raises(stoker.DataLoss, match=f"field 'seg.png': .*{message}"):
        loader = stoker.DataLoader(
            shards=shard, fields=("jpg", "seg.png"), masks=("seg.png",),
            transform=T.Compose([T.Resize((32, 32)), T.PILToTensor()]),
            batch_size=1, on_error="fail", socket=daemon.socket)
        try:
            next(iter(loader))
        finally:
            loader.close()


@pytest.mark.parametrize("transform, flags, error, message", [
    ([T.Compose([T.RandomResizedCrop(32), T.PILToTensor()])] * 2, {},
     stoker.InvalidArgument, "cannot follow several views"),
    (T.Compose([T.RandomResizedCrop(32), T.TrivialAugmentWide()]), {},
     stoker.InvalidArgument, "cannot follow an automatic augmentation"),
    (T.Compose([T.RandomResizedCrop(32), T.AugMix()]), {},
     stoker.InvalidArgument, "cannot follow AugMix"),
    (T.Compose([T.RandomResizedCrop(32)]), {"fast_resample": True},
     stoker.InvalidArgument, "cannot follow fast_resample"),
    (T.Compose([T.RandomResizedCrop(32), T.RandomChoice(
        [T.RandomRotation(10), T.RandomRotation(20)])]), {},
     stoker.InvalidArgument, "cannot follow a RandomChoice of geometric ops"),
    (T.Compose([T.RandomResizedCrop(32), T.RandomChoice(
        [T.TrivialAugmentWide(), T.RandAugment()])]), {},
     stoker.InvalidArgument, "cannot follow an automatic augmentation"),
    (T.Compose([T.RandomResizedCrop(32)]), {"device": "cuda"},
     stoker.Unimplemented, "masks are served on the CPU"),
    (T.Compose([T.RandomResizedCrop(32)]), {"mask_fill": 256},
     stoker.InvalidArgument, r"mask_fill=256: an index in \[0, 255\]"),
])
def test_refused_by_name(daemon, segmentation, transform, flags, error,
                         message):
    shard, _ = segmentation
    if flags.get("device") == "cuda" and not torch.cuda.is_available():
        pytest.skip("torch sees no CUDA device")
    with pytest.raises(error, match=message):
        stoker.DataLoader(shards=shard, fields=("jpg;png", "seg.png"),
                          masks=("seg.png",), transform=transform,
                          batch_size=2, socket=daemon.socket, **flags)


def test_mask_options_are_checked(daemon, segmentation):
    shard, _ = segmentation
    with pytest.raises(stoker.InvalidArgument, match="name one of fields"):
        stoker.DataLoader(shards=shard, fields=("jpg;png", "seg.png"),
                          masks=("png",), transform=EVAL, socket=daemon.socket)
    with pytest.raises(stoker.InvalidArgument, match="a mask is a PNG"):
        stoker.DataLoader(shards=shard, fields=("jpg;png", "txt"),
                          masks=("txt",), transform=EVAL, socket=daemon.socket)
    with pytest.raises(stoker.InvalidArgument, match="apply with fields="):
        stoker.DataLoader(shards=shard, masks=("png",), transform=EVAL,
                          socket=daemon.socket)
    client = stoker.Client(daemon.socket)
    try:
        with pytest.raises(stoker.InvalidArgument, match="mask_fill and mask_tensor_nearest apply"):
            client.create_job({"dataset": {"shards": [shard]},
                               "batch_size": 2, "slots": 2, "mask_fill": 3,
                               "pipeline": [{"resize": {"height": 8,
                                                        "width": 8}}]})
    finally:
        client.close()


def test_random_resize_draws_are_uniform():
    """RandomResize's shorter side: random.randint(min, max), each value
    about equally often (chi-square, 9 degrees of freedom, p ~ 0.001 at
    27.9); the crop's place uniform over what fits."""
    transform = T.Compose([stoker.RandomResize(100, 109),
                           stoker.SegmentationRandomCrop(96)])
    pipeline, output = stoker.translate_transform(transform)
    spec = json.dumps({"pipeline": pipeline, "output": output})
    out = subprocess.run(
        [_tool("AUGMENT_TOOL"), "draws", spec, "300", "200", "3", "0", "0",
         "4000"], check=True, capture_output=True, text=True).stdout
    drawn = [json.loads(line) for line in out.splitlines()]
    sides = np.bincount([d["side"] - 100 for d in drawn], minlength=10)
    expected = len(drawn) / 10
    assert ((sides - expected) ** 2 / expected).sum() < 27.9, sides
    # Of the side-100 draws: rows 0..4 of places, each about as often.
    tops = np.bincount([d["crop"][0] for d in drawn if d["side"] == 100],
                       minlength=5)
    expected = tops.sum() / 5
    assert ((tops - expected) ** 2 / expected).sum() < 18.5, tops


def tensor_resize(mask, size):
    """torch's interpolate(mode="nearest") of a uint8 mask tensor [H, W], as
    transforms.v2 resizes a tv_tensors.Mask (under torch 2.11 a float64
    tensor's nearest indices differ at some sizes)."""
    resized = torch.nn.functional.interpolate(
        mask[None, None].to(torch.uint8), size=list(size), mode="nearest")
    return resized[0, 0].to(torch.int64)


def replay_tensor(transform, img, mask, d):
    """As replay, the mask a tensor resized as transforms.v2 resizes a
    tv_tensors.Mask (torch's nearest), the image still PIL."""
    mask = torch.as_tensor(np.array(mask), dtype=torch.int64)
    for t in transform.transforms:
        kind = type(t).__name__
        if kind == "RandomResizedCrop":
            x, y, w, h = d["box"]
            img = F.resized_crop(img, y, x, h, w, list(t.size), t.interpolation)
            mask = tensor_resize(mask[y:y + h, x:x + w], t.size)
        elif kind == "Resize":
            img = t(img)
            mask = tensor_resize(mask, (img.size[1], img.size[0]))
        elif kind == "CenterCrop":
            img, mask = t(img), F.center_crop(mask[None], t.size)[0]
        elif kind == "RandomHorizontalFlip":
            img, mask = (F.hflip(img), mask.flip(-1)) if d["flip"] else (img, mask)
        else:  # PILToTensor
            img = t(img)
    return img, mask


@pytest.mark.parametrize("transform, epochs", [
    (T.Compose([T.RandomResizedCrop((150, 170), scale=(0.1, 1.0)),
                T.RandomHorizontalFlip(), T.PILToTensor()]), 5),
    (EVAL, 1)])
def test_tensor_masks_follow_torchs_nearest(daemon, segmentation,
                                            monkeypatch, transform, epochs):
    """JobSpec.mask_tensor_nearest (set when the transform is
    transforms.v2's, whose masks are tensors): every mask equal to torch's
    interpolate(mode="nearest") of the mask tensor for stoker's draws."""
    shard, paths = segmentation
    monkeypatch.setattr(stoker.transforms, "uses_v2", lambda t: True)
    got = load(daemon.socket, shard, transform, epochs, seed=8)
    differs = 0
    for epoch in range(epochs):
        images, masks = got[epoch]
        for i, path in enumerate(paths):
            with Image.open(path) as im:
                img = im.convert("RGB")
            mask, _ = mask_of(path, i)
            d = draws(transform, i, img.size, seed=8, epoch=epoch)
            want_image, want_mask = replay_tensor(transform, img, mask, d)
            assert torch.equal(images[i], want_image), (epoch, path, d)
            assert torch.equal(masks[i], want_mask), (epoch, path, d)
            differs += not torch.equal(want_mask, replay(
                transform, img, mask, d)[1])
    assert differs > 0  # torch's nearest is not Pillow's


def test_transforms_v2_with_a_mask(daemon, segmentation):
    """Where torchvision has transforms.v2 (>= 0.16): its ops on a PIL image
    and a tv_tensors.Mask with stoker's draws give stoker's batch."""
    v2 = pytest.importorskip("torchvision.transforms.v2")
    tv_tensors = pytest.importorskip("torchvision.tv_tensors")
    V = pytest.importorskip("torchvision.transforms.v2.functional")
    shard, paths = segmentation
    transform = v2.Compose([v2.RandomResize(120, 421), v2.RandomHorizontalFlip(),
                            stoker.SegmentationRandomCrop(288), v2.PILToTensor()])
    got = load(daemon.socket, shard, transform, 5, seed=4)
    for epoch in range(5):
        images, masks = got[epoch]
        for i, path in enumerate(paths):
            with Image.open(path) as im:
                img = im.convert("RGB")
            mask = tv_tensors.Mask(torch.as_tensor(np.array(mask_of(path, i)[0])))
            d = draws(transform, i, img.size, seed=4, epoch=epoch)
            img, mask = V.resize(img, d["side"]), V.resize(mask, d["side"])
            if d["flip"]:
                img, mask = V.horizontal_flip(img), V.horizontal_flip(mask)
            w, h = img.size
            pad = [0, 0, max(288 - w, 0), max(288 - h, 0)]
            if min(w, h) < 288:
                img, mask = V.pad(img, pad, fill=0), V.pad(mask, pad, fill=FILL)
            top, left, _, _, padded_w, _ = d["crop"]
            if d["flip"]:
                left = padded_w - left - 288
            img = V.pil_to_tensor(V.crop(img, top, left, 288, 288))
            mask = V.crop(mask, top, left, 288, 288)
            assert torch.equal(images[i], img), (epoch, path, d)
            assert torch.equal(masks[i], mask.to(torch.int64)), (epoch, path, d)


def test_a_manifests_mask_column_is_the_same_as_a_shards(daemon, segmentation):
    """fields=("path", "mask"), masks=("mask",) over a manifest (relative
    mask paths, taken from its directory): the same images and masks as the
    shard of the same pairs, for the same seed."""
    shard, _ = segmentation
    for transform in (PRESET, CLASSIC):
        from_shard = load(daemon.socket, shard, transform, 1, seed=6)[0]
        from_manifest = load(daemon.socket, MANIFEST["pairs"], transform, 1,
                             seed=6)[0]
        assert torch.equal(from_shard[0], from_manifest[0])
        assert torch.equal(from_shard[1], from_manifest[1])


def test_a_manifests_missing_mask_file_is_named(daemon, tmp_path):
    image = tmp_path / "a.jpg"
    Image.new("RGB", (32, 24), (1, 2, 3)).save(image)
    (tmp_path / "pairs.csv").write_text("path,mask\na.jpg,nowhere.png\n")
    with pytest.raises(stoker.NotFound, match="'nowhere.png' cannot be read"):
        stoker.DataLoader(manifest=str(tmp_path / "pairs.csv"),
                          fields=("path", "mask"), masks=("mask",),
                          transform=EVAL, socket=daemon.socket)
