"""What torchvision's classification recipe (references/classification/
train.py) touches on a DataLoader, on stoker.DataLoader against a real
stokerd: .dataset equal to torchvision's ImageFolder, .sampler, torch's
samplers translated (DistributedSampler split and epochs as torch's), the
worker keywords ignored in one logged line, an ImageFolder object as root,
and clear refusals."""
import logging
import os
import shutil
import socket
import tarfile

import pytest

torch = pytest.importorskip("torch")
T = pytest.importorskip("torchvision.transforms")
datasets = pytest.importorskip("torchvision.datasets")
from torch.utils.data import (DistributedSampler, RandomSampler,  # noqa: E402
                              SequentialSampler, SubsetRandomSampler,
                              WeightedRandomSampler)

import stoker  # noqa: E402
from stoker import _native  # noqa: E402
from conftest import make_dataset, photo_folder  # noqa: E402

TRANSFORM = T.Compose([T.Resize(36), T.CenterCrop(32), T.ToTensor()])


def loader_for(daemon, root, **kwargs):
    kwargs.setdefault("batch_size", 4)
    kwargs.setdefault("transform", TRANSFORM)
    return stoker.DataLoader(root, socket=daemon.socket, **kwargs)


def labels_of(loader):
    return [label for _, labels in loader for label in labels.tolist()]


def spec_of(loader):
    spec = loader.state_dict()["spec"]
    return {k: spec[k] for k in ("shuffle", "seed", "rank", "world_size",
                                 "shard_drop_last")}


@pytest.fixture
def odd_folder(scratch):
    """35 JPEGs in 5 classes, one class with a nested directory, an
    upper-case extension and a file that is not an image."""
    root = make_dataset(os.path.join(scratch, "odd"), classes=5, per_class=7)
    nested = os.path.join(root, "class_002", "more")
    os.mkdir(nested)
    shutil.move(os.path.join(root, "class_002", "img_00003.jpg"),
                os.path.join(nested, "IMG_00003.JPG"))
    with open(os.path.join(root, "class_001", "notes.txt"), "w") as f:
        f.write("not an image\n")
    return root


def test_dataset_equals_torchvisions_image_folder(daemon, scratch, odd_folder):
    photos = photo_folder(os.path.join(scratch, "photos"), other_formats=True)
    for root in (odd_folder, photos):
        reference = datasets.ImageFolder(root)
        loader = loader_for(daemon, root)
        dataset = loader.dataset
        assert len(dataset) == len(reference) == loader.num_samples
        assert dataset.classes == reference.classes
        assert dataset.class_to_idx == reference.class_to_idx
        assert dataset.samples == reference.samples
        assert dataset.imgs == reference.imgs
        assert dataset.targets == reference.targets
        assert dataset.root == reference.root
        # and the labels served are ImageFolder's targets, in its order
        assert labels_of(loader) == reference.targets
        loader.close()


def test_samples_are_scanned_only_when_read(daemon, odd_folder, monkeypatch):
    walks = []
    real_walk = os.walk
    monkeypatch.setattr(os, "walk", lambda *a, **k: walks.append(a) or
                        real_walk(*a, **k))
    loader = loader_for(daemon, odd_folder)
    dataset = loader.dataset
    assert len(dataset) == 35 and len(dataset.classes) == 5
    assert dataset.class_to_idx["class_004"] == 4
    assert walks == []  # len and classes came from the daemon
    assert len(dataset.samples) == 35
    assert len(walks) == 5  # one walk per class
    assert len(dataset.targets) == 35 and len(walks) == 5  # scanned once
    loader.close()


