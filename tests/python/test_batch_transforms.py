"""stoker.MixUp, CutMix and RandomChoice against torchvision 0.14's
classification reference (RandomMixup and RandomCutmix, copied below), and
DataLoader(batch_transform=) on a real stokerd: one-hot mixed labels, the
same mix for the same batch on a re-run and after load_state_dict()."""
import math
import os
import time

import pytest

torch = pytest.importorskip("torch")
np = pytest.importorskip("numpy")
T = pytest.importorskip("torchvision.transforms")
F = pytest.importorskip("torchvision.transforms.functional")

import stoker  # noqa: E402
from conftest import Daemon, make_dataset  # noqa: E402
from stoker.batch_transforms import (  # noqa: E402
    batch_generator, call_batch_transform)


# -- torchvision 0.14 references/classification/transforms.py, forward() of
#    RandomMixup and RandomCutmix as they are (inplace=False). ---------------

class RandomMixup(torch.nn.Module):
    def __init__(self, num_classes, p=0.5, alpha=1.0):
        super().__init__()
        self.num_classes, self.p, self.alpha = num_classes, p, alpha

    def forward(self, batch, target):
        batch = batch.clone()
        target = target.clone()
        if target.ndim == 1:
            target = torch.nn.functional.one_hot(
                target, num_classes=self.num_classes).to(dtype=batch.dtype)
        if torch.rand(1).item() >= self.p:
            return batch, target
        batch_rolled = batch.roll(1, 0)
        target_rolled = target.roll(1, 0)
        lambda_param = float(torch._sample_dirichlet(torch.tensor([self.alpha, self.alpha]))[0])
        batch_rolled.mul_(1.0 - lambda_param)
        batch.mul_(lambda_param).add_(batch_rolled)
        target_rolled.mul_(1.0 - lambda_param)
        target.mul_(lambda_param).add_(target_rolled)
        return batch, target


class RandomCutmix(torch.nn.Module):
    def __init__(self, num_classes, p=0.5, alpha=1.0):
        super().__init__()
        self.num_classes, self.p, self.alpha = num_classes, p, alpha

    def forward(self, batch, target):
        batch = batch.clone()
        target = target.clone()
        if target.ndim == 1:
            target = torch.nn.functional.one_hot(
                target, num_classes=self.num_classes).to(dtype=batch.dtype)
        if torch.rand(1).item() >= self.p:
            return batch, target
        batch_rolled = batch.roll(1, 0)
        target_rolled = target.roll(1, 0)
        lambda_param = float(torch._sample_dirichlet(torch.tensor([self.alpha, self.alpha]))[0])
        _, H, W = F.get_dimensions(batch)
        r_x = torch.randint(W, (1,))
        r_y = torch.randint(H, (1,))
        r = 0.5 * math.sqrt(1.0 - lambda_param)
        r_w_half = int(r * W)
        r_h_half = int(r * H)
        x1 = int(torch.clamp(r_x - r_w_half, min=0))
        y1 = int(torch.clamp(r_y - r_h_half, min=0))
        x2 = int(torch.clamp(r_x + r_w_half, max=W))
        y2 = int(torch.clamp(r_y + r_h_half, max=H))
        batch[:, :, y1:y2, x1:x2] = batch_rolled[:, :, y1:y2, x1:x2]
        lambda_param = float(1.0 - (x2 - x1) * (y2 - y1) / (W * H))
        target_rolled.mul_(1.0 - lambda_param)
        target.mul_(lambda_param).add_(target_rolled)
        return batch, target

# ----------------------------------------------------------------------------


def random_batch(n=6, c=3, h=7, w=11, classes=5, dtype=torch.float32):
    g = torch.Generator().manual_seed(1234)
    images = torch.rand((n, c, h, w), generator=g).to(dtype)
    labels = torch.randint(classes, (n,), generator=g)
    return images, labels


