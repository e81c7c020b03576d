"""stokerd's decode throughput against its worker count: for each count, a
stokerd of that many workers and bench_e2e's C++ client consuming the
train pipeline (RandomResizedCrop(224) + flip, uint8, batch 64); the first
epoch warms up, the next ones are measured.

  scaling.py --data=DIR [--workers=1,2,4,8,15]

Efficiency is images/s over (workers x the one-worker figure); goal >= 85%.
"""
import argparse
import os
import subprocess

from common import Stokerd, emit


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--data", required=True)
    parser.add_argument("--workers", default="1,2,4,8,15")
    parser.add_argument("--bench", default=os.environ.get("BENCH_E2E"))
    parser.add_argument("--seconds", type=float, default=4,
                        help="about how long each count is measured")
    parser.add_argument("--one_worker_images_per_s", type=float, default=250,
                        help="a first guess, to size the epochs")
    args = parser.parse_args()
    images = sum(len(files) for _, _, files in os.walk(args.data))
    base = None
    for workers in (int(w) for w in args.workers.split(",")):
        guess = (base or args.one_worker_images_per_s) * workers
        epochs = 1 + max(1, round(args.seconds * guess / images))
        with Stokerd(workers) as daemon:
            out = subprocess.run(
                [args.bench, "--mode=client", f"--target=unix://{daemon.socket}",
                 f"--data={args.data}", "--pipeline=train", "--batch_size=64",
                 f"--epochs={epochs}"],
                check=True, capture_output=True, text=True).stdout
        rate = float(dict(line.split() for line in out.splitlines()
                          if len(line.split()) == 2)["images_per_s"])
        base = base or rate / workers
        emit("scaling", workers=workers, images_per_s=rate,
             per_worker=rate / workers, efficiency=rate / (workers * base),
             epochs_measured=epochs - 1, goal=">= 0.85")


if __name__ == "__main__":
    main()
