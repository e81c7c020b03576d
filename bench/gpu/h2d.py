"""Host-to-device bandwidth of a batch: copied by stoker from its registered
ring, against cudaMemcpyAsync (torch's copy_) from pinned memory
(cudaMallocHost, torch's pin_memory) and from pageable memory.

  h2d.py --data=DIR [--batch=256] [--size=224] [--copies=8]

Batches are uint8 NHWC (256x224x224x3, 38.5 MB) and float32 NCHW
normalised (256x3x224x224, 154 MB). Each ring copy is timed by CUDA events
around it alone: the stream is held by a sleeping kernel while the copies
are queued, so the time never includes the daemon's decoding.
"""
import argparse
import time

import torch
import torchvision.transforms as T

import stoker
from stoker import _native

from common import Stokerd, emit, output_tail

MEAN, STD = [0.485, 0.456, 0.406], [0.229, 0.224, 0.225]


def torch_copies(nbytes, pinned, copies):
    """GB/s of `copies` copies of nbytes host->device (best of the runs)."""
    source = torch.empty(nbytes, dtype=torch.uint8, pin_memory=pinned)
    source.fill_(7)  # pages touched before timing
    target = torch.empty(nbytes, dtype=torch.uint8, device="cuda")
    best = 0.0
    for _ in range(copies):
        start = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        start.record()
        target.copy_(source, non_blocking=True)
        end.record()
        end.synchronize()
        best = max(best, nbytes / (start.elapsed_time(end) / 1e3) / 1e9)
    return best


def endless(loader):
    """The loader's batches, epoch after epoch."""
    while True:
        yield from loader


def ring_copies(args, daemon, dtype, copies):
    """GB/s of stoker's copies from the ring, each timed alone."""
    transform = T.Compose([T.Resize(args.size + 32), T.CenterCrop(args.size),
                           *output_tail(dtype, MEAN, STD)])
    loader = stoker.DataLoader(args.data, batch_size=args.batch,
                               transform=transform, socket=daemon.socket,
                               device="cuda", slots=copies + 2,
                               prefetch=copies + 1)
    try:
        it = endless(loader)
        first, _ = next(it)  # warm: the daemon then fills every slot
        copier = loader._resources.stream._copier  # the stream iter() uses
        pinned = bool(_native.library().stoker_cuda_copier_pinned(copier))
        nbytes = first.numel() * first.element_size()
        time.sleep(max(2.0, copies * args.batch / 2000))
        events = [torch.cuda.Event(enable_timing=True) for _ in range(copies + 1)]
        torch.cuda._sleep(int(3e9))  # ~1.5 s: the copies queue behind it
        events[0].record()
        held = []
        for k in range(copies):
            held.append(next(it))
            events[k + 1].record()
        torch.cuda.synchronize()
        seconds = [events[k].elapsed_time(events[k + 1]) / 1e3
                   for k in range(copies)]
        return nbytes, pinned, max(nbytes / s / 1e9 for s in seconds)
    finally:
        loader.close()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--data", required=True)
    parser.add_argument("--batch", type=int, default=256)
    parser.add_argument("--size", type=int, default=224)
    parser.add_argument("--copies", type=int, default=6)
    parser.add_argument("--workers", type=int, default=15)
    args = parser.parse_args()
    if not torch.cuda.is_available():
        emit("h2d", skipped="no CUDA device")
        return
    if not _native.library().stoker_cuda_available():
        emit("h2d", skipped="libstoker built without CUDA")
        return
    with Stokerd(args.workers) as daemon:
        for dtype in ("uint8", "float32"):
            nbytes, pinned, ring = ring_copies(args, daemon, dtype, args.copies)
            pinned_gbs = torch_copies(nbytes, True, args.copies)
            pageable_gbs = torch_copies(nbytes, False, args.copies)
            emit("h2d", dtype=dtype, mb=nbytes / 1e6, ring_registered=pinned,
                 ring_gbs=ring, pinned_gbs=pinned_gbs,
                 pageable_gbs=pageable_gbs,
                 ring_over_pinned=ring / pinned_gbs, goal=">= 0.90")


if __name__ == "__main__":
    main()
