"""One DataLoader iterated from several threads at once: the iterations
take turns or are refused with a clear error, and no job is left behind
when the process exits (four threads used to leave 15-16 jobs running)."""
import os
import subprocess
import sys

import pytest
from conftest import make_dataset

torch = pytest.importorskip("torch")

import stoker  # noqa: E402


def test_threads_sharing_a_loader_leave_no_job(daemon, scratch):
    root = make_dataset(os.path.join(scratch, "data"), classes=2, per_class=16)
    script = os.path.join(scratch, "threads.py")
    with open(script, "w") as f:
        f.write(f"""
import threading, stoker, torchvision.transforms as T
loader = stoker.DataLoader({root!r}, batch_size=4, socket={daemon.socket!r},
                           transform=T.Compose([T.RandomResizedCrop(16),
                                                T.PILToTensor()]))
outcomes = []
def run():
    for _ in range(6):
        try:
            for images, labels in loader:
                assert images.shape == (4, 3, 16, 16)
            outcomes.append("epoch")
        except RuntimeError as error:  # another thread's iter() took over
            assert "replaced by a newer iter(loader)" in str(error), error
            outcomes.append("replaced")
threads = [threading.Thread(target=run) for _ in range(4)]
for t in threads:
    t.start()
for t in threads:
    t.join()
print(len(outcomes), outcomes.count("epoch"), flush=True)
""")  # exits without close(): the loader's finalizer deletes the job
    done = subprocess.run([sys.executable, script], capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    total, epochs = map(int, done.stdout.split())
    assert total == 24 and epochs >= 1
    with stoker.Client(daemon.socket) as client:
        assert client.list_jobs() == []


def test_a_loader_whose_construction_fails_leaves_no_job(daemon, scratch):
    """The job exists before the batch transform is checked against it (it
    needs the class count): a refusal then deletes it, and so does a
    failure to attach."""
    data = make_dataset(os.path.join(scratch, "data"), classes=3)
    T = pytest.importorskip("torchvision.transforms")
    transform = T.Compose([T.RandomResizedCrop(32), T.ToTensor()])
    with pytest.raises(stoker.InvalidArgument, match="num_classes"):
        stoker.DataLoader(data, batch_size=4, transform=transform,
                          socket=daemon.socket,
                          batch_transform=stoker.MixUp(alpha=0.2,
                                                       num_classes=2))
    with pytest.raises(stoker.StokerError):
        stoker.DataLoader(data, batch_size=4, transform=transform,
                          socket=daemon.socket, prefetch=1 << 20)
    with stoker.Client(daemon.socket) as client:
        assert client.list_jobs() == []