def test_dataset_of_shards_and_manifests(daemon, scratch, dataset):
    reference = datasets.ImageFolder(dataset)
    manifest = os.path.join(scratch, "train.csv")
    with open(manifest, "w") as f:
        f.write("path,label,class\n")
        for path, label in reference.samples:
            f.write(f"{path},{label},{reference.classes[label]}\n")
    shard = os.path.join(scratch, "train-000000.tar")
    with tarfile.open(shard, "w") as tar:
        for i, (path, label) in enumerate(reference.samples):
            tar.add(path, arcname=f"{i:06d}.jpg")
            cls = os.path.join(scratch, "cls")
            with open(cls, "w") as f:
                f.write(str(label))
            tar.add(cls, arcname=f"{i:06d}.cls")
    for source in (dict(manifest=manifest), dict(shards=shard)):
        loader = stoker.DataLoader(batch_size=4, transform=TRANSFORM,
                                   socket=daemon.socket, **source)
        assert len(loader.dataset) == len(reference) == 24
        assert loader.dataset.classes == loader.classes
        if "manifest" in source:
            assert loader.dataset.classes == reference.classes
            assert loader.dataset.class_to_idx == reference.class_to_idx
        with pytest.raises(AttributeError, match="ImageFolder root only"):
            loader.dataset.samples
        loader.close()


@pytest.mark.parametrize("drop_last", [False, True])
def test_distributed_sampler_is_translated(daemon, odd_folder, drop_last):
    reference = datasets.ImageFolder(odd_folder)  # 35 samples
    for rank in range(2):
        sampler = DistributedSampler(reference, num_replicas=2, rank=rank,
                                     shuffle=False, drop_last=drop_last)
        loader = loader_for(daemon, odd_folder, sampler=sampler)
        assert spec_of(loader) == dict(shuffle=False, seed=0, rank=rank,
                                       world_size=2, shard_drop_last=drop_last)
        assert len(loader.sampler) == len(sampler) == (17 if drop_last else 18)
        # the samples of torch's DistributedSampler, in its order
        assert labels_of(loader) == [reference.targets[i] for i in sampler]
        loader.close()
    shuffled = DistributedSampler(reference, num_replicas=3, rank=2, seed=5,
                                  drop_last=drop_last)
    loader = loader_for(daemon, odd_folder, sampler=shuffled)
    assert spec_of(loader) == dict(shuffle=True, seed=5, rank=2, world_size=3,
                                   shard_drop_last=drop_last)
    assert len(loader.sampler) == len(shuffled)
    explicit = loader_for(daemon, odd_folder, shuffle=True, seed=5, rank=2,
                          world_size=3, shard_drop_last=drop_last)
    assert labels_of(loader) == labels_of(explicit)
    loader.close()
    explicit.close()


def test_set_epoch_on_either_sampler_picks_the_epoch(daemon, odd_folder):
    reference = datasets.ImageFolder(odd_folder)
    orders = loader_for(daemon, odd_folder, shuffle=True, seed=1)
    by_epoch = {}
    for epoch in (0, 1, 3, 4):
        orders.set_epoch(epoch)
        by_epoch[epoch] = labels_of(orders)
    orders.close()
    assert len({tuple(order) for order in by_epoch.values()}) == 4
    sampler = DistributedSampler(reference, num_replicas=1, rank=0, seed=1)
    loader = loader_for(daemon, odd_folder, sampler=sampler)
    assert labels_of(loader) == by_epoch[0]
    sampler.set_epoch(3)  # train.py calls it on its own sampler
    assert labels_of(loader) == by_epoch[3]
    loader.sampler.set_epoch(0)  # or on the loader's
    assert labels_of(loader) == by_epoch[0]
    assert labels_of(loader) == by_epoch[1]  # not set: the next epoch
    sampler.set_epoch(4)
    assert labels_of(loader) == by_epoch[4]
    loader.close()
    early = DistributedSampler(reference, num_replicas=1, rank=0, seed=1)
    early.set_epoch(3)  # before the loader is built
    loader = loader_for(daemon, odd_folder, sampler=early)
    assert labels_of(loader) == by_epoch[3]
    loader.close()
    # A resumed loader whose sampler was left alone resumes where it was.
    first = loader_for(daemon, odd_folder, sampler=DistributedSampler(
        reference, num_replicas=1, rank=0, seed=1))
    first.set_epoch(1)
    for _ in zip(range(3), first):
        pass
    state = first.state_dict()
    first.close()
    resumed = loader_for(daemon, odd_folder, sampler=DistributedSampler(
        reference, num_replicas=1, rank=0, seed=1))
    resumed.load_state_dict(state)
    assert labels_of(resumed) == by_epoch[1][12:]
    resumed.close()


