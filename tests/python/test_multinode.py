"""Several nodes, one stokerd each: two daemons (separate sockets and
directories) stand for two nodes, and four trainer processes under
torch.distributed (gloo), two per daemon, each create their own job with
their rank. No daemon talks to another: the split of an epoch is a pure
function of (seed, epoch, world_size). Every rank gets the same number of
batches, their union is the epoch (DistributedSampler's split, padded the
same way), also over tar shards of unequal sizes, local or in an S3 store
(each node fetching into its own shard cache with the trainers' own
credentials); a rank killed mid-run resumes exactly from its own state, on
either node."""
import json
import os
import subprocess
import sys
import tarfile

import pytest

torch = pytest.importorskip("torch")
datasets = pytest.importorskip("torchvision.datasets")
from torch.utils.data.distributed import DistributedSampler  # noqa: E402

from conftest import Daemon, make_dataset, run_python  # noqa: E402
from remote_servers import ACCESS_KEY, SECRET_KEY, S3Server  # noqa: E402
from test_sources import add_member  # noqa: E402

TRAINER = os.path.join(os.path.dirname(__file__), "trainer.py")
WORLD = 4
EPOCHS = 2


@pytest.fixture
def nodes(scratch):
    pair = []
    for name in ("node-a", "node-b"):
        directory = os.path.join(scratch, name)
        os.mkdir(directory)
        # Each node its own shard cache, for remote shards.
        pair.append(Daemon(directory,
                           extra=[f"--cache_dir={directory}/cache"]))
    yield pair
    for daemon in pair:
        daemon.stop()
        assert daemon.process.returncode == 0, daemon.read_log()
        assert daemon.segments() == [], "stokerd left segments in /dev/shm"


def uneven_shards(folder, out_dir, sizes):
    """The folder's samples in its order as shards of these sizes."""
    samples = datasets.ImageFolder(folder).samples
    assert sum(sizes) == len(samples)
    os.mkdir(out_dir)
    start = 0
    for shard, size in enumerate(sizes):
        with tarfile.open(os.path.join(out_dir, f"part-{shard}.tar"), "w") as tar:
            for i in range(start, start + size):
                file, label = samples[i]
                with open(file, "rb") as f:
                    add_member(tar, f"s{i:04d}.jpg", f.read())
                add_member(tar, f"s{i:04d}.cls", str(label).encode())
        start += size
    return os.path.join(out_dir, f"part-{{0..{len(sizes) - 1}}}.tar")


