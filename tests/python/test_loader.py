"""stoker.DataLoader against a real stokerd: tensors equal to the C++ SDK's,
DataLoader semantics, leases, in-place writes, errors."""
import gc
import mmap
import os
import signal
import subprocess
import sys
import threading
import time

import pytest

torch = pytest.importorskip("torch")
T = pytest.importorskip("torchvision.transforms")
datasets = pytest.importorskip("torchvision.datasets")

import stoker  # noqa: E402
from conftest import Daemon, dump_batches, make_dataset  # noqa: E402

MEAN, STD = [0.485, 0.456, 0.406], [0.229, 0.224, 0.225]


def loader_for(daemon, dataset, transform, **kwargs):
    kwargs.setdefault("batch_size", 8)
    return stoker.DataLoader(dataset, transform=transform,
                             socket=daemon.socket, **kwargs)


def as_bytes(tensor):
    return tensor.contiguous().view(-1).view(torch.uint8).numpy().tobytes()


def eventually(condition, seconds=20):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.02)
    return False


# Same job spec both ways: (C++ flags, torchvision transform, dtype, shape of
# one image).
CASES = {
    "train-uint8-nhwc": (dict(pipeline="train"),
                         T.Compose([T.RandomResizedCrop(64),
                                    T.RandomHorizontalFlip()]),
                         torch.uint8, (64, 64, 3)),
    "train-float32-normalized": (
        dict(pipeline="train", dtype="float32", layout="NCHW", normalize=1),
        T.Compose([T.RandomResizedCrop(64), T.RandomHorizontalFlip(),
                   T.ToTensor(), T.Normalize(MEAN, STD)]),
        torch.float32, (3, 64, 64)),
    "eval-uint8-nchw": (dict(pipeline="eval", layout="NCHW"),
                        T.Compose([T.Resize(73), T.CenterCrop(64),
                                   T.PILToTensor()]),
                        torch.uint8, (3, 64, 64)),
    "jitter-float16": (
        dict(pipeline="train", jitter=1, dtype="float16", layout="NCHW"),
        T.Compose([T.RandomResizedCrop(64), T.RandomHorizontalFlip(),
                   T.ColorJitter(0.4, 0.4, 0.4), T.PILToTensor(),
                   T.ConvertImageDtype(torch.float16)]),
        torch.float16, (3, 64, 64)),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_tensors_equal_the_cpp_sdks(daemon, dataset, scratch, case):
    flags, transform, dtype, image_shape = CASES[case]
    batches = 2
    reference = dump_batches(daemon, dataset, os.path.join(scratch, "ref"),
                             batches=batches, batch_size=8, size=64, **flags)
    loader = loader_for(daemon, dataset, transform, shuffle=True)
    got = b""
    for i, (images, labels) in zip(range(batches), loader):
        assert images.dtype == dtype
        assert images.shape == (8, *image_shape)
        assert images.is_contiguous() and images.device.type == "cpu"
        assert labels.dtype == torch.int64 and labels.shape == (8,)
        got += as_bytes(images) + as_bytes(labels)
    assert got == reference
    loader.close()


def test_to_tensor_gives_floats_in_0_1(daemon, dataset):
    loader = loader_for(daemon, dataset,
                        T.Compose([T.RandomResizedCrop(32), T.ToTensor()]))
    images, _ = next(iter(loader))
    assert images.dtype == torch.float32 and images.shape[1] == 3
    assert 0.0 <= float(images.min()) and float(images.max()) <= 1.0
    assert float(images.max()) > 0.5  # not all dark: real pixels
    loader.close()


def epoch_labels(loader):
    return [label for _, labels in loader for label in labels.tolist()]


def test_len_drop_last_epochs_and_set_epoch(daemon, scratch):
    root = make_dataset(os.path.join(scratch, "d"), classes=5, per_class=7)
    reference = datasets.ImageFolder(root)
    n = len(reference)  # 35
    transform = T.Compose([T.Resize(40), T.CenterCrop(32)])
    loader = loader_for(daemon, root, transform, batch_size=8, shuffle=True,
                        seed=3)
    assert len(loader) == 5 and loader.num_samples == n
    assert loader.classes == reference.classes
    orders = []
    for epoch in range(3):  # no set_epoch: epochs advance by themselves
        sizes, got = [], []
        for images, labels in loader:
            sizes.append(len(labels))
            got += labels.tolist()
        assert sizes == [8, 8, 8, 8, 3]
        assert sorted(got) == sorted(reference.targets), f"epoch {epoch}"
        orders.append(got)
    assert orders[0] != orders[1] != orders[2]  # reshuffled every epoch
    # set_epoch picks the epoch, as DistributedSampler's does: the same
    # order whenever it is asked for.
    loader.set_epoch(1)
    assert epoch_labels(loader) == orders[1]
    loader.set_epoch(1)
    assert epoch_labels(loader) == orders[1]
    loader.close()
    dropping = loader_for(daemon, root, transform, batch_size=8,
                          drop_last=True)
    assert len(dropping) == 4
    assert [len(labels) for _, labels in dropping] == [8, 8, 8, 8]
    dropping.close()
    # shuffle=False: ImageFolder's order.
    ordered = loader_for(daemon, root, transform, batch_size=8)
    assert epoch_labels(ordered) == reference.targets
    ordered.close()


def test_a_loop_left_early_starts_the_next_epoch(daemon, dataset):
    loader = loader_for(daemon, dataset, T.RandomResizedCrop(32),
                        batch_size=4, shuffle=True)
    full = [ls.tolist() for _, ls in loader]  # epoch 0
    for i, _ in enumerate(loader):  # epoch 1, left after 2 batches
        if i == 1:
            break
    epoch2 = [ls.tolist() for _, ls in loader]
    reference = loader_for(daemon, dataset, T.RandomResizedCrop(32),
                           batch_size=4, shuffle=True)
    reference.set_epoch(2)
    assert epoch2 == [ls.tolist() for _, ls in reference]
    assert len(full) == len(loader) == len(epoch2)
    loader.close()
    reference.close()


def test_a_held_tensor_keeps_its_slot(daemon, dataset):
    loader = loader_for(daemon, dataset, T.RandomResizedCrop(32),
                        batch_size=2, slots=4)
    client = stoker.Client(daemon.socket)
    iterator = iter(loader)
    held, held_labels = next(iterator)
    copy = held.clone()
    # Many more batches than the ring has slots go by.
    for _ in range(2 * 4):
        images, labels = next(iterator)
    assert torch.equal(held, copy)  # its slot was not refilled

    def leased():
        job = [j for j in client.stats()["jobs"] if j["job_id"] == loader.job_id]
        return job[0]["leased_slots"]
    # Held: `held`, the current batch, and the prefetched ones.
    assert eventually(lambda: leased() == 2 + 2)
    del held, held_labels
    gc.collect()
    assert eventually(lambda: leased() == 1 + 2)
    loader.close()
    client.close()


def test_keeping_every_slot_is_an_error_not_a_hang(daemon, dataset):
    loader = loader_for(daemon, dataset, T.RandomResizedCrop(32),
                        batch_size=2, slots=3)
    kept = []
    with pytest.raises(stoker.ResourceExhausted, match="clone"):
        for batch in loader:
            kept.append(batch)
    assert len(kept) == 3
    loader.close()


def test_in_place_writes_stay_private(daemon, dataset, scratch):
    slots = 3
    reference = dump_batches(daemon, dataset, os.path.join(scratch, "ref"),
                             batches=3 * slots, batch_size=4, size=64)
    loader = loader_for(daemon, dataset, T.Compose([
        T.RandomResizedCrop(64), T.RandomHorizontalFlip()]), batch_size=4,
        slots=slots, shuffle=True)
    segment = os.path.join("/dev/shm", loader._stream.job["segment"]["name"])
    got = b""
    image_bytes = 4 * 64 * 64 * 3
    stream = (batch for _ in range(2) for batch in loader)  # 2 epochs of 6
    for i, (images, labels) in zip(range(3 * slots), stream):
        original = as_bytes(images)
        got += original + as_bytes(labels)
        images.sub_(7)  # an in-place op on the yielded tensor
        images[0, 0, 0, 0] = 255
        assert as_bytes(images) != original  # it did write, privately
        if i == 0:
            # The ring itself still holds the daemon's bytes.
            with open(segment, "rb") as f, mmap.mmap(
                    f.fileno(), 0, prot=mmap.PROT_READ) as ring:
                assert ring.find(original) >= 0
                assert ring.find(as_bytes(images)[:4096]) < 0
    # Slots refilled after a write show the new batch, not the write.
    assert got == reference
    assert len(got) == 3 * slots * (image_bytes + 4 * 8)
    loader.close()


def test_state_dict_resumes_at_the_next_batch(daemon, dataset):
    transform = T.Compose([T.RandomResizedCrop(32), T.ToTensor()])
    loader = loader_for(daemon, dataset, transform, batch_size=4, shuffle=True)
    run = [(images.clone(), labels.clone()) for _, (images, labels) in
           zip(range(2 * len(loader)), (b for _ in range(2) for b in loader))]
    loader.close()
    again = loader_for(daemon, dataset, transform, batch_size=4, shuffle=True)
    iterator = iter(again)
    for _ in range(3):
        held = next(iterator)  # still held when the state is taken
    state = again.state_dict()
    assert (state["epoch"], state["batch"]) == (0, 3)
    again.close()
    resumed = loader_for(daemon, dataset, transform, batch_size=4, shuffle=True)
    resumed.load_state_dict(state)
    rest = [(images.clone(), labels.clone()) for _ in range(2)
            for images, labels in resumed]
    assert len(rest) == 2 * len(resumed) - 3
    for (a, la), (b, lb) in zip(run[3:], rest):
        assert torch.equal(a, b) and torch.equal(la, lb)
    other = loader_for(daemon, dataset, transform, batch_size=8)
    with pytest.raises(stoker.InvalidArgument, match="batch_size"):
        other.load_state_dict(state)
    other.close()
    resumed.close()
    del held


def test_errors_carry_the_code_and_the_daemons_sentence(daemon, scratch):
    missing = os.path.join(scratch, "no-such-dataset")
    with pytest.raises(FileNotFoundError) as caught:
        loader_for(daemon, missing, T.RandomResizedCrop(32))
    assert isinstance(caught.value, stoker.NotFound)
    assert caught.value.code == 5 and caught.value.code_name == "NOT_FOUND"
    assert missing in str(caught.value)
    with pytest.raises(ConnectionError) as caught:
        stoker.DataLoader(scratch, transform=T.RandomResizedCrop(32),
                          socket=os.path.join(scratch, "nobody.sock"))
    assert isinstance(caught.value, stoker.Unavailable)
    with pytest.raises(stoker.InvalidArgument, match="sharing"):
        loader_for(daemon, scratch, T.RandomResizedCrop(32), sharing="all")


def test_a_full_shared_memory_budget_says_so(scratch):
    d = Daemon(scratch, extra=("--shm_budget=1M",))
    try:
        root = make_dataset(os.path.join(scratch, "d"), classes=1, per_class=2)
        with pytest.raises(stoker.ResourceExhausted) as caught:
            loader_for(d, root, T.RandomResizedCrop(224), batch_size=64)
        assert "budget" in str(caught.value) or "shared memory" in str(caught.value)
    finally:
        d.stop()
    assert d.segments() == []


def test_input_stats(daemon, dataset):
    loader = loader_for(daemon, dataset, T.RandomResizedCrop(32), batch_size=4)
    for _ in loader:
        time.sleep(0.01)
    stats = loader.input_stats()
    assert stats["batches"] == len(loader)
    assert stats["step_seconds"] >= 0.01 * (len(loader) - 1)
    assert 0 <= stats["input_bound_percent"] <= 100
    loader.close()


def test_management_client(daemon, dataset):
    with stoker.Client(daemon.socket) as client:
        job = client.create_job({"dataset": {"path": dataset},
                                 "batch_size": 4, "slots": 4, "name": "managed",
                                 "pipeline": [{"resize": {"height": 32,
                                                          "width": 32}}]})
        assert job["num_samples"] == 24 and job["batches_per_epoch"] == 6
        assert client.get_job(job["id"])["spec"]["name"] == "managed"
        assert [j["id"] for j in client.list_jobs()] == [job["id"]]
        stats = client.stats()
        assert stats["daemon"]["workers"] == 2
        assert isinstance(stats["daemon"]["uptime_ms"], int)
        assert stats["jobs"][0]["job_id"] == job["id"]
        client.delete_job(job["id"])
        assert client.list_jobs() == []
        with pytest.raises(stoker.NotFound):
            client.get_job(job["id"])
        with pytest.raises(stoker.InvalidArgument, match="no_such_field"):
            client.create_job({"no_such_field": 1})


def test_ctrl_c_stops_the_loop_cleanly(daemon, scratch):
    # A trainer waiting on a job that cannot progress (every sample is
    # being decoded slowly: a dataset of large images, one worker busy).
    root = make_dataset(os.path.join(scratch, "big"), classes=1, per_class=40,
                        width=3000, height=2000)
    script = os.path.join(scratch, "trainer.py")
    with open(script, "w") as f:
        f.write(f"""
import sys, stoker, torchvision.transforms as T
loader = stoker.DataLoader({root!r}, batch_size=40, socket={daemon.socket!r},
                           transform=T.RandomResizedCrop(32))
print("ready", flush=True)
try:
    for images, labels in loader:
        pass
except KeyboardInterrupt:
    print("interrupted", flush=True)
    sys.exit(3)
""")
    trainer = subprocess.Popen([sys.executable, script], stdout=subprocess.PIPE,
                               text=True)
    assert trainer.stdout.readline().strip() == "ready"
    time.sleep(0.3)  # inside the wait for the first batch
    sent = time.monotonic()
    trainer.send_signal(signal.SIGINT)
    out, _ = trainer.communicate(timeout=30)
    assert trainer.returncode == 3 and "interrupted" in out
    assert time.monotonic() - sent < 5
    with stoker.Client(daemon.socket) as client:
        assert eventually(lambda: client.list_jobs() == [])  # job deleted


def test_a_daemon_restart_resumes_after_the_last_yielded_batch(daemon, dataset):
    transform = T.Compose([T.RandomResizedCrop(32), T.ToTensor()])
    reference = loader_for(daemon, dataset, transform, batch_size=4,
                           shuffle=True)
    expected = [(i.clone(), l.clone()) for _ in range(2) for i, l in reference]
    reference.close()
    loader = loader_for(daemon, dataset, transform, batch_size=4, shuffle=True)
    got = []
    for epoch in range(2):
        for images, labels in loader:
            got.append((images.clone(), labels.clone()))
            if len(got) == 3:  # mid-epoch, holding batch 2
                daemon.kill()
                daemon.start()
    assert len(got) == len(expected)
    for (a, la), (b, lb) in zip(expected, got):
        assert torch.equal(a, b) and torch.equal(la, lb)
    loader.close()


def test_a_lease_timeout_is_raised_not_retried(scratch):
    d = Daemon(scratch, extra=("--lease_timeout=1s",))
    try:
        root = make_dataset(os.path.join(scratch, "d"))
        loader = loader_for(d, root, T.RandomResizedCrop(32), batch_size=4)
        started = time.monotonic()
        with pytest.raises(stoker.DeadlineExceeded) as caught:
            for images, labels in loader:
                time.sleep(2.5)  # holds the batch past the lease timeout
        assert "lease" in str(caught.value) or "held" in str(caught.value)
        assert time.monotonic() - started < 30
        loader.close()
    finally:
        d.stop()
    assert d.segments() == []


def test_broadcast_and_partition_jobs_shared_by_two_loaders(daemon, scratch):
    root = make_dataset(os.path.join(scratch, "d"), classes=4, per_class=6)
    targets = sorted(datasets.ImageFolder(root).targets)
    transform = T.Compose([T.RandomResizedCrop(32), T.PILToTensor()])
    owner = loader_for(daemon, root, transform, batch_size=4, shuffle=True,
                       sharing="broadcast", min_consumers=2)
    other = stoker.DataLoader(root, job_id=owner.job_id, socket=daemon.socket)
    assert len(other) == len(owner) == 6
    for _ in range(2):  # every batch to both, decoded once
        pairs = 0
        for (a, la), (b, lb) in zip(owner, other):
            assert torch.equal(a, b) and torch.equal(la, lb)
            pairs += 1
        assert pairs == 6
    with pytest.raises(stoker.FailedPrecondition):
        other.set_epoch(5)
    with pytest.raises(stoker.FailedPrecondition):
        owner.load_state_dict(owner.state_dict())
    other.close()
    owner.close()

    owner = loader_for(daemon, root, transform, batch_size=4, shuffle=True,
                       sharing="partition")
    other = stoker.DataLoader(root, job_id=owner.job_id, socket=daemon.socket)
    seen = {}

    def consume(name, loader):
        seen[name] = [label for _, labels in loader
                      for label in labels.tolist()]

    threads = [threading.Thread(target=consume, args=(n, l))
               for n, l in (("owner", owner), ("other", other))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    # Each batch of the epoch went to exactly one of them.
    assert sorted(seen["owner"] + seen["other"]) == targets
    other.close()
    owner.close()


def test_waiting_for_a_batch_does_not_hold_the_gil(daemon, dataset):
    # A broadcast job delivers nothing before its second consumer attaches,
    # which happens one second into the wait.
    owner = loader_for(daemon, dataset, T.RandomResizedCrop(32),
                       batch_size=4, sharing="broadcast", min_consumers=2)
    counted = [0]
    done = threading.Event()

    def count():
        while not done.is_set():
            counted[0] += 1

    joined = []
    counter = threading.Thread(target=count)
    counter.start()
    time.sleep(0.3)  # the counter's pace while this thread sleeps
    baseline = counted[0] / 0.3
    joiner = threading.Timer(1.0, lambda: joined.append(stoker.DataLoader(
        dataset, job_id=owner.job_id, socket=daemon.socket)))
    joiner.start()
    counted[0] = 0
    started = time.monotonic()
    images, labels = next(iter(owner))  # waits about a second
    waited = time.monotonic() - started
    during = counted[0] / waited
    done.set()
    counter.join()
    joiner.join()
    assert waited >= 0.9 and labels.shape == (4,)
    # The counter kept its pace during the wait. Were the GIL held inside
    # each 100 ms poll, it would get only the 5 ms switch intervals between
    # polls: about 5% of its pace (the bound leaves room for a loaded
    # machine).
    assert during > 0.25 * baseline, (during, baseline)
    del images, labels
    joined[0].close()
    owner.close()


def test_a_batch_held_past_the_lease_timeout_is_void_and_says_why(scratch):
    # Partition: what one loader held too long goes to the other, and the
    # one that held it hears the daemon's reason: never a silent second use.
    d = Daemon(scratch, extra=["--lease_timeout=1s"])
    try:
        root = make_dataset(os.path.join(scratch, "d"), classes=3,
                            per_class=4)
        targets = sorted(datasets.ImageFolder(root).targets)
        owner = loader_for(d, root, T.Compose([T.Resize((16, 16)),
                                               T.PILToTensor()]),
                           batch_size=2, sharing="partition")
        other = stoker.DataLoader(root, job_id=owner.job_id, socket=d.socket,
                                  prefetch=1)
        got = []

        def drain():
            # Holds no batch while it waits: nothing of its own times out.
            for _ in range(2):
                for batch in owner:
                    got.extend(batch[1].tolist())
                    del batch

        drained = threading.Thread(target=drain)
        drained.start()
        held = iter(other)
        _, lost = next(held)
        time.sleep(2.0)  # its step: longer than the lease timeout
        with pytest.raises(stoker.DeadlineExceeded) as caught:
            other.confirm()
        assert "may not be used, its lease was taken back" in str(caught.value)
        assert "held batch 0:" in str(caught.value)
        with pytest.raises(stoker.DeadlineExceeded):
            next(held)
        # The owner went on undisturbed (the batches taken back reach it
        # later, in whichever iteration is running: the C++ freeze tests
        # follow each batch).
        drained.join(timeout=60)
        assert not drained.is_alive()
        assert len(got) >= 2 * len(targets) - 4 and set(got) == set(targets)
        other.close()
        owner.close()
    finally:
        d.stop()
    assert d.segments() == []
