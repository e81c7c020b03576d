"""Does copying the next batch lengthen the training step? A training-like
step (bf16 matrix products sized to --step_ms, reading the whole batch) run
N times:

  resident        on one batch already on the GPU (the floor);
  trainer stream  on stoker.DataLoader(device="cuda") batches copied on the
                  trainer's current stream, behind its step (what
                  `.to(device, non_blocking=True)` after torch's DataLoader
                  does, and what stoker's loader did at first);
  loader stream   the loader as it is: each batch copied on the loader's
                  own stream, which the trainer's stream waits for, so that
                  the copy of batch i+1 runs while step i computes.

  overlap.py --data=DIR [--step_ms=5,15] [--steps=60]

The loop runs in rounds of a few steps, the ring refilled before each
(the GPU idle meanwhile): what is measured is the copy, not the daemon's
decoding, and the input-wait figure says whether that held.
Goal: per step <= 3% longer than resident.
"""
import argparse
import time

import torch
import torchvision.transforms as T

import stoker
import stoker.stream

from common import Stokerd, emit, output_tail


class Step:
    """A few ms of GPU work that reads the batch: its mean through a chain
    of bf16 matrix products sized to about `ms` milliseconds."""

    def __init__(self, ms, n=4096):
        self.a = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
        self.count = 1
        self(torch.zeros(8, device="cuda"))
        torch.cuda.synchronize()
        start = time.perf_counter()
        for _ in range(10):
            self(torch.zeros(8, device="cuda"))
        torch.cuda.synchronize()
        one = (time.perf_counter() - start) / 10
        self.count = max(1, round(ms / 1e3 / one))

    def __call__(self, images):
        x = self.a * images.float().mean().to(torch.bfloat16)
        for _ in range(self.count):
            x = x @ self.a
        return x


def timed(step, batches, steps, rounds=5, fill_s=0.0):
    """Seconds per step over `steps` steps in `rounds` rounds (after 3
    unmeasured), and the share of that time spent waiting in next(). Before
    each round the loop sleeps `fill_s` with the GPU idle, so that the
    daemon has refilled its ring: the rounds then measure the copy, not the
    decoding."""
    for _ in range(3):
        step(next(batches))
    per_round = max(1, steps // rounds)
    total = waited = 0.0
    for _ in range(rounds):
        torch.cuda.synchronize()
        time.sleep(fill_s)
        start = time.perf_counter()
        for _ in range(per_round):
            before = time.perf_counter()
            images = next(batches)
            waited += time.perf_counter() - before
            step(images)
        torch.cuda.synchronize()
        total += time.perf_counter() - start
    return total / (rounds * per_round), 100 * waited / total


def batches(loader):
    """The loader's images, epoch after epoch."""
    while True:
        for images, _ in loader:
            yield images


def copied_on(trainer_stream, step, loader, args):
    """timed() on the loader's batches copied on the trainer's stream or on
    the loader's own (a module setting, read at each next())."""
    stoker.stream.SIDE_STREAM_COPIES = not trainer_stream
    try:
        return timed(step, batches(loader), args.steps, fill_s=args.fill_s)
    finally:
        stoker.stream.SIDE_STREAM_COPIES = True


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--data", required=True)
    parser.add_argument("--batch", type=int, default=256)
    parser.add_argument("--size", type=int, default=224)
    parser.add_argument("--step_ms", default="5,15",
                        help="the step's lengths to try, in ms")
    parser.add_argument("--steps", type=int, default=60)
    parser.add_argument("--workers", type=int, default=15)
    parser.add_argument("--fill_s", type=float, default=0.5,
                        help="idle time before each round: the ring refills")
    args = parser.parse_args()
    if not torch.cuda.is_available():
        emit("overlap", skipped="no CUDA device")
        return
    steps = [Step(float(ms)) for ms in args.step_ms.split(",")]
    slots = args.steps // 5 + 4  # a round's batches, and a few more
    with Stokerd(args.workers) as daemon:
        for dtype, step in ((d, s) for d in ("uint8", "float32") for s in steps):
            transform = T.Compose([  # the images are 256x256: no resize
                T.Resize(256), T.CenterCrop(args.size),
                *output_tail(dtype, [0.5] * 3, [0.25] * 3)])
            loader = stoker.DataLoader(args.data, batch_size=args.batch,
                                       transform=transform, shuffle=True,
                                       drop_last=True, socket=daemon.socket,
                                       device="cuda", slots=slots)
            try:
                first, _ = next(iter(loader))
                resident = first.clone()
                floor, _ = timed(step, iter(lambda: resident, None), args.steps,
                                 fill_s=args.fill_s)  # the same idle gaps
                trainer, trainer_wait = copied_on(True, step, loader, args)
                own, own_wait = copied_on(False, step, loader, args)
            finally:
                loader.close()
            emit("overlap", dtype=dtype, step_ms=floor * 1e3,
                 trainer_stream_ms=trainer * 1e3, loader_stream_ms=own * 1e3,
                 trainer_stream_longer_percent=100 * (trainer / floor - 1),
                 loader_stream_longer_percent=100 * (own / floor - 1),
                 input_wait_percent=max(trainer_wait, own_wait),
                 goal="<= 3% longer")


if __name__ == "__main__":
    main()