def run_world(nodes, dataset, scratch, flags, env=None):
    """The four ranks, 0 and 1 on the first node, 2 and 3 on the second;
    each rank's checkpoint (digests, labels) and its last line."""
    store = os.path.join(scratch, "store")
    processes = []
    for rank in range(WORLD):
        env = dict(env or os.environ, RANK=str(rank), WORLD_SIZE=str(WORLD))
        processes.append(subprocess.Popen(
            [sys.executable, TRAINER, nodes[rank // 2].socket, dataset,
             os.path.join(scratch, f"rank{rank}.json"),
             "--distributed=" + store, *flags],
            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
    outputs = [p.communicate(timeout=300) for p in processes]
    for p, (_, err) in zip(processes, outputs):
        assert p.returncode == 0, err
    infos = [json.loads(out.strip().splitlines()[-1]) for out, _ in outputs]
    runs = []
    for rank in range(WORLD):
        with open(os.path.join(scratch, f"rank{rank}.json")) as f:
            runs.append(json.load(f))
    return infos, runs


def check_split(infos, runs, order_of_epoch, samples):
    assert [(i["rank"], i["world_size"]) for i in infos] == \
        [(r, WORLD) for r in range(WORLD)]
    # ceil(samples / WORLD) each, in batches of 4: the same for every rank.
    per_rank = -(-samples // WORLD)
    assert [i["length"] for i in infos] == [-(-per_rank // 4)] * WORLD
    batches = infos[0]["length"]
    for epoch in range(EPOCHS):
        order = order_of_epoch(epoch)
        assert sorted(order) == list(range(samples))
        union = []
        for rank, run in enumerate(runs):
            got = [label for b in run["labels"][epoch * batches:
                                                (epoch + 1) * batches]
                   for label in b]
            sampler = DistributedSampler(order, num_replicas=WORLD,
                                         rank=rank, shuffle=False)
            assert got == [order[i] for i in sampler], (epoch, rank)
            union += got
        # Every sample at least once; the padding repeats the first ones.
        assert set(union) == set(range(samples))
        assert len(union) == per_rank * WORLD


def one_rank_order(nodes, dataset, scratch, flags, env=None):
    """The epoch orders a single rank sees: labels are sample ids here."""
    path = os.path.join(scratch, "one.json")
    run = run_python(TRAINER, nodes[0].socket, dataset, path, *flags, env=env)
    assert run.returncode == 0, run.stderr
    with open(path) as f:
        labels = json.load(f)["labels"]
    per_epoch = len(labels) // EPOCHS
    return lambda epoch: [label for b in labels[epoch * per_epoch:
                                                (epoch + 1) * per_epoch]
                          for label in b]


def s3_shards(scratch, folder):
    """The folder as uneven shards in an S3 store; (dataset, the trainers'
    environment with their own credentials, the server)."""
    uneven_shards(folder, os.path.join(scratch, "shards"), [4, 17, 9])
    server = S3Server(os.path.join(scratch, "s3"))
    for shard in range(3):
        server.put(f"uneven/part-{shard}.tar",
                   os.path.join(scratch, "shards", f"part-{shard}.tar"))
    env = dict(os.environ, AWS_ACCESS_KEY_ID=ACCESS_KEY,
               AWS_SECRET_ACCESS_KEY=SECRET_KEY, AWS_ENDPOINT_URL=server.endpoint)
    return "s3://data/uneven/part-{0..2}.tar", env, server


@pytest.mark.parametrize("source", ["folder", "uneven_shards", "s3_shards"])
def test_four_ranks_on_two_daemons_split_every_epoch(nodes, scratch, source):
    # 30 samples, one per class: a label names its sample.
    folder = make_dataset(os.path.join(scratch, "data"), classes=30,
                          per_class=1)
    dataset, flags, env, server = folder, [], None, None
    if source == "uneven_shards":
        dataset = uneven_shards(folder, os.path.join(scratch, "shards"),
                                [4, 17, 9])
        flags = ["--shards"]
    if source == "s3_shards":
        # The trainers' own credentials, from their environment; each node
        # fetches into its own cache.
        dataset, env, server = s3_shards(scratch, folder)
        flags = ["--shards"]
    try:
        order_of_epoch = one_rank_order(nodes, dataset, scratch, flags, env)
        infos, runs = run_world(nodes, dataset, scratch, flags, env)
    finally:
        if server is not None:
            server.stop()
    check_split(infos, runs, order_of_epoch, 30)
    if server is not None:
        for node in nodes:
            cached = os.listdir(os.path.join(node.dir, "cache"))
            assert len([n for n in cached if n.endswith(".tar")]) == 3


@pytest.mark.parametrize("source", ["folder", "s3_shards"])
def test_a_killed_rank_resumes_exactly_on_either_node(nodes, scratch, source):
    folder = make_dataset(os.path.join(scratch, "data"), classes=30,
                          per_class=1)
    dataset, flags, env, server = folder, [], dict(os.environ), None
    if source == "s3_shards":
        dataset, env, server = s3_shards(scratch, folder)
        flags = ["--shards"]
    try:
        _, runs = run_world(nodes, dataset, scratch, flags, env)
        expected = runs[2]["digests"]  # rank 2, on the second node
        assert len(expected) == EPOCHS * 2
        env = dict(env, RANK="2", WORLD_SIZE=str(WORLD))
        checkpoint = os.path.join(scratch, "killed.json")
        run = run_python(TRAINER, nodes[1].socket, dataset, checkpoint,
                         "--kill_at=3", *flags, env=env)
        assert run.returncode == -9, run.stderr
        # Resumed on the other node: the stream depends on nothing else.
        run = run_python(TRAINER, nodes[0].socket, dataset, checkpoint, *flags,
                         env=env)
        assert run.returncode == 0, run.stderr
    finally:
        if server is not None:
            server.stop()
    with open(checkpoint) as f:
        assert json.load(f)["digests"] == expected
