"""Several views of each image (DataLoader(transform=[t1, t2, ...])): the
self-supervised recipes' multi-crop (DINO's 2 global and 8 local crops,
MoCo v3's two views) on the photographs. Each view, decoded once and
augmented on its own, equals torchvision's ops (and Pillow's, for
stoker.PILGaussianBlur and stoker.Solarization) replayed in the recipe's
own order with the parameters stoker drew for that view; the draws follow
the recipes' distributions.
"""
import json
import math
import os
import subprocess

import pytest
from conftest import _tool, photo_folder

T = pytest.importorskip("torchvision.transforms")
F = pytest.importorskip("torchvision.transforms.functional")
torch = pytest.importorskip("torch")
from PIL import ImageFilter, ImageOps  # noqa: E402
from torchvision.transforms import InterpolationMode as IM  # noqa: E402

import stoker  # noqa: E402

NORMALIZE = T.Compose([T.ToTensor(),
                       T.Normalize((0.485, 0.456, 0.406), (0.229, 0.224, 0.225))])
JITTER = T.RandomApply([T.ColorJitter(0.4, 0.4, 0.2, 0.1)], p=0.8)


def dino_views():
    """DINO's DataAugmentationDINO (main_dino.py): 2 global crops of 224
    and 8 local crops of 96, in its op order (flip before the blur)."""
    flip_and_color_jitter = [T.RandomHorizontalFlip(p=0.5), JITTER,
                             T.RandomGrayscale(p=0.2)]
    g1 = T.Compose([T.RandomResizedCrop(224, scale=(0.4, 1.0),
                                        interpolation=IM.BICUBIC),
                    *flip_and_color_jitter, stoker.PILGaussianBlur(1.0),
                    NORMALIZE])
    g2 = T.Compose([T.RandomResizedCrop(224, scale=(0.4, 1.0),
                                        interpolation=IM.BICUBIC),
                    *flip_and_color_jitter, stoker.PILGaussianBlur(0.1),
                    stoker.Solarization(0.2), NORMALIZE])
    local = T.Compose([T.RandomResizedCrop(96, scale=(0.05, 0.4),
                                           interpolation=IM.BICUBIC),
                       *flip_and_color_jitter, stoker.PILGaussianBlur(p=0.5),
                       NORMALIZE])
    return [g1, g2] + [local] * 8


def moco_views():
    """MoCo v3's augmentation1 and augmentation2 (main_moco.py): the flip
    last, after the blur and solarize."""
    a1 = T.Compose([T.RandomResizedCrop(224, scale=(0.08, 1.0)), JITTER,
                    T.RandomGrayscale(p=0.2),
                    T.RandomApply([stoker.PILGaussianBlur(1.0)], p=1.0),
                    T.RandomHorizontalFlip(), NORMALIZE])
    a2 = T.Compose([T.RandomResizedCrop(224, scale=(0.08, 1.0)), JITTER,
                    T.RandomGrayscale(p=0.2),
                    T.RandomApply([stoker.PILGaussianBlur(1.0)], p=0.1),
                    T.RandomApply([stoker.Solarization(1.0)], p=0.2),
                    T.RandomHorizontalFlip(), NORMALIZE])
    return [a1, a2]


def view_draws(transform, index, size, view, seed, epoch=0, count=1):
    """What sample `index` (of an image of `size`) draws for `view`."""
    pipeline, output = stoker.translate_transform(transform)
    spec = json.dumps({"pipeline": pipeline, "output": output})
    out = subprocess.run(
        [_tool("AUGMENT_TOOL"), "draws", spec, str(size[0]), str(size[1]),
         str(seed), str(epoch), str(index), str(count), str(view)],
        check=True, capture_output=True, text=True).stdout
    return [json.loads(line) for line in out.splitlines()]


def factor_of(shift):
    """A hue factor whose np.uint8(h * 255) is `shift`."""
    h = (shift + 0.5) / 255 if shift < 128 else -(256 - shift + 0.5) / 255
    return max(-0.5, h)


def _jitter(img, d):
    j = d["jitter"]
    if not j["applies"]:
        return img
    for op in j["order"]:
        if op == 3:
            if j["hue"] >= 0:
                img = F.adjust_hue(img, factor_of(j["hue"]))
        else:
            adjust = (F.adjust_brightness, F.adjust_contrast,
                      F.adjust_saturation)[op]
            img = adjust(img, j["factors"][op])
    return img


