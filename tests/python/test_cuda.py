"""device="cuda": batches copied from the registered ring on the trainer's
current stream equal the CPU path's; skips without a GPU."""
import pytest

torch = pytest.importorskip("torch")
T = pytest.importorskip("torchvision.transforms")

import stoker
from stoker import _native

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
