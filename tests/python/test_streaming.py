"""Streamed remote shards (docs/remote.md, "Streaming") against a real
nginx: a dataset four times the node's shard cache read for two epochs,
every sample once per epoch (labels number the samples), about one
dataset's bytes fetched per epoch, the order a pure function of (seed,
epoch, rank) so that state_dict() and a daemon killed mid-epoch resume
exactly, ranks getting equal
shares, and the refusals that keep a job from failing later."""
import io
import json
import os
import tarfile

import pytest

torch = pytest.importorskip("torch")
from torchvision import transforms as T  # noqa: E402

import stoker  # noqa: E402
from stoker import errors  # noqa: E402
from conftest import Daemon, make_dataset, run_python  # noqa: E402
from remote_servers import Nginx  # noqa: E402
from test_multinode import TRAINER, WORLD, run_world  # noqa: E402

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


def small_daemon(directory, shard_dir, shards=2):
    """A stokerd whose shard cache holds `shards` of the eight shards (two:
    a quarter of the dataset)."""
    os.mkdir(directory)
    room = shards * max(os.path.getsize(os.path.join(shard_dir, n))
                        for n in os.listdir(shard_dir)) + 4096
    assert 0.9 * SHARDS / shards < dataset_bytes(shard_dir) / room <= SHARDS / shards
    return Daemon(directory, extra=[f"--cache_dir={directory}/cache",
                                    f"--cache_size={room}",
                                    f"--cache_size_per_user={room}"])


def stop_clean(daemon):
    daemon.stop()
    assert daemon.process.returncode == 0, daemon.read_log()
    assert daemon.segments() == []


@pytest.fixture
def small_node(scratch, shard_dir):
    d = small_daemon(os.path.join(scratch, "node"), shard_dir)
    yield d
    stop_clean(d)


def load(node, nginx, **kw):
    kw.setdefault("shuffle_window", 1)
    kw.setdefault("transform", TRANSFORM)
    kw.setdefault("batch_size", 4)
    kw.setdefault("seed", 3)
    return stoker.DataLoader(shards=nginx.url(f"s-{{000..{SHARDS - 1:03d}}}.tar"),
                             shuffle=True, socket=node.socket, **kw)


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


def test_a_batch_may_span_several_windows(small_node, nginx):
    # Batches of 16 over windows of one 6-sample shard: a batch needs three
    # windows, the cache holds two; each is let go once its rows are done.
    with load(small_node, nginx, batch_size=16) as loader:
        for epoch in range(2):
            assert sorted(labels(loader, epoch)) == list(range(SHARDS * PER_SHARD))


def test_two_jobs_reading_the_same_shards_at_once_fetch_them_once(
        scratch, nginx, shard_dir):
    """Two jobs with the same seed read in step (as two trainers of a sweep
    going at the same pace), each decoding at most two batches ahead, on a
    node whose cache holds their two windows each (half the dataset): each
    window is fetched once for both. (Jobs further apart than the cache's
    room beyond their own windows fetch again what the slower one needs:
    docs/remote.md.)"""
    node = small_daemon(os.path.join(scratch, "node"), shard_dir, 4)
    try:
        with load(node, nginx, slots=2) as a, load(node, nginx, slots=2) as b:
            for epoch in range(2):
                a.set_epoch(epoch)
                b.set_epoch(epoch)
                pairs = [(x.tolist(), y.tolist()) for (_, x), (_, y) in zip(a, b)]
                assert all(x == y for x, y in pairs)
                assert sorted(v for x, _ in pairs for v in x) == \
                    list(range(SHARDS * PER_SHARD))
        assert fetched(node) <= 1.1 * 2 * dataset_bytes(shard_dir)
    finally:
        stop_clean(node)


def test_a_trainer_killed_mid_epoch_resumes_exactly(small_node, nginx, scratch):
    """A trainer SIGKILLed after its third batch, its last checkpoint read
    by a new process: the same digests as an uninterrupted run. The killed
    trainer's job, orphaned, holds the user's share of the cache until the
    new job's first window ends it."""
    shards = nginx.url(f"s-{{000..{SHARDS - 1:03d}}}.tar")
    flags = ["--shards", "--streaming"]
    whole = os.path.join(scratch, "whole.json")
    run = run_python(TRAINER, small_node.socket, shards, whole, *flags)
    assert run.returncode == 0, run.stderr
    killed = os.path.join(scratch, "killed.json")
    run = run_python(TRAINER, small_node.socket, shards, killed, "--kill_at=3",
                     *flags)
    assert run.returncode == -9, run.stderr
    run = run_python(TRAINER, small_node.socket, shards, killed, *flags)
    assert run.returncode == 0, run.stderr
    with open(whole) as f, open(killed) as g:
        expected, got = json.load(f), json.load(g)
    assert len(expected["digests"]) == 2 * SHARDS * PER_SHARD // 4
    assert got["digests"] == expected["digests"]
    assert "make room in the shard cache" in small_node.read_log()


def test_four_ranks_on_two_daemons_get_equal_batches(scratch, shard_dir, nginx):
    """Two nodes, each its own cache (half the dataset: two ranks' windows),
    four trainer processes under torch.distributed: the same number of batches each, together every
    sample of each epoch once (48 = 4 x 12: no padding)."""
    nodes = [small_daemon(os.path.join(scratch, f"node-{n}"), shard_dir, 4)
             for n in "ab"]
    try:
        shards = nginx.url(f"s-{{000..{SHARDS - 1:03d}}}.tar")
        infos, runs = run_world(nodes, shards, scratch, ["--shards", "--streaming"])
    finally:
        for node in nodes:
            stop_clean(node)
    per_rank = SHARDS * PER_SHARD // WORLD
    assert [i["length"] for i in infos] == [per_rank // 4] * WORLD
    for epoch in range(2):
        union = []
        for run in runs:
            batches = run["labels"][epoch * per_rank // 4:(epoch + 1) * per_rank // 4]
            assert [len(b) for b in batches] == [4] * (per_rank // 4)
            union += [label for b in batches for label in b]
        assert sorted(union) == list(range(SHARDS * PER_SHARD)), epoch


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
    with load(small_node, nginx):
        # A second job of the same user would need two more windows than
        # its share of the cache holds.
        with pytest.raises(errors.ResourceExhausted, match="1 other streamed job"):
            load(small_node, nginx)
    with pytest.raises(errors.InvalidArgument, match="repeated_augmentations"):
        load(small_node, nginx, streaming=True, repeated_augmentations=2)
    with pytest.raises(errors.InvalidArgument, match="remote shards only"):
        stoker.DataLoader(root="/tmp", streaming=True, transform=TRANSFORM,
                          socket=small_node.socket)
