"""RandomChoice([...], p) of image ops in the daemon: each image is the
outcome of one of the options as torchvision computes it, every option
occurs, about as often as its weight says; what the daemon cannot run is
refused by name.
"""
import os

import numpy as np
import pytest
from conftest import loader_epochs, photo_folder

T = pytest.importorskip("torchvision.transforms")
F = pytest.importorskip("torchvision.transforms.functional")
torch = pytest.importorskip("torch")

EVAL = [T.Resize(72), T.CenterCrop(64)]
ANGLES = (0, 90, 180, 270)


def load(root, transform, socket, epochs):
    return loader_epochs(root, transform, socket, seed=8, epochs=epochs)


def test_right_angle_rotations_follow_their_weights(daemon, scratch):
    """The usual 'random right-angle rotation' of aerial and medical
    images, weighted."""
    from torchvision import datasets
    root = photo_folder(os.path.join(scratch, "photos"))
    weights = [0.4, 0.2, 0.2, 0.2]
    choice = T.RandomChoice([T.RandomRotation((a, a)) for a in ANGLES],
                            p=weights)
    transform = T.Compose(EVAL + [T.RandomHorizontalFlip(0.0), choice,
                                  T.PILToTensor()])
    batches = load(root, transform, daemon.socket, epochs=6)
    ref = datasets.ImageFolder(root, T.Compose(EVAL))
    counts = np.zeros(4)
    for got in batches:
        for i in range(len(ref)):
            image = ref[i][0]
            mine = got[i].permute(1, 2, 0).numpy()
            found = [k for k, a in enumerate(ANGLES) if np.array_equal(
                mine, np.asarray(F.rotate(image, a)))]
            assert found, f"image {i}: no option's outcome"
            counts[found[0]] += 1
    # Chi-square against the weights, 3 degrees of freedom (p ~ 0.001).
    expected = counts.sum() * np.array(weights)
    assert ((counts - expected) ** 2 / expected).sum() < 16.27, counts


def test_translation_and_refusals():
    import stoker
    pipeline, _ = stoker.translate_transform(T.Compose(EVAL + [
        T.RandomChoice([T.GaussianBlur(3), T.GaussianBlur(9)], p=[1, 3]),
        T.RandomChoice([T.TrivialAugmentWide(), T.AugMix()])]))
    names = [next(iter(op)) for op in pipeline]
    assert names == ["resize", "center_crop", "random_choice",
                     "random_choice"]
    assert list(pipeline[2]["random_choice"]["options"][1]) == ["gaussian_blur"]
    assert pipeline[2]["random_choice"]["p"] == [1.0, 3.0]
    assert [next(iter(o)) for o in pipeline[3]["random_choice"]["options"]] \
        == ["trivial_augment_wide", "aug_mix"]
    for bad in (T.RandomChoice([T.ColorJitter(0.1), T.GaussianBlur(3)]),
                T.RandomChoice([T.GaussianBlur(3)]),
                T.RandomChoice([T.RandomHorizontalFlip(),
                                T.RandomVerticalFlip()]),
                T.RandomChoice([T.Resize(32), T.Resize(48)])):
        with pytest.raises(stoker.UnsupportedTransform, match="RandomChoice"):
            stoker.translate_transform(T.Compose(EVAL + [bad]))


def test_daemon_names_a_bad_choice(daemon, scratch):
    import stoker
    root = photo_folder(os.path.join(scratch, "photos"))
    ops = [{"resize": {"height": 32, "width": 32}},
           {"random_choice": {"options": [
               {"random_horizontal_flip": {"p": 1.0}},
               {"random_vertical_flip": {"p": 1.0}}]}}]
    with pytest.raises(stoker.InvalidArgument,
                       match=r"pipeline\[1\]\.random_choice\.options\[1\]"):
        stoker.DataLoader(root, transform=ops, socket=daemon.socket)
