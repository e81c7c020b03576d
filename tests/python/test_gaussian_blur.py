"""GaussianBlur in the daemon against torchvision's F.gaussian_blur on the
photographs, byte for byte (stokerd computes the kernel with torch's own
exp and sum, and sums the taps as torch's conv2d does), for fixed sigmas
and for the sigmas stoker draws; and RandomApply([op], p) around the ops
stokerd runs.
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
    return loader_epochs(root, transform, socket, seed=3)[0]


def reference(root, extra=()):
    from torchvision import datasets
    return datasets.ImageFolder(root, T.Compose(EVAL + list(extra)))


@pytest.mark.parametrize("kernel,sigma", [(23, 1.7), ((5, 9), 0.6),
                                          (3, 0.1), (63, 7.0)])
def test_fixed_sigma_blur_is_torchvisions(daemon, scratch, kernel, sigma):
    root = photo_folder(os.path.join(scratch, "photos"))
    blur = T.GaussianBlur(kernel, sigma=(sigma, sigma))
    got = load(root, T.Compose(EVAL + [blur, T.PILToTensor()]), daemon.socket)
    ref = reference(root, [blur, T.PILToTensor()])
    for i in range(len(ref)):
        assert torch.equal(got[i], ref[i][0]), i


def test_drawn_sigmas_give_torchvisions_blur(daemon, scratch):
    """Each image is F.gaussian_blur of torchvision's image with the sigma
    stoker drew for it; the sigmas spread over the range."""
    import stoker
    from test_augment import draws
    root = photo_folder(os.path.join(scratch, "photos"))
    transform = T.Compose(EVAL + [T.GaussianBlur(9, sigma=(0.5, 2.0)),
                                  T.PILToTensor()])
    pipeline, output = stoker.translate_transform(transform)
    ref = reference(root)
    loader = stoker.DataLoader(root, transform=transform, batch_size=8,
                               shuffle=False, seed=3, socket=daemon.socket)
    sigmas = []
    try:
        for epoch in range(5):  # 5 x 44 photographs, each its own sigma
            loader.set_epoch(epoch)
            got = torch.cat([images.clone() for images, _ in loader])
            drawn = [d["blur"] for d in draws(pipeline, output, 3, len(got),
                                              epoch=epoch)]
            for i in range(len(ref)):
                assert 0.5 <= drawn[i] <= 2.0, drawn[i]
                want = F.pil_to_tensor(F.gaussian_blur(
                    ref[i][0], [9, 9], [drawn[i], drawn[i]]))
                assert torch.equal(got[i], want), (epoch, i, drawn[i])
            sigmas += drawn
    finally:
        loader.close()
    assert np.std(sigmas) > 0.2, sigmas


def test_random_apply_around_the_ops(daemon, scratch):
    """RandomApply([op], p): each image is the op's outcome or untouched,
    both occur; the daemon's field is p (times the op's own)."""
    import stoker
    root = photo_folder(os.path.join(scratch, "photos"))
    blur = T.GaussianBlur(7, sigma=(1.5, 1.5))
    transform = T.Compose(EVAL + [
        T.RandomApply([T.RandomHorizontalFlip(1.0)], p=0.5),
        T.RandomApply([blur], p=0.5), T.PILToTensor()])
    pipeline, _ = stoker.translate_transform(transform)
    assert pipeline[2]["random_horizontal_flip"]["p"] == 0.5
    assert pipeline[3]["gaussian_blur"]["p"] == 0.5
    got = load(root, transform, daemon.socket)
    ref = reference(root)
    outcomes = set()
    for i in range(len(ref)):
        image = ref[i][0]
        mine = got[i].to(torch.int16)
        found = None
        for flip in (False, True):
            for blurred in (False, True):
                out = F.hflip(image) if flip else image
                out = blur(out) if blurred else out
                want = F.pil_to_tensor(out).to(torch.int16)
                if torch.equal(mine, want):
                    found = (flip, blurred)
        assert found is not None, i
        outcomes.add(found)
    assert len(outcomes) == 4, outcomes
    rotation, _ = stoker.translate_transform(T.Compose(EVAL + [
        T.RandomApply([T.RandomRotation(30)], p=0.25),
        T.RandomApply([T.RandomGrayscale(0.5)], p=0.5)]))
    assert rotation[2]["random_rotation"]["p"] == 0.25
    assert rotation[3]["random_grayscale"]["p"] == 0.25
    for bad in (T.RandomApply([T.ColorJitter(0.1), T.Grayscale(3)]),
                T.RandomApply([T.TrivialAugmentWide()])):
        with pytest.raises(stoker.UnsupportedTransform,
                           match=r"^[A-Z_]+: RandomApply\(\[\w+(, \w+)?\], "
                           r"p=0\.5\): RandomApply holds one image op"):
            stoker.translate_transform(T.Compose(EVAL + [bad]))


def test_kernels_the_image_cannot_hold_are_refused(daemon, scratch):
    import stoker
    root = photo_folder(os.path.join(scratch, "photos"))
    with pytest.raises(stoker.InvalidArgument,
                       match="gaussian_blur.kernel_x must be below twice"):
        stoker.DataLoader(root, socket=daemon.socket, transform=T.Compose(
            EVAL + [T.GaussianBlur(129), T.PILToTensor()]))
