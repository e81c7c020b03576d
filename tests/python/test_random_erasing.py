"""RandomErasing in the daemon against torchvision: each image is
torchvision's normalised eval tensor with the box stoker drew set to the
value (normalised when the erasing comes before Normalize), or to standard
normal noise; the boxes follow torchvision's get_params distribution.
"""
import json
import math
import os
import subprocess

import numpy as np
import pytest
from conftest import _tool, photo_folder

T = pytest.importorskip("torchvision.transforms")
torch = pytest.importorskip("torch")

MEAN, STD = [0.485, 0.456, 0.406], [0.229, 0.224, 0.225]
EVAL = [T.Resize(256), T.CenterCrop(224)]


def boxes(pipeline, output, seed, count):
    spec = {"pipeline": pipeline, "output": output}
    out = subprocess.run(
        [_tool("AUGMENT_TOOL"), "draws", json.dumps(spec), "640", "480",
         str(seed), "0", "0", str(count)],
        check=True, capture_output=True, text=True).stdout
    return [json.loads(line)["erase"] for line in out.splitlines()]


def run(root, transform, socket, seed=7):
    import stoker
    loader = stoker.DataLoader(root, transform=transform, batch_size=8,
                               shuffle=False, seed=seed, socket=socket)
    try:
        got = torch.cat([images.clone() for images, _ in loader])
    finally:
        loader.close()
    pipeline, output = stoker.translate_transform(transform)
    return got, boxes(pipeline, output, seed, len(got))


def reference(root):
    from torchvision import datasets
    return datasets.ImageFolder(root, T.Compose(
        EVAL + [T.ToTensor(), T.Normalize(MEAN, STD)]))


@pytest.mark.parametrize("where", ["after", "before"])
def test_erased_boxes_hold_the_value_and_the_rest_is_torchvisions(
        daemon, scratch, where):
    root = photo_folder(os.path.join(scratch, "photos"))
    erase = T.RandomErasing(p=0.7, value=(0.2, 0.5, 0.9))
    steps = [T.ToTensor(), T.Normalize(MEAN, STD), erase] if where == "after" \
        else [T.ToTensor(), erase, T.Normalize(MEAN, STD)]
    got, drawn = run(root, T.Compose(EVAL + steps), daemon.socket)
    value = torch.tensor([0.2, 0.5, 0.9])
    if where == "before":
        value = (value - torch.tensor(MEAN)) / torch.tensor(STD)
    ref = reference(root)
    erased = 0
    for i in range(len(ref)):
        want = ref[i][0].clone()
        if drawn[i] is not None:
            x, y, w, h = drawn[i]
            want[:, y:y + h, x:x + w] = value[:, None, None]
            erased += 1
        assert torch.equal(got[i], want), (i, drawn[i])
    assert 0 < erased < len(ref)


def test_random_value_is_standard_normal_noise(daemon, scratch):
    root = photo_folder(os.path.join(scratch, "photos"))
    transform = T.Compose(EVAL + [T.ToTensor(), T.Normalize(MEAN, STD),
                                  T.RandomErasing(p=1.0, value="random")])
    got, drawn = run(root, transform, daemon.socket)
    ref = reference(root)
    noise = []
    for i in range(len(ref)):
        want = ref[i][0]
        x, y, w, h = drawn[i]
        box = got[i][:, y:y + h, x:x + w]
        noise.append(box.reshape(-1).numpy())
        outside = torch.ones_like(want, dtype=torch.bool)
        outside[:, y:y + h, x:x + w] = False
        assert torch.equal(got[i][outside], want[outside]), i
    values = np.sort(np.concatenate(noise))
    cdf = 0.5 * (1 + np.vectorize(math.erf)(values / math.sqrt(2)))
    n = len(values)
    ks = np.max(np.maximum(np.arange(1, n + 1) / n - cdf,
                           cdf - np.arange(n) / n))
    assert ks < 1.63 / math.sqrt(n), (ks, n)  # p = 0.01


def test_boxes_follow_torchvisions_distribution():
    import stoker
    erase = T.RandomErasing(p=0.5, scale=(0.02, 0.33), ratio=(0.3, 3.3))
    transform = T.Compose([T.Resize((224, 224)), T.ToTensor(), erase])
    pipeline, output = stoker.translate_transform(transform)
    count = 8000
    mine = boxes(pipeline, output, 3, count)
    torch.manual_seed(3)
    image = torch.zeros(3, 224, 224)
    theirs = []
    for _ in range(count):
        if torch.rand(1) < erase.p:
            y, x, h, w, _ = erase.get_params(image, erase.scale, erase.ratio,
                                             [0.0])
            theirs.append(None if (h, w) == (224, 224) else [x, y, w, h])
        else:
            theirs.append(None)
    for stat in (lambda b: b[2] * b[3], lambda b: b[2] / b[3],
                 lambda b: b[0] + b[2] / 2, lambda b: b[1] + b[3] / 2):
        a = np.sort([stat(b) for b in mine if b])
        b = np.sort([stat(b) for b in theirs if b])
        both = np.concatenate([a, b])
        d = np.max(np.abs(np.searchsorted(a, both, "right") / len(a) -
                          np.searchsorted(b, both, "right") / len(b)))
        bound = 1.95 * math.sqrt((len(a) + len(b)) / (len(a) * len(b)))
        assert d < bound, (d, bound)  # p = 0.001
    rate = sum(b is not None for b in mine) / count
    assert abs(rate - sum(b is not None for b in theirs) / count) < 0.04
