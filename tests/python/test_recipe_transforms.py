"""The transforms of torchvision's classification reference on stoker: the
recipe's preset objects, weights.transforms() (ImageClassification), the
ResNet50 V2 train transform end to end, and transforms.v2 where installed.
"""
import os

import pytest
from conftest import photo_folder

T = pytest.importorskip("torchvision.transforms")
torch = pytest.importorskip("torch")

MEAN, STD = (0.485, 0.456, 0.406), (0.229, 0.224, 0.225)


class PresetTrain:
    """As references/classification/presets.py ClassificationPresetTrain
    builds it for the ResNet50 V2 recipe."""

    def __init__(self, crop_size=176, random_erase_prob=0.1):
        self.transforms = T.Compose([
            T.RandomResizedCrop(crop_size), T.RandomHorizontalFlip(0.5),
            T.TrivialAugmentWide(), T.PILToTensor(),
            T.ConvertImageDtype(torch.float), T.Normalize(MEAN, STD),
            T.RandomErasing(p=random_erase_prob)])

    def __call__(self, img):
        return self.transforms(img)


class PresetEval:
    def __init__(self, crop_size=224, resize_size=232):
        self.transforms = T.Compose([
            T.Resize(resize_size), T.CenterCrop(crop_size), T.PILToTensor(),
            T.ConvertImageDtype(torch.float), T.Normalize(MEAN, STD)])

    def __call__(self, img):
        return self.transforms(img)


def test_preset_objects_unwrap_to_their_steps():
    import stoker
    pipeline, output = stoker.translate_transform(PresetTrain())
    assert [next(iter(op)) for op in pipeline] == [
        "random_resized_crop", "random_horizontal_flip",
        "trivial_augment_wide", "normalize", "random_erasing"]
    assert output == {"dtype": "DTYPE_FLOAT32", "layout": "LAYOUT_NCHW"}
    assert pipeline[-1]["random_erasing"]["p"] == pytest.approx(0.1)


def test_weights_transforms_translate_and_equal_torchvisions(daemon, scratch):
    import stoker
    from torchvision import datasets, models
    preset = models.ResNet50_Weights.IMAGENET1K_V2.transforms()
    pipeline, output = stoker.translate_transform(preset)
    assert pipeline[0]["resize"]["shorter_side"] == 232
    assert pipeline[1]["center_crop"] == {"height": 224, "width": 224}
    root = photo_folder(os.path.join(scratch, "photos"))
    loader = stoker.DataLoader(root, transform=preset, batch_size=8,
                               socket=daemon.socket)
    try:
        got = torch.cat([images.clone() for images, _ in loader])
    finally:
        loader.close()
    reference = datasets.ImageFolder(root, preset)
    assert len(got) == len(reference)
    for i in range(len(reference)):
        assert torch.allclose(got[i], reference[i][0], atol=1e-6, rtol=0), i
    # The eval preset of the recipe gives the same tensors.
    pipeline_eval, _ = stoker.translate_transform(PresetEval())
    assert pipeline_eval == pipeline


def test_recipe_train_transform_runs_end_to_end(daemon, scratch):
    import stoker
    root = photo_folder(os.path.join(scratch, "photos"))
    loader = stoker.DataLoader(root, transform=PresetTrain(), batch_size=8,
                               shuffle=True, seed=4, socket=daemon.socket)
    try:
        batches = [(images.clone(), labels.clone()) for images, labels in loader]
    finally:
        loader.close()
    images = torch.cat([b[0] for b in batches])
    assert images.shape[1:] == (3, 176, 176) and images.dtype == torch.float32
    assert torch.isfinite(images).all()
    # Normalised: roughly centred, as the recipe's tensors are.
    assert abs(float(images.mean())) < 1.0


def test_unsupported_recipe_options_are_refused_by_name():
    import stoker
    for transform, name in ((T.RandomChoice([T.RandomRotation(10),
                                             T.ColorJitter(0.1)]),
                             "RandomChoice"),
                            (T.RandomRotation(10, expand=True), "expand"),
                            (T.Lambda(lambda x: x), "Lambda")):
        with pytest.raises(stoker.UnsupportedTransform, match=name):
            stoker.translate_transform(T.Compose([T.RandomResizedCrop(8),
                                                  transform]))
    # Bicubic warps are Pillow's for the PIL ops; AugMix warps a tensor.
    with pytest.raises(stoker.UnsupportedTransform, match="BICUBIC"):
        stoker.translate_transform(T.Compose([
            T.RandomResizedCrop(8),
            T.AugMix(interpolation=T.InterpolationMode.BICUBIC)]))
    with pytest.raises(stoker.UnsupportedTransform, match="float tensor"):
        stoker.translate_transform(T.Compose([
            T.RandomResizedCrop(8), T.PILToTensor(), T.RandomErasing()]))