def reference_and_ours(reference, ours, images, labels, seed):
    """The reference under torch.manual_seed(seed), ours with a generator
    of the same seed (so the same draws, if drawn in the same order)."""
    torch.manual_seed(seed)
    expected = reference(images, labels)
    got = ours(images, labels, generator=torch.Generator().manual_seed(seed))
    return expected, got


@pytest.mark.parametrize("alpha", [0.2, 1.0])
def test_mixup_equals_the_reference(alpha):
    images, labels = random_batch()
    before = images.clone()
    for seed in range(20):
        (ref_i, ref_l), (i, l) = reference_and_ours(
            RandomMixup(5, p=1.0, alpha=alpha),
            stoker.MixUp(alpha=alpha, num_classes=5), images, labels, seed)
        assert i.dtype == torch.float32 and l.dtype == torch.float32
        assert l.shape == (6, 5)
        assert torch.equal(i, ref_i) and torch.equal(l, ref_l), seed
    assert torch.equal(images, before)  # the batch given is not written


@pytest.mark.parametrize("alpha", [0.2, 1.0])
def test_cutmix_equals_the_reference(alpha):
    images, labels = random_batch(h=7, w=11)  # H != W: catches a swap
    areas = set()
    for seed in range(40):
        (ref_i, ref_l), (i, l) = reference_and_ours(
            RandomCutmix(5, p=1.0, alpha=alpha),
            stoker.CutMix(alpha=alpha, num_classes=5), images, labels, seed)
        assert torch.equal(i, ref_i) and torch.equal(l, ref_l), seed
        areas.add(int((i != images).any(0).any(0).sum()))
    assert len(areas) > 5  # boxes of many sizes were pasted


def test_cutmix_nhwc_pastes_the_same_box():
    images, labels = random_batch(h=9, w=5)
    for seed in range(10):
        torch.manual_seed(seed)
        ref_i, ref_l = RandomCutmix(5, p=1.0)(images, labels)
        i, lab = stoker.CutMix(num_classes=5, layout="NHWC")(
            images.permute(0, 2, 3, 1), labels,
            generator=torch.Generator().manual_seed(seed))
        assert torch.equal(i, ref_i.permute(0, 2, 3, 1)), seed
        assert torch.equal(lab, ref_l), seed


def test_mixup_and_cutmix_with_fixed_draws_by_hand(monkeypatch):
    """lam = 0.75 and a box centre (x=1, y=2) forced: the numbers worked out
    by hand from the reference's formulas."""
    monkeypatch.setattr(torch, "_sample_dirichlet",
                        lambda alpha, generator=None: torch.tensor([0.75, 0.25]))
    centre = iter([1, 2])  # r_x, then r_y
    monkeypatch.setattr(torch, "randint", lambda high, size, generator=None:
                        torch.tensor([next(centre)]))
    images = torch.stack([torch.zeros(1, 4, 4), torch.ones(1, 4, 4)])
    labels = torch.tensor([0, 2])
    mixed, soft = stoker.MixUp(num_classes=3)(images, labels)
    assert torch.equal(mixed[0], torch.full((1, 4, 4), 0.25))  # .75*0 + .25*1
    assert torch.equal(mixed[1], torch.full((1, 4, 4), 0.75))
    assert soft.tolist() == [[0.75, 0.0, 0.25], [0.25, 0.0, 0.75]]
    # r = 0.5 * sqrt(0.25) = 0.25: half sides int(1.0) = 1; x in [0, 2),
    # y in [1, 3): a 2x2 box of the other image; lam = 1 - 4/16.
    cut, soft = stoker.CutMix(num_classes=3)(images, labels)
    box = torch.zeros(4, 4)
    box[1:3, 0:2] = 1
    assert torch.equal(cut[0, 0], box) and torch.equal(cut[1, 0], 1 - box)
    assert soft.tolist() == [[0.75, 0.0, 0.25], [0.25, 0.0, 0.75]]


