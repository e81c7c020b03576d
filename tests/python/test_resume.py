"""A Python trainer SIGKILLed mid-epoch resumes from its saved state with
exactly the remaining batches, byte-identical to an uninterrupted run; two
ranks under torch.distributed (gloo) split every epoch like
DistributedSampler."""
import json
import os
import subprocess
import sys

import pytest

torch = pytest.importorskip("torch")
from torch.utils.data.distributed import DistributedSampler  # noqa: E402

from conftest import make_dataset, run_python  # noqa: E402

TRAINER = os.path.join(os.path.dirname(__file__), "trainer.py")


def train(daemon, dataset, checkpoint, **flags):
    args = [daemon.socket, dataset, checkpoint]
    args += [f"--{k}={v}" for k, v in flags.items()]
    return run_python(TRAINER, *args)


def test_sigkill_and_exact_resume(daemon, dataset, scratch):
    whole = os.path.join(scratch, "whole.json")
    run = train(daemon, dataset, whole)
    assert run.returncode == 0, run.stderr
    with open(whole) as f:
        expected = json.load(f)["digests"]
    assert len(expected) == 2 * 6  # 24 samples, batches of 4, 2 epochs

    checkpoint = os.path.join(scratch, "killed.json")
    for kill_at in (4, 5):  # mid-epoch 0, then mid-epoch 1 of what is left
        run = train(daemon, dataset, checkpoint, kill_at=kill_at)
        assert run.returncode == -9, run.stderr
    run = train(daemon, dataset, checkpoint)
    assert run.returncode == 0, run.stderr
    with open(checkpoint) as f:
        assert json.load(f)["digests"] == expected


def test_two_ranks_under_torch_distributed_split_like_distributed_sampler(
        daemon, scratch):
    root = make_dataset(os.path.join(scratch, "d"), classes=6, per_class=5)
    store = os.path.join(scratch, "store")
    one = os.path.join(scratch, "one.json")
    run = train(daemon, root, one)  # the whole epoch order, one rank
    assert run.returncode == 0, run.stderr
    processes = []
    for rank in range(2):
        env = dict(os.environ, RANK=str(rank), WORLD_SIZE="2")
        processes.append(subprocess.Popen(
            [sys.executable, TRAINER, daemon.socket, root,
             os.path.join(scratch, f"rank{rank}.json"), "--distributed=" + store],
            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
    outputs = [p.communicate(timeout=300) for p in processes]
    for p, (out, err) in zip(processes, outputs):
        assert p.returncode == 0, err
    infos = [json.loads(out.strip().splitlines()[-1]) for out, _ in outputs]
    assert [(i["rank"], i["world_size"]) for i in infos] == [(0, 2), (1, 2)]
    assert [i["length"] for i in infos] == [4, 4]  # 15 samples each, by 4

    with open(one) as f:
        whole = json.load(f)["labels"]
    per_epoch = len(whole) // 2
    for epoch in range(2):
        order = [label for b in whole[epoch * per_epoch:(epoch + 1) * per_epoch]
                 for label in b]
        shards = []
        for rank in range(2):
            with open(os.path.join(scratch, f"rank{rank}.json")) as f:
                labels = json.load(f)["labels"]
            shards.append([label for b in labels[epoch * 4:(epoch + 1) * 4]
                           for label in b])
            # DistributedSampler's split of the same epoch order.
            sampler = DistributedSampler(order, num_replicas=2, rank=rank,
                                         shuffle=False)
            assert shards[rank] == [order[i] for i in sampler]
        assert sorted(shards[0] + shards[1]) == sorted(order)  # the epoch