def test_transforms_v2_translate_like_v1():
    v2 = pytest.importorskip("torchvision.transforms.v2")
    import stoker
    new = v2.Compose([v2.RandomResizedCrop(176), v2.RandomHorizontalFlip(),
                      v2.TrivialAugmentWide(), v2.ToImage(),
                      v2.ToDtype(torch.float32, scale=True),
                      v2.Normalize(MEAN, STD), v2.RandomErasing(0.1)])
    old = PresetTrain()
    new_pipeline, new_output = stoker.translate_transform(new)
    old_pipeline, old_output = stoker.translate_transform(old)
    assert new_pipeline == old_pipeline
    # v2's ToDtype multiplies by 1/255 where v1 divides by 255.
    assert new_output == dict(old_output, float_scale="FLOAT_SCALE_RECIPROCAL")


class ToDtype:
    """transforms.v2.ToDtype's attributes, where torchvision has no v2 (the
    translation reads them by name): it computes image.to(dtype) * (1/255)."""

    def __init__(self, dtype, scale):
        self.dtype, self.scale = dtype, scale


def test_v2_to_dtype_output_is_v2s_bytes(daemon, scratch):
    """v2's ToDtype(float32, scale=True) then Normalize, byte for byte: the
    reference is v2 itself where installed, else its arithmetic written
    out; and it differs from v1's ConvertImageDtype somewhere."""
    from torchvision import datasets
    root = photo_folder(os.path.join(scratch, "photos"))
    try:
        from torchvision.transforms import v2
        to_image, to_dtype = v2.ToImage(), v2.ToDtype(torch.float32, scale=True)
        reference = v2.Compose([v2.Resize(64), v2.CenterCrop(56), to_image,
                                to_dtype, v2.Normalize(MEAN, STD)])
    except ImportError:
        to_image, to_dtype = T.PILToTensor(), ToDtype(torch.float32, True)
        reference = T.Compose([
            T.Resize(64), T.CenterCrop(56), T.PILToTensor(),
            T.Lambda(lambda x: x.to(torch.float32).mul_(1.0 / 255)),
            T.Normalize(MEAN, STD)])
    ours = T.Compose([T.Resize(64), T.CenterCrop(56), to_image, to_dtype,
                      T.Normalize(MEAN, STD)])
    images, _, _ = _epoch(root, ours, daemon.socket)
    want = torch.stack([torch.as_tensor(reference(image)) for image, _ in
                        datasets.ImageFolder(root)])
    assert torch.equal(images, want)
    v1 = T.Compose([T.Resize(64), T.CenterCrop(56), T.PILToTensor(),
                    T.ConvertImageDtype(torch.float32), T.Normalize(MEAN, STD)])
    v1_images, _, _ = _epoch(root, v1, daemon.socket)
    assert not torch.equal(v1_images, images), "the two scalings coincide"


def _epoch(root, transform, socket, **kwargs):
    import stoker
    loader = stoker.DataLoader(root, transform=transform, batch_size=8,
                               socket=socket, **kwargs)
    try:
        batches = [(i.clone(), l.clone()) for i, l in loader]
        return (torch.cat([b[0] for b in batches]),
                torch.cat([b[1] for b in batches]), len(loader))
    finally:
        loader.close()


def test_repeated_augmentation_gives_k_copies_each_augmented_apart(
        daemon, scratch):
    from torchvision import datasets
    root = photo_folder(os.path.join(scratch, "photos"))
    plain = T.Compose([T.Resize(72), T.CenterCrop(64), T.PILToTensor()])
    images, labels, batches = _epoch(root, plain, daemon.socket,
                                     repeated_augmentations=4)
    _, _, batches_without = _epoch(root, plain, daemon.socket)
    reference = datasets.ImageFolder(root, plain)
    n = len(reference)
    assert len(images) == n and batches == batches_without  # same length
    for position in range(n):  # unshuffled: 0 0 0 0 1 1 1 1 ...
        image, label = reference[position // 4]
        assert torch.equal(images[position], image), position
        assert int(labels[position]) == label
    # Random ops: each copy draws its own.
    train = T.Compose([T.RandomResizedCrop(64), T.RandomHorizontalFlip(),
                       T.PILToTensor()])
    images, _, _ = _epoch(root, train, daemon.socket, shuffle=True, seed=3,
                          repeated_augmentations=4)
    groups = [images[i:i + 4] for i in range(0, n - 3, 4)]
    distinct = sum(len({g[c].numpy().tobytes() for c in range(4)}) == 4
                   for g in groups)
    assert distinct >= len(groups) - 1, (distinct, len(groups))