def test_random_and_sequential_samplers_and_generator(daemon, dataset):
    reference = datasets.ImageFolder(dataset)
    cases = [
        (dict(sampler=RandomSampler(reference)), True, 0),
        (dict(sampler=SequentialSampler(reference)), False, 0),
        (dict(sampler=RandomSampler(
            reference, generator=torch.Generator().manual_seed(9))), True, 9),
        (dict(generator=torch.Generator().manual_seed(42), shuffle=True),
         True, 42),
    ]
    for kwargs, shuffle, seed in cases:
        loader = loader_for(daemon, dataset, **kwargs)
        assert (spec_of(loader)["shuffle"], spec_of(loader)["seed"]) == (
            shuffle, seed)
        loader.close()
    # a generator's seed is the loader's: the same order as seed=42
    seeded = loader_for(daemon, dataset, shuffle=True, seed=42)
    generated = loader_for(daemon, dataset, shuffle=True,
                           generator=torch.Generator().manual_seed(42))
    assert labels_of(seeded) == labels_of(generated)
    seeded.close()
    generated.close()


def test_samplers_that_cannot_be_translated_are_refused(daemon, dataset):
    reference = datasets.ImageFolder(dataset)
    for sampler, name in (
            (WeightedRandomSampler([1.0] * 24, 24), "WeightedRandomSampler"),
            (SubsetRandomSampler(range(10)), "SubsetRandomSampler"),
            (RandomSampler(reference, replacement=True), "replacement")):
        with pytest.raises(stoker.InvalidArgument, match=name):
            loader_for(daemon, dataset, sampler=sampler)
    with pytest.raises(stoker.InvalidArgument, match="mutually exclusive"):
        loader_for(daemon, dataset, sampler=RandomSampler(reference),
                   shuffle=True)
    with pytest.raises(stoker.InvalidArgument, match="seed=3.*sampler gives 0"):
        loader_for(daemon, dataset, seed=3, sampler=DistributedSampler(
            reference, num_replicas=1, rank=0))
    with pytest.raises(stoker.InvalidArgument, match="generator gives 5"):
        loader_for(daemon, dataset, seed=3,
                   generator=torch.Generator().manual_seed(5))

    class RASampler(torch.utils.data.Sampler):  # the reference's, in short
        def __init__(self, dataset, num_replicas, rank, shuffle, repetitions):
            self.num_repeats = repetitions

    with pytest.raises(stoker.InvalidArgument, match="RASampler") as refused:
        loader_for(daemon, dataset, sampler=RASampler(reference, 1, 0, True, 3))
    # What to do comes last, where the eye lands.
    assert str(refused.value).endswith("pass repeated_augmentations=3")