def replay(transform, img, d):
    """`transform`'s ops in their own order, each with what stoker drew."""
    for t in transform.transforms:
        kind = type(t).__name__
        inner = t.transforms[0] if kind == "RandomApply" else t
        kind = type(inner).__name__
        if kind == "RandomResizedCrop":
            x, y, w, h = d["box"]
            img = F.resized_crop(img, y, x, h, w, list(inner.size),
                                 inner.interpolation)
        elif kind == "RandomHorizontalFlip":
            img = F.hflip(img) if d["flip"] else img
        elif kind == "ColorJitter":
            img = _jitter(img, d)
        elif kind == "RandomGrayscale":
            img = F.rgb_to_grayscale(img, 3) if d["gray"] else img
        elif kind == "PILGaussianBlur":
            if d["blur"]:
                img = img.filter(ImageFilter.GaussianBlur(radius=d["blur"]))
        elif kind in ("Solarization", "RandomSolarize"):
            if d["solarize"]:
                img = ImageOps.solarize(img, inner.threshold)
        else:  # ToTensor and Normalize
            img = inner(img)
    return img


def loaded_views(root, views, socket, seed, epochs):
    """Per epoch, per view, every sample's view in index order."""
    loader = stoker.DataLoader(root, transform=views, batch_size=8,
                               shuffle=False, seed=seed, socket=socket)
    try:
        out = []
        for epoch in range(epochs):
            loader.set_epoch(epoch)
            batches = [[v.clone() for v in vs] for vs, _ in loader]
            out.append([torch.cat([b[v] for b in batches])
                        for v in range(len(views))])
        return out
    finally:
        loader.close()


@pytest.mark.parametrize("recipe, epochs", [("dino", 1), ("moco", 3)])
def test_views_are_torchvisions_for_the_drawn_parameters(daemon, scratch,
                                                         recipe, epochs):
    """DINO: 43 photographs x 10 views; MoCo v3: x 2 views x 3 epochs; each
    view equal, value for value, to the recipe's ops replayed on the PIL
    image with stoker's draws for it."""
    from torchvision import datasets
    root = photo_folder(os.path.join(scratch, "photos"))
    views = dino_views() if recipe == "dino" else moco_views()
    got = loaded_views(root, views, daemon.socket, seed=11, epochs=epochs)
    folder = datasets.ImageFolder(root)
    checked, blurred, solarized = 0, 0, 0
    for epoch in range(epochs):
        for i, (path, _) in enumerate(folder.samples):
            img = folder.loader(path)
            for v, view in enumerate(views):
                d = view_draws(view, i, img.size, v, seed=11, epoch=epoch)[0]
                want = replay(view, img, d)
                assert torch.equal(got[epoch][v][i], want), (
                    recipe, epoch, path, v, d)
                checked += 1
                blurred += d["blur"] > 0
                solarized += d["solarize"]
    assert checked >= 200
    assert blurred > 0 and solarized > 0, (blurred, solarized)


def test_views_differ_and_repeat(daemon, scratch):
    """Each view draws its own parameters; the same seed gives the same
    views again (a second loader), another seed others."""
    root = photo_folder(os.path.join(scratch, "photos"))
    views = [T.Compose([T.RandomResizedCrop(64), T.PILToTensor()])] * 3
    a = loaded_views(root, views, daemon.socket, seed=5, epochs=1)[0]
    b = loaded_views(root, views, daemon.socket, seed=5, epochs=1)[0]
    c = loaded_views(root, views, daemon.socket, seed=6, epochs=1)[0]
    for v in range(3):
        assert torch.equal(a[v], b[v])
        assert not torch.equal(a[v], c[v])
    assert not torch.equal(a[0], a[1]) and not torch.equal(a[1], a[2])


def test_views_of_several_sizes_and_dtypes(daemon, scratch):
    """Views may differ in size and dtype; len and labels are the
    dataset's."""
    root = photo_folder(os.path.join(scratch, "photos"))
    views = [T.Compose([T.Resize(80), T.CenterCrop(64), T.PILToTensor()]),
             T.Compose([T.RandomResizedCrop(32), T.ToTensor()])]
    loader = stoker.DataLoader(root, transform=views, batch_size=16,
                               socket=daemon.socket)
    try:
        batches = list(loader)
    finally:
        loader.close()
    assert len(batches) == len(loader) == 3
    (first, second), labels = batches[0]
    assert first.shape == (16, 3, 64, 64) and first.dtype == torch.uint8
    assert second.shape == (16, 3, 32, 32) and second.dtype == torch.float32
    assert labels.shape == (16,) and labels.dtype == torch.int64


