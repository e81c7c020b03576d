"""Streamed remote shards (docs/remote.md, "Streaming") against a real
nginx: a dataset four times the node's shard cache read for two epochs,
every sample once per epoch (labels number the samples), about one
dataset's bytes fetched per epoch, the order a pure function of (seed,
epoch, rank) so that state_dict() and a daemon killed mid-epoch resume
exactly, ranks getting equal
shares, and the refusals that keep a job from failing later."""
import os
import tarfile
import io

import pytest

torch = pytest.importorskip("torch")
from torchvision import transforms as T  # noqa: E402

import stoker  # noqa: E402
from stoker import errors  # noqa: E402
from conftest import Daemon, make_dataset  # noqa: E402
from remote_servers import Nginx  # noqa: E402

SHARDS = 8
PER_SHARD = 6
TRANSFORM = T.Compose([T.Resize(32), T.CenterCrop(32), T.PILToTensor()])


def add_member(tar, name, data):
    info = tarfile.TarInfo(name)
    info.size = len(data)
    tar.addfile(info, io.BytesIO(data))


@pytest.fixture
def shard_dir(scratch):
    """SHARDS shards of real JPEGs; sample i's label is i."""
    folder = make_dataset(os.path.join(scratch, "folder"), classes=4,
                          per_class=SHARDS * PER_SHARD // 4, width=320, height=240)
    files = sorted(os.path.join(d, f) for d, _, names in os.walk(folder)
                   for f in names)
    out = os.path.join(scratch, "shards")
    os.mkdir(out)
    for s in range(SHARDS):
        with tarfile.open(os.path.join(out, f"s-{s:03d}.tar"), "w") as tar:
            for i in range(s * PER_SHARD, (s + 1) * PER_SHARD):
                with open(files[i], "rb") as f:
                    add_member(tar, f"k{i:05d}.jpg", f.read())
                add_member(tar, f"k{i:05d}.cls", str(i).encode())
    return out


@pytest.fixture
def nginx(scratch, shard_dir):
    server = Nginx(os.path.join(scratch, "nginx"), shard_dir)
    yield server
    server.stop()


def dataset_bytes(shard_dir):
    return sum(os.path.getsize(os.path.join(shard_dir, n)) for n in os.listdir(shard_dir))


@pytest.fixture
def small_node(scratch, shard_dir):
    """A stokerd whose shard cache holds a quarter of the dataset (two of
    its eight shards)."""
    directory = os.path.join(scratch, "node")
    os.mkdir(directory)
    room = 2 * max(os.path.getsize(os.path.join(shard_dir, n))
                   for n in os.listdir(shard_dir)) + 4096
    assert 3.7 < dataset_bytes(shard_dir) / room <= 4
    d = Daemon(directory, extra=[f"--cache_dir={directory}/cache",
                                 f"--cache_size={room}",
                                 f"--cache_size_per_user={room}"])
    yield d
    d.stop()
    assert d.process.returncode == 0, d.read_log()
    assert d.segments() == []


def load(node, nginx, **kw):
    kw.setdefault("shuffle_window", 1)
    kw.setdefault("transform", TRANSFORM)
    return stoker.DataLoader(shards=nginx.url(f"s-{{000..{SHARDS - 1:03d}}}.tar"),
                             batch_size=4, shuffle=True, seed=3,
                             socket=node.socket, **kw)


def fetched(node):
    with stoker.Client(node.socket) as client:
        return int(client.stats()["daemon"]["shard_cache_fetched_bytes"])


def labels(loader, epoch):
    loader.set_epoch(epoch)
    return [label for _, y in loader for label in y.tolist()]


def test_a_dataset_four_times_the_cache_streams_each_sample_once_per_epoch(
        small_node, nginx, shard_dir):
    total = dataset_bytes(shard_dir)
    with load(small_node, nginx) as loader:
        assert len(loader) == SHARDS * PER_SHARD // 4
        assert loader.num_samples == SHARDS * PER_SHARD
        seen = []
        for epoch in range(2):
            before = fetched(small_node)
            seen.append(labels(loader, epoch))
            assert sorted(seen[-1]) == list(range(SHARDS * PER_SHARD)), epoch
            # The epoch read each shard once (what the first epoch's last
            # window left in the cache may be read again from it).
            assert fetched(small_node) - before <= 1.05 * total, epoch
        assert seen[0] != seen[1]  # a new shard order, new windows
        # A window is one shard: its samples stay together.
        shard_of = [label // PER_SHARD for label in seen[0]]
        runs = 1 + sum(a != b for a, b in zip(shard_of, shard_of[1:]))
        assert runs == SHARDS


def test_the_order_is_exact_across_jobs_and_resumes(small_node, nginx):
    with load(small_node, nginx) as first:
        whole = labels(first, 1)
    with load(small_node, nginx) as second:
        second.set_epoch(1)
        iterator = iter(second)
        head = [label for _ in range(5) for label in next(iterator)[1].tolist()]
        state = second.state_dict()
    with load(small_node, nginx) as resumed:
        resumed.load_state_dict(state)
        rest = [label for _, y in resumed for label in y.tolist()]
    assert head + rest == whole


def test_a_daemon_killed_mid_epoch_resumes_exactly(small_node, nginx):
    """stokerd SIGKILLed and restarted mid-epoch: the loader re-creates its
    streamed job at the next batch, which reads the same window of the same
    order, with the same random crops (draws keyed by the sample)."""
    crops = T.Compose([T.RandomResizedCrop(24), T.PILToTensor()])
    with load(small_node, nginx, transform=crops) as reference:
        expected = [(x.clone(), y.clone()) for _ in range(2) for x, y in reference]
    got = []
    with load(small_node, nginx, transform=crops) as loader:
        for _ in range(2):
            for x, y in loader:
                got.append((x.clone(), y.clone()))
                if len(got) == 5:  # mid-epoch, in the third window
                    small_node.kill()
                    small_node.start()
    assert len(got) == len(expected) == 2 * SHARDS * PER_SHARD // 4
    for (a, la), (b, lb) in zip(expected, got):
        assert torch.equal(la, lb) and torch.equal(a, b)


def test_ranks_get_equal_disjoint_shares(small_node, nginx):
    shares = []
    for rank in range(3):
        with load(small_node, nginx, rank=rank, world_size=3) as loader:
            shares.append(labels(loader, 0))
    assert len({len(share) for share in shares}) == 1
    together = sorted(label for share in shares for label in share)
    assert together == list(range(SHARDS * PER_SHARD))  # 48 = 3 x 16: no padding


def test_refusals(small_node, nginx):
    with pytest.raises(errors.ResourceExhausted, match="--cache_size"):
        load(small_node, nginx, streaming=False)
    with pytest.raises(errors.ResourceExhausted, match="use shuffle_window=1"):
        load(small_node, nginx, shuffle_window=16)
    with pytest.raises(errors.InvalidArgument, match="repeated_augmentations"):
        load(small_node, nginx, streaming=True, repeated_augmentations=2)
    with pytest.raises(errors.InvalidArgument, match="remote shards only"):
        stoker.DataLoader(root="/tmp", streaming=True, transform=TRANSFORM,
                          socket=small_node.socket)