def test_first_refusals_are_short_and_say_what_to_do(daemon, dataset,
                                                     monkeypatch):
    """What a new user meets first, each on one line of at most 300
    characters: no daemon where it looked (naming the socket, why it was
    tried, STOKER_SOCKET and socket=), a transform it cannot run (pointing
    to the list), a collate_fn, a process forked from the loader's."""
    here = os.path.dirname(dataset)
    missing, dead = os.path.join(here, "none.sock"), os.path.join(here, "dead.sock")
    listener = socket.socket(socket.AF_UNIX)
    listener.bind(dead)  # a socket file nobody listens on (a killed daemon's)
    listener.close()
    refusals = []
    with pytest.raises(stoker.Unavailable) as refused:
        stoker.DataLoader(dataset, transform=TRANSFORM, socket=missing)
    refusals.append(str(refused.value))
    with pytest.raises(stoker.Unavailable) as refused:
        stoker.Client(dead, timeout=0.2)
    refusals.append(str(refused.value))
    for where, refusal in zip((missing, dead), refusals):
        assert refusal == (
            f"UNAVAILABLE: no stokerd answers at {where} (named by socket=): "
            f"start stokerd --socket={where}, or point STOKER_SOCKET or "
            "socket= at the socket it listens on")
    monkeypatch.setenv("STOKER_SOCKET", missing)
    with pytest.raises(stoker.Unavailable,
                       match=r"named by STOKER_SOCKET\).*STOKER_SOCKET or "
                       "socket=") as refused:
        stoker.Client(timeout=0.2)
    refusals.append(str(refused.value))
    monkeypatch.delenv("STOKER_SOCKET")
    with open(missing, "w"):
        pass  # a file, not a socket: the library's reason, and where to look
    with pytest.raises(stoker.Unavailable,
                       match=r"is not a socket.*\(named by socket=; "
                       "STOKER_SOCKET or socket= names another\\)$") as refused:
        stoker.Client(missing, timeout=0.2)
    refusals.append(str(refused.value))
    for transform in (None, T.Compose([T.RandomResizedCrop(32),
                                       T.RandomPerspective()]),
                      T.Compose([T.RandomHorizontalFlip(), T.ToTensor()]),
                      T.Compose([T.RandomResizedCrop(32), T.RandomChoice(
                          [T.ColorJitter(0.4, 0.4, 0.4, 0.1),
                           T.TrivialAugmentWide()])]),
                      T.Compose([T.RandomResizedCrop(32), T.RandomApply(
                          [T.RandomHorizontalFlip(),
                           T.ColorJitter(0.4, 0.4, 0.4, 0.1)], p=0.8)])):
        with pytest.raises(stoker.UnsupportedTransform,
                           match="docs/transforms.md") as refused:
            loader_for(daemon, dataset, transform=transform)
        refusals.append(str(refused.value))
    with pytest.raises(stoker.InvalidArgument,
                       match=r"batch_transform=stoker\.RandomChoice") as refused:
        loader_for(daemon, dataset, collate_fn=lambda batch: batch)
    refusals.append(str(refused.value))
    refusals.append(str(_native.fork_error(1, "this DataLoader")))
    for refusal in refusals:
        assert len(refusal) <= 300 and "\n" not in refusal, refusal


def test_worker_keywords_are_ignored_in_one_logged_line(daemon, dataset,
                                                        caplog):
    caplog.set_level(logging.WARNING, logger="stoker")
    loader = loader_for(daemon, dataset, num_workers=16, pin_memory=True,
                        persistent_workers=True, prefetch_factor=4,
                        worker_init_fn=print, timeout=30,
                        multiprocessing_context="spawn")
    for _ in range(2):
        labels_of(loader)
    lines = [r.getMessage() for r in caplog.records if r.name == "stoker"]
    assert len(lines) == 1, lines
    for word in ("num_workers=16", "pin_memory=True", "persistent_workers",
                 "prefetch_factor", "worker_init_fn", "timeout",
                 "multiprocessing_context", "worker threads", "shared memory"):
        assert word in lines[0]
    loader.close()
    assert loader.num_workers == 16  # as torch's, read by recipes
    plain = loader_for(daemon, dataset)  # nothing given, nothing said
    again = loader_for(daemon, dataset, num_workers=4)  # once per loader
    assert plain.num_workers == 0 and again.num_workers == 4
    lines = [r.getMessage() for r in caplog.records if r.name == "stoker"]
    assert len(lines) == 2 and "num_workers=4" in lines[1]
    plain.close()
    again.close()
    with pytest.raises(TypeError, match="batch_sampler"):
        loader_for(daemon, dataset, batch_sampler=[[0, 1]])