def test_uint8_images_are_refused_saying_to_convert():
    images, labels = random_batch(dtype=torch.uint8)
    for op in (stoker.MixUp(num_classes=5), stoker.CutMix(num_classes=5)):
        with pytest.raises(stoker.InvalidArgument, match="float.*ToTensor"):
            op(images, labels)
    with pytest.raises(stoker.InvalidArgument, match="num_classes"):
        stoker.MixUp(num_classes=0)
    with pytest.raises(stoker.InvalidArgument, match="alpha"):
        stoker.CutMix(alpha=0.0, num_classes=3)


def ks_uniform(sample):
    x = np.sort(np.asarray(sample))
    n = len(x)
    return max(np.max(np.arange(1, n + 1) / n - x), np.max(x - np.arange(n) / n))


def ks_two_samples(a, b):
    a, b = np.sort(a), np.sort(b)
    grid = np.concatenate([a, b])
    cdf_a = np.searchsorted(a, grid, side="right") / len(a)
    cdf_b = np.searchsorted(b, grid, side="right") / len(b)
    return float(np.max(np.abs(cdf_a - cdf_b)))


def mixup_lambdas(alpha, draws):
    """lam of `draws` batches, read off the mixed labels: image 0 keeps lam
    of its own class (0) and takes 1 - lam of image 1's (1)."""
    op = stoker.MixUp(alpha=alpha, num_classes=2)
    images, labels = torch.zeros(2, 1, 1, 1), torch.tensor([0, 1])
    return np.array([float(op(images, labels, generator=batch_generator(
        0, 0, 0, i))[1][0, 0]) for i in range(draws)])


def test_mixup_lambda_is_beta_alpha_alpha():
    n = 3000
    critical = 1.95 / math.sqrt(n)  # KS at the 0.1% level
    assert ks_uniform(mixup_lambdas(1.0, n)) < critical  # Beta(1, 1)
    two_sample = 1.95 * math.sqrt(2 / n)
    rng = np.random.default_rng(7)
    for alpha in (0.2, 4.0):
        lams = mixup_lambdas(alpha, n)
        assert ks_two_samples(lams, rng.beta(alpha, alpha, n)) < two_sample
        # and the test tells Beta(alpha, alpha) from Beta(1, 1):
        assert ks_two_samples(lams, rng.uniform(size=n)) > two_sample


class Spy:
    def __init__(self, name):
        self.name, self.calls = name, []

    def __call__(self, images, labels, generator=None):
        self.calls.append(generator)
        return images, labels


def test_random_choice_picks_each_about_as_often_as_weighted():
    images, labels = random_batch()
    for weights, share in ((None, 0.5), ([9.0, 1.0], 0.9)):
        a, b = Spy("a"), Spy("b")
        choice = stoker.RandomChoice([a, b], p=weights)
        generators = [batch_generator(3, 0, 0, i) for i in range(2000)]
        for g in generators:
            choice(images, labels, generator=g)
        assert len(a.calls) + len(b.calls) == 2000
        assert abs(len(a.calls) / 2000 - share) < 0.04
        assert all(any(g is c for c in a.calls + b.calls) for g in generators[:5])
    # Between MixUp and CutMix: what the chosen one gives after the choice
    # is drawn from the same generator.
    mix = stoker.MixUp(num_classes=5)
    cut = stoker.CutMix(num_classes=5)
    choice = stoker.RandomChoice([mix, cut])
    picked = set()
    for seed in range(12):
        g = torch.Generator().manual_seed(seed)
        which = int(torch.multinomial(
            torch.tensor([1.0, 1.0], dtype=torch.float64), 1, generator=g))
        expected = (mix, cut)[which](images, labels, generator=g)
        got = choice(images, labels, generator=torch.Generator().manual_seed(seed))
        assert torch.equal(got[0], expected[0]) and torch.equal(got[1], expected[1])
        picked.add(which)
    assert picked == {0, 1}


