"""device="cuda": batches copied from the registered ring on the loader's
own stream, which the trainer's current stream waits for, equal the CPU
path's; skips without a GPU."""
import pytest

torch = pytest.importorskip("torch")
T = pytest.importorskip("torchvision.transforms")

import stoker  # noqa: E402
import stoker.stream  # noqa: E402
from stoker import _native  # noqa: E402

pytestmark = pytest.mark.skipif(
    not torch.cuda.is_available(), reason="no CUDA device visible to torch")


def test_gpu_batches_equal_the_cpu_ones(daemon, dataset):
    if not _native.library().stoker_cuda_available():
        pytest.skip("libstoker was built without CUDA")
    transform = T.Compose([T.RandomResizedCrop(64), T.RandomHorizontalFlip(),
                           T.ToTensor(), T.Normalize([0.5] * 3, [0.2] * 3)])
    cpu = stoker.DataLoader(dataset, batch_size=8, transform=transform,
                            shuffle=True, socket=daemon.socket)
    expected = [(i.clone(), l.clone()) for _ in range(2) for i, l in cpu]
    cpu.close()
    gpu = stoker.DataLoader(dataset, batch_size=8, transform=transform,
                            shuffle=True, socket=daemon.socket, device="cuda")
    stream = torch.cuda.Stream()
    got = []
    with torch.cuda.stream(stream):  # copies go on the current stream
        for _ in range(2):
            for images, labels in gpu:
                assert images.device.type == "cuda"
                assert labels.device.type == "cuda"
                images.mul_(1.0)  # work on the same stream, after the copy
                got.append((images, labels))
    stream.synchronize()
    assert len(got) == len(expected)
    for (a, la), (b, lb) in zip(expected, got):
        assert torch.equal(a, b.cpu()) and torch.equal(la, lb.cpu())
    gpu.close()


def test_copies_on_the_loaders_stream_are_waited_for_and_not_overwritten(
        daemon, dataset):
    """The loader copies on its own stream while the trainer's stream is
    still busy: the trainer's work must see each batch whole (its stream
    waits for the copy), and a batch's memory must not be reused for the
    next copy while the trainer's queued work still reads it (the caching
    allocator knows the tensor is used on the trainer's stream)."""
    if not _native.library().stoker_cuda_available():
        pytest.skip("libstoker was built without CUDA")
    transform = T.Compose([T.RandomResizedCrop(64), T.PILToTensor()])
    cpu = stoker.DataLoader(dataset, batch_size=8, transform=transform,
                            shuffle=True, socket=daemon.socket)
    expected = [int(i.double().sum()) for _ in range(3) for i, _ in cpu]
    cpu.close()
    gpu = stoker.DataLoader(dataset, batch_size=8, transform=transform,
                            shuffle=True, socket=daemon.socket, device="cuda")
    assert stoker.stream.SIDE_STREAM_COPIES
    sums = []
    for _ in range(3):
        for images, _ in gpu:
            # The trainer's stream is busy for a while; the next copy runs
            # meanwhile, and this batch is dropped before the work is done.
            torch.cuda._sleep(2_000_000)
            sums.append(images.double().sum())
            del images
    torch.cuda.synchronize()
    gpu.close()
    assert [int(s.item()) for s in sums] == expected


def test_fields_reach_the_gpu_with_their_values(daemon, scratch):
    """A job of named fields on the GPU: the image field copied, each
    caption read from the ring before the copy releases the batch."""
    if not _native.library().stoker_cuda_available():
        pytest.skip("libstoker was built without CUDA")
    import io
    import os
    import tarfile
    from conftest import photo_paths
    path = os.path.join(scratch, "pairs.tar")
    with tarfile.open(path, "w") as tar:
        for i, photo in enumerate(photo_paths()[:12]):
            with open(photo, "rb") as f:
                image = f.read()
            for name, data in ((f"{i:09d}{os.path.splitext(photo)[1]}", image),
                               (f"{i:09d}.txt", f"caption {i}".encode())):
                info = tarfile.TarInfo(name)
                info.size = len(data)
                tar.addfile(info, io.BytesIO(data))
    transform = T.Compose([T.Resize(64), T.CenterCrop(64), T.PILToTensor()])
    runs = []
    for device in ("cpu", "cuda"):
        loader = stoker.DataLoader(shards=path, fields=("jpg;png", "txt"),
                                   transform=transform, batch_size=4,
                                   socket=daemon.socket, device=device)
        runs.append([(images.cpu().clone(), captions)
                     for images, captions in loader])
        loader.close()
    assert [c for _, c in runs[1]] == [[f"caption {i}" for i in range(b, b + 4)]
                                       for b in range(0, 12, 4)]
    for (a, ca), (b, cb) in zip(*runs):
        assert torch.equal(a, b) and ca == cb