def test_an_image_folder_object_as_root(daemon, odd_folder):
    folder = datasets.ImageFolder(odd_folder, transform=TRANSFORM)
    by_object = stoker.DataLoader(folder, batch_size=4, shuffle=True, seed=2,
                                  socket=daemon.socket)  # its transform
    by_path = loader_for(daemon, odd_folder, shuffle=True, seed=2)
    assert by_object.dataset is folder
    assert by_object.state_dict()["spec"] == by_path.state_dict()["spec"]
    got = [(i.clone(), l.clone()) for i, l in by_object]
    expected = [(i.clone(), l.clone()) for i, l in by_path]
    assert len(got) == len(expected) == 9
    assert all(torch.equal(a, b) and torch.equal(la, lb)
               for (a, la), (b, lb) in zip(got, expected))
    by_object.close()
    by_path.close()
    # transform= wins over the folder's
    other = T.Compose([T.Resize(20), T.CenterCrop(16), T.ToTensor()])
    loader = stoker.DataLoader(folder, batch_size=4, transform=other,
                               socket=daemon.socket)
    assert next(iter(loader))[0].shape == (4, 3, 16, 16)
    loader.close()


def test_what_an_image_folder_does_differently_is_refused(daemon, odd_folder):
    refused = {
        "target_transform": datasets.ImageFolder(
            odd_folder, TRANSFORM, target_transform=lambda y: y + 1),
        "is_valid_file": datasets.ImageFolder(
            odd_folder, TRANSFORM, is_valid_file=lambda p: True),
        "loader=": datasets.ImageFolder(
            odd_folder, TRANSFORM,
            loader=lambda path: datasets.folder.default_loader(path)),
        "extensions=": datasets.DatasetFolder(
            odd_folder, datasets.folder.default_loader, extensions=(".jpg",),
            transform=TRANSFORM),
    }

    class MyFolder(datasets.ImageFolder):
        pass
    refused["MyFolder"] = MyFolder(odd_folder, TRANSFORM)
    for name, folder in refused.items():
        with pytest.raises(stoker.InvalidArgument, match=name):
            stoker.DataLoader(folder, batch_size=4, socket=daemon.socket)
    for value, name in ((42, "int"), ([torch.zeros(3)], "list"),
                        (torch.utils.data.TensorDataset(torch.zeros(2)),
                         "TensorDataset")):
        with pytest.raises(stoker.InvalidArgument,
                           match=f"ImageFolder, not .*{name}"):
            stoker.DataLoader(value, batch_size=4, transform=TRANSFORM,
                              socket=daemon.socket)


def test_the_recipes_lines(daemon, odd_folder):
    """train.py's data loading, with stoker.DataLoader in place of torch's
    and batch_transform in place of its mixup/cutmix collate_fn."""
    dataset = datasets.ImageFolder(odd_folder, TRANSFORM)
    train_sampler = torch.utils.data.RandomSampler(dataset)
    num_classes = len(dataset.classes)
    mixupcutmix = stoker.RandomChoice([
        stoker.MixUp(alpha=0.2, num_classes=num_classes),
        stoker.CutMix(alpha=1.0, num_classes=num_classes)])
    data_loader = stoker.DataLoader(
        dataset, batch_size=8, sampler=train_sampler, num_workers=16,
        pin_memory=True, batch_transform=mixupcutmix, socket=daemon.socket)
    assert len(data_loader.dataset) == 35 and len(data_loader) == 5
    for epoch in range(2):
        seen = 0
        for image, target in data_loader:
            assert image.shape[1:] == (3, 32, 32)
            assert target.shape == (len(image), 5)
            assert torch.allclose(target.sum(1), torch.ones(len(image)))
            seen += len(image)
        assert seen == len(data_loader.dataset)
    data_loader.close()