def test_any_callable_gets_a_generator_only_if_it_names_one():
    images, labels = random_batch()
    plain = call_batch_transform(lambda x, y: (x * 2, y + 1), images, labels,
                                 torch.Generator())
    assert torch.equal(plain[0], images * 2) and torch.equal(plain[1], labels + 1)
    spy = Spy("s")
    g = torch.Generator()
    call_batch_transform(spy, images, labels, g)
    assert spy.calls == [g]
    # An nn.Module whose forward takes no generator (the reference's).
    torch.manual_seed(0)
    out = call_batch_transform(RandomMixup(5, p=1.0), images, labels, g)
    assert out[1].shape == (6, 5)
    with pytest.raises(stoker.InvalidArgument, match="not \\(images, labels\\)"):
        call_batch_transform(lambda x, y: x, images, labels, None)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device")
def test_cuda_tensors_mix_as_the_cpu_ones():
    images, labels = random_batch()
    for op in (stoker.MixUp(num_classes=5), stoker.CutMix(num_classes=5)):
        cpu = op(images, labels, generator=torch.Generator().manual_seed(5))
        gpu = op(images.cuda(), labels.cuda(),
                 generator=torch.Generator().manual_seed(5))
        assert gpu[0].device.type == "cuda" and gpu[1].device.type == "cuda"
        assert torch.allclose(gpu[0].cpu(), cpu[0]) and torch.equal(gpu[1].cpu(), cpu[1])


# -- DataLoader(batch_transform=) on a real stokerd -----------------------------

TRANSFORM = T.Compose([T.RandomResizedCrop(32), T.RandomHorizontalFlip(),
                       T.ToTensor()])


def loader_for(daemon, root, **kwargs):
    kwargs.setdefault("batch_size", 4)
    kwargs.setdefault("transform", TRANSFORM)
    return stoker.DataLoader(root, shuffle=True, seed=7,
                             socket=daemon.socket, **kwargs)


def mixer(classes=3):
    return stoker.RandomChoice([stoker.MixUp(alpha=0.2, num_classes=classes),
                                stoker.CutMix(alpha=1.0, num_classes=classes)])


def epochs_of(loader, epochs):
    return [(i.clone(), l.clone()) for _ in range(epochs) for i, l in loader]


def same(a, b):
    return len(a) == len(b) and all(
        torch.equal(x, y) and torch.equal(u, v) for (x, u), (y, v) in zip(a, b))


def test_loader_yields_mixed_one_hot_labels(daemon, dataset):
    plain = loader_for(daemon, dataset)
    batches = epochs_of(plain, 1)
    plain.close()
    mixing = loader_for(daemon, dataset, batch_transform=mixer())
    mixed = epochs_of(mixing, 1)
    assert len(mixed) == len(batches) == 6
    for index, ((images, labels), (raw, raw_labels)) in enumerate(
            zip(mixed, batches)):
        assert images.shape == raw.shape and images.dtype == torch.float32
        assert labels.shape == (4, 3) and labels.dtype == torch.float32
        assert torch.allclose(labels.sum(dim=1), torch.ones(4))
        # each row mixes its own label with the previous image's
        rows = torch.arange(4)
        assert torch.allclose(labels[rows, raw_labels] +
                              labels[rows, raw_labels.roll(1)] *
                              (raw_labels != raw_labels.roll(1)), torch.ones(4))
        # the op, with the generator of (seed 7, rank 0, epoch 0, index)
        expected = mixer()(raw, raw_labels,
                           generator=batch_generator(7, 0, 0, index))
        assert torch.equal(images, expected[0]) and torch.equal(labels, expected[1])
    assert any(not torch.equal(l, l.round()) for _, l in mixed)  # mixed
    mixing.close()


def test_the_same_batches_get_the_same_mix_after_a_resume(daemon, dataset):
    whole = loader_for(daemon, dataset, batch_transform=mixer())
    expected = epochs_of(whole, 2)
    whole.close()
    again = loader_for(daemon, dataset, batch_transform=mixer())
    assert same(epochs_of(again, 2), expected)  # a re-run
    again.close()
    first = loader_for(daemon, dataset, batch_transform=mixer())
    for k, _ in zip(range(3), first):
        pass
    state = first.state_dict()
    first.close()
    resumed = loader_for(daemon, dataset, batch_transform=mixer())
    resumed.load_state_dict(state)
    got = epochs_of(resumed, 2)
    assert same(got, expected[3:])
    resumed.close()