def test_pillow_blur_and_solarize_alone_are_pillows(daemon, scratch):
    """One view: the stand-ins and torchvision's RandomSolarize on the
    evaluation crop equal Pillow's filter and ImageOps.solarize."""
    from torchvision import datasets
    root = photo_folder(os.path.join(scratch, "photos"))
    transform = T.Compose([T.Resize(160), T.CenterCrop(144),
                           stoker.PILGaussianBlur(0.7, 0.5, 9.0),
                           T.RandomSolarize(190.5, p=0.5), T.PILToTensor()])
    folder = datasets.ImageFolder(root, T.Compose([T.Resize(160),
                                                   T.CenterCrop(144)]))
    loader = stoker.DataLoader(root, transform=transform, batch_size=8,
                               seed=2, socket=daemon.socket)
    try:
        for epoch in range(5):
            loader.set_epoch(epoch)
            got = torch.cat([images.clone() for images, _ in loader])
            d = view_draws(transform, 0, (144, 144), 0, seed=2, epoch=epoch,
                           count=len(folder))
            for i in range(len(folder)):
                img = folder[i][0]
                if d[i]["blur"]:
                    img = img.filter(ImageFilter.GaussianBlur(d[i]["blur"]))
                if d[i]["solarize"]:
                    img = F.solarize(img, 190.5)
                assert torch.equal(got[i], F.pil_to_tensor(img)), (epoch, i)
    finally:
        loader.close()


def _ks_uniform(values, lo, hi):
    """Kolmogorov-Smirnov distance of `values` from U(lo, hi)."""
    values = sorted(values)
    n = len(values)
    return max(max((k + 1) / n - (v - lo) / (hi - lo),
                   (v - lo) / (hi - lo) - k / n)
               for k, v in enumerate(values))


def _binomial_ok(hits, n, p):
    """hits of n within 4.5 standard deviations of n * p."""
    return abs(hits - n * p) <= 4.5 * math.sqrt(n * p * (1 - p))


def test_draws_follow_the_recipes_distributions():
    """On 4000 samples: the blur's radius uniform in its range (KS), and
    how often the blur, solarize, grayscale, jitter and flip apply."""
    n = 4000
    dino = dino_views()
    local = view_draws(dino[2], 0, (640, 480), 2, seed=9, count=n)
    radii = [d["blur"] for d in local if d["blur"]]
    assert _binomial_ok(len(radii), n, 0.5), len(radii)
    # KS at the 0.001 level: 1.95 / sqrt(n).
    assert _ks_uniform(radii, 0.1, 2.0) < 1.95 / math.sqrt(len(radii))
    global2 = view_draws(dino[1], 0, (640, 480), 1, seed=9, count=n)
    assert _binomial_ok(sum(d["solarize"] for d in global2), n, 0.2)
    assert _binomial_ok(sum(bool(d["blur"]) for d in global2), n, 0.1)
    assert _binomial_ok(sum(d["gray"] for d in global2), n, 0.2)
    assert _binomial_ok(sum(d["jitter"]["applies"] for d in global2), n, 0.8)
    assert _binomial_ok(sum(d["flip"] for d in global2), n, 0.5)
    moco = moco_views()[1]
    drawn = view_draws(moco, 0, (640, 480), 1, seed=9, count=n)
    assert _binomial_ok(sum(d["solarize"] for d in drawn), n, 0.2)
    # Views of one sample draw apart: the two global crops' boxes differ.
    g1 = view_draws(dino[0], 0, (640, 480), 0, seed=9, count=200)
    g2 = view_draws(dino[1], 0, (640, 480), 1, seed=9, count=200)
    assert sum(a["box"] == b["box"] for a, b in zip(g1, g2)) == 0


@pytest.mark.parametrize("transform, message", [
    ([T.Compose([T.RandomResizedCrop(64), T.GaussianBlur(5),
                 T.RandomHorizontalFlip(), T.PILToTensor()])],
     "impossible order"),
    ([T.Compose([T.RandomResizedCrop(64), T.RandomRotation(10),
                 T.RandomHorizontalFlip(), T.PILToTensor()])],
     "impossible order"),
    ([[T.RandomResizedCrop(64), T.PILToTensor()]], "a view is one transform"),
    ([T.Compose([T.RandomResizedCrop(64), T.RandomSolarize(300.0),
                 T.PILToTensor()])], "threshold"),
])
def test_refused_by_name(daemon, scratch, transform, message):
    root = photo_folder(os.path.join(scratch, "photos"))
    with pytest.raises(stoker.UnsupportedTransform, match=message):
        stoker.DataLoader(root, transform=transform, batch_size=4,
                          socket=daemon.socket)


