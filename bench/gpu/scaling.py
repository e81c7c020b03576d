"""stokerd's decode throughput against its worker count: for each count, a
stokerd of that many workers and bench_e2e's C++ client consuming the
train pipeline (RandomResizedCrop(224) + flip, uint8, batch 64); the first
epoch warms up, the next ones are measured.

  scaling.py --data=DIR [--workers=1,2,4,8,15]

Efficiency is images/s over (workers x the one-worker figure); goal >= 90%
at the most workers. What limits it is read from stokerd itself over the
measured epochs: its CPU time per image (growing with the workers: each
image costs more, as when memory bandwidth, shared caches or clocks run
out), its CPU time over the workers' wall time (all its threads, the
warm-up epoch and the job's start included: well under 1, the workers
waited, for the client, a lock or a wake-up) and its context switches per
image (voluntary ones are waits).
"""
import argparse
import os
import subprocess
import time

from common import Stokerd, emit


def daemon_counters(pid):
    """stokerd's CPU seconds (its threads that ended included) and its
    context switches, summed over its live threads."""
    tick = os.sysconf("SC_CLK_TCK")
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    cpu = (int(fields[11]) + int(fields[12])) / tick  # utime, stime
    voluntary, forced = 0, 0
    for task in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{task}/status") as f:
                status = dict(line.split(":", 1) for line in f if ":" in line)
        except OSError:  # a thread that ended meanwhile
            continue
        voluntary += int(status["voluntary_ctxt_switches"])
        forced += int(status["nonvoluntary_ctxt_switches"])
    return cpu, voluntary, forced


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
    base = base_cpu = None
    for workers in (int(w) for w in args.workers.split(",")):
        guess = (base or args.one_worker_images_per_s) * workers
        epochs = 1 + max(1, round(args.seconds * guess / images))
        with Stokerd(workers) as daemon:
            before = daemon_counters(daemon.process.pid)
            started = time.monotonic()
            out = subprocess.run(
                [args.bench, "--mode=client", f"--target=unix://{daemon.socket}",
                 f"--data={args.data}", "--pipeline=train", "--batch_size=64",
                 f"--epochs={epochs}"],
                check=True, capture_output=True, text=True).stdout
            seconds = time.monotonic() - started
            after = daemon_counters(daemon.process.pid)
        figures = dict(line.split() for line in out.splitlines()
                       if len(line.split()) == 2)
        rate = float(figures["images_per_s"])
        # Over the whole run (the warm-up epoch included): ratios only.
        decoded = epochs * images
        cpu, voluntary, forced = (b - a for a, b in zip(before, after))
        cpu_ms = 1000 * cpu / decoded
        base = base or rate / workers
        base_cpu = base_cpu or cpu_ms
        emit("scaling", workers=workers, images_per_s=rate,
             per_worker=rate / workers, efficiency=rate / (workers * base),
             cpu_ms_per_image=cpu_ms, cpu_per_image_growth=cpu_ms / base_cpu,
             daemon_cpu_per_worker=cpu / (workers * seconds),
             voluntary_switches_per_image=voluntary / decoded,
             forced_switches_per_image=forced / decoded,
             epochs_measured=epochs - 1, goal=">= 0.90")


if __name__ == "__main__":
    main()
