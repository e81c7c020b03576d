"""stoker beside forked processes: torch DataLoader workers and
multiprocessing children of a trainer that uses stoker.DataLoader.

Nothing of stoker runs in a forked child against the parent's connection,
threads or ring: finalizers and atexit forget the parent's objects there,
using one raises stoker.ForkedProcess, and so does connecting anew once the
parent has connected (gRPC does not survive fork). Each case runs in its own
interpreter under a deadline, several times: before, a dropped loader's
reference cycle was collected in torch's workers, which died ("terminate
called without an active exception"), hung in DeleteJob or segfaulted, and a
loader made in a forked child hung for ever."""
import os

import pytest
from conftest import make_dataset, run_python

torch = pytest.importorskip("torch")

import stoker  # noqa: E402

PRELUDE = """
import gc, multiprocessing, os, sys
import torch, stoker, torchvision.transforms as T
from torch.utils.data import DataLoader as TorchLoader, TensorDataset
ROOT, SOCKET = sys.argv[1], sys.argv[2]
TRANSFORM = T.Compose([T.RandomResizedCrop(16), T.PILToTensor()])

def loader():
    return stoker.DataLoader(ROOT, batch_size=4, shuffle=True,
                             transform=TRANSFORM, socket=SOCKET)

def evaluate():
    # A plain torch DataLoader with forked workers (a validation set).
    data = TorchLoader(TensorDataset(torch.arange(64.0)), batch_size=8,
                       num_workers=2)
    assert sum(b[0].sum().item() for b in data) == 2016.0

def jobs():
    with stoker.Client(SOCKET) as client:
        return [j["id"] for j in client.list_jobs()]
"""

CASES = {
    # A loop left early (break, no close()), the loader dropped: its job
    # ends at once, even with the cycle collector off, and torch's workers
    # fork and finish.
    "dropped_mid_epoch": """
gc.disable()
for run in range(3):
    for i, (images, labels) in enumerate(loader()):
        if i == 1:
            break
    del images, labels
    assert jobs() == [], jobs()
    evaluate()
print("ok")
""",
    # Every epoch run to its end, then dropped.
    "dropped_after_its_epochs": """
for run in range(3):
    epoch = loader()
    assert sum(1 for _ in epoch) == len(epoch)
    del epoch
    evaluate()
assert jobs() == []
print("ok")
""",
    # A new loader each epoch, evaluated with torch workers in between,
    # the previous one still alive while the workers fork.
    "a_loader_per_epoch": """
kept = None
for epoch in range(5):
    kept = loader()
    kept.set_epoch(epoch)
    for images, labels in kept:
        pass
    evaluate()
print("ok")
""",
    # A live loader in the middle of its epoch while workers fork and a
    # worker collects garbage and touches it: the worker gets
    # ForkedProcess, the parent's loader goes on.
    "live_loader_touched_in_a_worker": """
live = loader()
it = iter(live)
next(it)
def touch(worker):
    gc.collect()
    try:
        next(iter(live))
    except stoker.ForkedProcess as error:
        assert "forked" in str(error), error
    else:
        raise AssertionError("a worker used its parent's loader")
data = TorchLoader(TensorDataset(torch.arange(64.0)), batch_size=8,
                   num_workers=2, worker_init_fn=touch)
for _ in range(2):
    assert sum(b[0].sum().item() for b in data) == 2016.0
assert sum(1 for _ in it) == len(live) - 1  # the parent's job went on
print("ok")
""",
    # multiprocessing children: one drops its copy of the parent's loader
    # and exits through atexit; one makes a loader of its own (refused,
    # saying fork); the parent's job goes on.
    "multiprocessing_children": """
live = loader()
it = iter(live)
next(it)
def drop(queue):
    global live, it
    del live, it
    gc.collect()
    queue.put("dropped")
def make(queue):
    try:
        loader()
        queue.put("made one")
    except stoker.ForkedProcess as error:
        queue.put("refused: " + str(error))
context = multiprocessing.get_context("fork")
for target in (drop, make, drop):
    queue = context.Queue()
    child = context.Process(target=target, args=(queue,))
    child.start()
    answer = queue.get(timeout=60)
    child.join(60)
    assert child.exitcode == 0, child.exitcode
    assert answer == "dropped" or "fork" in answer, answer
pid = os.fork()
if pid == 0:  # a bare fork that exits through atexit (finalizers run)
    sys.exit(0)
assert os.waitpid(pid, 0)[1] == 0
assert sum(1 for _ in it) == len(live) - 1
print("ok")
""",
    # A child forked before the parent connected may use stoker itself.
    "child_forked_before_the_parent_connected": """
def own(queue):
    with loader() as mine:
        queue.put(sum(len(labels) for _, labels in mine))
context = multiprocessing.get_context("fork")
queue = context.Queue()
child = context.Process(target=own, args=(queue,))
child.start()
assert queue.get(timeout=60) == 24
child.join(60)
assert child.exitcode == 0
assert sum(len(labels) for _, labels in loader()) == 24
print("ok")
""",
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_forked_processes(daemon, scratch, case):
    root = make_dataset(os.path.join(scratch, "data"), classes=2, per_class=12)
    script = os.path.join(scratch, f"{case}.py")
    with open(script, "w") as f:
        f.write(PRELUDE + CASES[case])
    for _ in range(2):
        done = run_python(script, root, daemon.socket, timeout=120)
        assert done.returncode == 0 and done.stdout.strip() == "ok", (
            done.returncode, done.stdout, done.stderr[-3000:])
    with stoker.Client(daemon.socket) as client:
        assert client.list_jobs() == []


def test_one_thread_closing_while_three_iterate_leaves_no_job(daemon,
                                                              scratch):
    """Four threads on one loader, one of them closing it mid-way: no job
    outlives close() (a thread iterating then opened a new one)."""
    root = make_dataset(os.path.join(scratch, "data"), classes=2, per_class=16)
    script = os.path.join(scratch, "close.py")
    with open(script, "w") as f:
        f.write(PRELUDE + """
import threading
shared = loader()
seen, failures = [], []
def run(closer):
    try:
        for epoch in range(4):
            try:
                for _ in shared:
                    seen.append(1)
                    if closer and len(seen) >= 6:
                        shared.close()
                        return
            except (RuntimeError, ValueError) as error:
                # replaced by another thread's iter(), or closed
                assert "newer iter" in str(error) or "closed" in str(error)
        if closer:  # every iteration of this thread was replaced
            shared.close()
    except BaseException as error:
        failures.append(repr(error))
threads = [threading.Thread(target=run, args=(i == 0,)) for i in range(4)]
for t in threads:
    t.start()
for t in threads:
    t.join()
assert failures == [], failures
assert jobs() == [], jobs()
print("ok")
""")
    for _ in range(3):
        done = run_python(script, root, daemon.socket, timeout=120)
        assert done.returncode == 0, done.stderr[-3000:]
        with stoker.Client(daemon.socket) as client:
            assert client.list_jobs() == []