def test_views_refuse_batch_transform(daemon, scratch):
    root = photo_folder(os.path.join(scratch, "photos"))
    views = [T.Compose([T.RandomResizedCrop(32), T.ToTensor()])] * 2
    with pytest.raises(stoker.InvalidArgument, match="list of them"):
        stoker.DataLoader(root, transform=views, batch_size=4,
                          socket=daemon.socket,
                          batch_transform=stoker.MixUp(0.2, num_classes=6))


def test_the_daemon_refuses_bad_views(daemon, scratch):
    """The wire form: views beside a pipeline, too many, a view without a
    crop: INVALID_ARGUMENT naming the view."""
    root = photo_folder(os.path.join(scratch, "photos"))
    client = stoker.Client(daemon.socket)
    view = {"pipeline": [{"random_resized_crop": {"height": 32,
                                                  "width": 32}}]}
    base = {"dataset": {"path": root}, "batch_size": 4, "slots": 2}
    try:
        for extra, message in (
                ({"views": [view], "pipeline": view["pipeline"]},
                 "leave those empty"),
                ({"views": [view] * 33}, "at most 32"),
                ({"views": [view, {"output": {"height": 8, "width": 8}}]},
                 r"views\[1\] has no pipeline"),
                ({"views": [view, {"pipeline": [{"center_crop": {
                    "height": 8, "width": 8}}]}]}, r"views\[1\]: pipeline")):
            with pytest.raises(stoker.InvalidArgument, match=message):
                client.create_job({**base, **extra})
    finally:
        client.close()


@pytest.mark.parametrize("view", [
    T.Compose([T.Resize(72), T.CenterCrop(64), T.PILToTensor()]),
    T.Compose([T.RandomCrop(96, padding=(5, 9), pad_if_needed=True,
                            padding_mode="reflect"), T.PILToTensor()]),
    T.Compose([T.RandomResizedCrop(48, interpolation=IM.BICUBIC),
               T.RandomHorizontalFlip(), T.ToTensor()]),
])
def test_view_zero_is_the_single_transforms_image(daemon, scratch, view):
    """Rendered from the whole decoded image, a job's first view equals
    what the same transform alone gives (decoded for that crop only)."""
    root = photo_folder(os.path.join(scratch, "photos"))
    views = loaded_views(root, [view, view], daemon.socket, seed=4, epochs=1)
    loader = stoker.DataLoader(root, transform=view, batch_size=8, seed=4,
                               socket=daemon.socket)
    try:
        single = torch.cat([images.clone() for images, _ in loader])
    finally:
        loader.close()
    assert torch.equal(views[0][0], single)
    assert not torch.equal(views[0][1], single) or "Center" in repr(view)


def test_a_centre_crop_larger_than_its_resize_is_refused_in_a_view(
        daemon, scratch):
    """As for a single transform, naming the view."""
    root = photo_folder(os.path.join(scratch, "photos"))
    small = T.Compose([T.RandomResizedCrop(8), T.PILToTensor()])
    padded = T.Compose([T.Resize(48), T.CenterCrop(64), T.PILToTensor()])
    with pytest.raises(stoker.InvalidArgument,
                       match=r"views\[1\]: pipeline\[1\].center_crop"):
        loaded_views(root, [small, padded], daemon.socket, seed=1, epochs=1)


def test_pillow_blur_wider_than_the_image_is_pillows(daemon, scratch):
    """Radii far past a 5x5 image (Pillow's edge branches)."""
    from torchvision import datasets
    root = photo_folder(os.path.join(scratch, "photos"))
    transform = T.Compose([T.Resize(8), T.CenterCrop(5),
                           stoker.PILGaussianBlur(1.0, 3.0, 60.0),
                           T.PILToTensor()])
    folder = datasets.ImageFolder(root, T.Compose([T.Resize(8),
                                                   T.CenterCrop(5)]))
    got = loaded_views(root, [transform], daemon.socket, seed=3,
                       epochs=1)[0][0]
    d = view_draws(transform, 0, (5, 5), 0, seed=3, count=len(folder))
    for i in range(len(folder)):
        want = folder[i][0].filter(ImageFilter.GaussianBlur(d[i]["blur"]))
        assert torch.equal(got[i], F.pil_to_tensor(want)), (i, d[i]["blur"])