def test_any_callable_and_torchvisions_random_choice(daemon, dataset):
    seen = []

    def with_generator(images, labels, generator=None):
        seen.append(float(torch.rand(1, generator=generator)))
        return images, labels * 10

    loader = loader_for(daemon, dataset, batch_transform=with_generator)
    labels = [batch.clone() for _, batch in loader]
    assert all(set(batch.tolist()) <= {0, 10, 20} for batch in labels)
    assert seen == [float(torch.rand(1, generator=batch_generator(7, 0, 0, i)))
                    for i in range(6)]
    loader.close()
    # The reference's objects as train.py builds them (torch's global RNG).
    reference = T.RandomChoice([RandomMixup(3, p=1.0, alpha=0.2),
                                RandomCutmix(3, p=1.0, alpha=1.0)])
    loader = loader_for(daemon, dataset, batch_transform=reference)
    for images, labels in loader:
        assert labels.shape == (4, 3)
        assert torch.allclose(labels.sum(dim=1), torch.ones(4))
    loader.close()


def test_what_cannot_run_is_refused_before_any_batch(daemon, dataset):
    uint8 = T.Compose([T.RandomResizedCrop(32)])  # uint8 NHWC
    with pytest.raises(stoker.InvalidArgument,
                       match="uint8 NHWC.*ToTensor.*ConvertImageDtype"):
        loader_for(daemon, dataset, transform=uint8, batch_transform=mixer())
    with pytest.raises(stoker.InvalidArgument, match="3 classes"):
        loader_for(daemon, dataset, batch_transform=mixer(classes=2))
    with pytest.raises(stoker.InvalidArgument, match="callable"):
        loader_for(daemon, dataset, batch_transform="mixup")
    with pytest.raises(stoker.InvalidArgument, match="batch_transform="):
        loader_for(daemon, dataset, collate_fn=lambda batch: batch)
    with stoker.Client(daemon.socket) as client:
        assert client.list_jobs() == []  # nothing left behind


def test_the_batch_under_a_mix_is_held_and_confirmed_as_a_plain_one(scratch):
    """The mixed tensors are copies, but the batch they came from stays
    leased until the next one is taken, and confirm() checks it: held past
    the daemon's lease timeout (in a partition job, where it goes to
    another consumer), it is reported, never silently trained on twice."""
    d = Daemon(scratch, extra=("--lease_timeout=1s",))
    try:
        root = make_dataset(os.path.join(scratch, "d"))
        owner = loader_for(d, root, sharing="partition")
        other = stoker.DataLoader(root, job_id=owner.job_id, socket=d.socket,
                                  prefetch=1, batch_transform=mixer())
        images, labels = next(iter(other))
        assert labels.shape == (4, 3)
        time.sleep(2.0)  # its step: longer than the lease timeout
        with pytest.raises(stoker.DeadlineExceeded, match="held batch"):
            other.confirm()
        other.close()
        owner.close()
    finally:
        d.stop()
    assert d.segments() == []


@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device")
def test_cuda_loader_mixes_as_the_cpu_one(daemon, dataset):
    from stoker import _native
    if not _native.library().stoker_cuda_available():
        pytest.skip("libstoker was built without CUDA")
    cpu = loader_for(daemon, dataset, batch_transform=mixer())
    expected = epochs_of(cpu, 1)
    cpu.close()
    gpu = loader_for(daemon, dataset, batch_transform=mixer(), device="cuda")
    got = [(i.cpu(), l.cpu()) for i, l in gpu]
    gpu.close()
    assert len(got) == len(expected)
    for (a, la), (b, lb) in zip(expected, got):
        assert torch.allclose(a, b) and torch.equal(la, lb)