def test_views_with_named_fields(daemon, scratch):
    """Image-text shards with two views: ([v1, v2], captions), each
    caption its sample's; a field named as a view's tensor is refused."""
    import io
    import tarfile
    from conftest import photo_paths
    shard = os.path.join(scratch, "pairs.tar")
    with tarfile.open(shard, "w") as tar:
        for i, path in enumerate(p for p in photo_paths()
                                 if p.endswith(".jpg")):
            for suffix, data in ((".jpg", open(path, "rb").read()),
                                 (".txt", f"caption {i}".encode())):
                info = tarfile.TarInfo(f"{i:05d}{suffix}")
                info.size = len(data)
                tar.addfile(info, io.BytesIO(data))
    views = [T.Compose([T.RandomResizedCrop(32), T.PILToTensor()]),
             T.Compose([T.RandomResizedCrop(16), T.ToTensor()])]
    loader = stoker.DataLoader(shards=shard, fields=("jpg", "txt"),
                               transform=views, batch_size=4,
                               socket=daemon.socket)
    try:
        (first, second), captions = next(iter(loader))
    finally:
        loader.close()
    assert first.shape == (4, 3, 32, 32) and second.shape == (4, 3, 16, 16)
    assert captions == [f"caption {i}" for i in range(4)]
    client = stoker.Client(daemon.socket)
    view = {"pipeline": [{"random_resized_crop": {"height": 8, "width": 8}}]}
    try:
        with pytest.raises(stoker.InvalidArgument,
                           match="'image.1' is the name of view 1"):
            client.create_job({
                "dataset": {"shards": [shard]}, "batch_size": 2, "slots": 2,
                "fields": [{"name": "image", "source": ["jpg"]},
                           {"name": "image.1", "source": ["txt"]}],
                "views": [view, view]})
    finally:
        client.close()


class GaussianBlur:  # as DINO's utils.GaussianBlur and MoCo's are named
    def __init__(self, p=0.5):
        self.p = p


class Solarization:  # as DINO's utils.Solarization
    def __init__(self, p=0.2):
        self.p = p


@pytest.mark.parametrize("transform, message", [
    (T.Compose([T.RandomResizedCrop(64), GaussianBlur(), T.PILToTensor()]),
     "use stoker.PILGaussianBlur"),
    (T.Compose([T.RandomResizedCrop(64), T.RandomApply([GaussianBlur()]),
                T.PILToTensor()]), "use stoker.PILGaussianBlur"),
    (T.Compose([T.RandomResizedCrop(64), Solarization(), T.PILToTensor()]),
     "use stoker.Solarization"),
    (T.Compose([T.ColorJitter(0.4), T.RandomResizedCrop(64),
                T.PILToTensor()]), "the crop or resize comes first"),
    (T.Compose([T.RandomResizedCrop(64),
                T.RandomChoice([stoker.PILGaussianBlur(), T.GaussianBlur(5)]),
                T.RandomHorizontalFlip(), T.PILToTensor()]),
     "impossible order"),
])
def test_the_recipes_own_classes_and_orders_are_refused(transform, message):
    with pytest.raises(stoker.UnsupportedTransform, match=message):
        stoker.translate_transform(transform)


class DinoV2Blur(T.RandomApply):  # as DINOv2's data.transforms.GaussianBlur
    def __init__(self, *, p=0.5, radius_min=0.1, radius_max=2.0):
        super().__init__([T.GaussianBlur(9, sigma=(radius_min, radius_max))],
                         p=p)


DinoV2Blur.__name__ = "GaussianBlur"


def test_a_subclass_of_random_apply_keeps_its_probability():
    """DINOv2's GaussianBlur is a RandomApply of torchvision's: it
    translates as one (its p kept), not as DINO's Pillow blur."""
    crop = T.RandomResizedCrop(64)
    theirs = stoker.translate_transform(T.Compose([crop, DinoV2Blur(p=0.1)]))
    ours = stoker.translate_transform(T.Compose([crop, T.RandomApply(
        [T.GaussianBlur(9, sigma=(0.1, 2.0))], p=0.1)]))
    assert theirs == ours
    assert theirs[0][1]["gaussian_blur"]["p"] == pytest.approx(0.1)
