#!/usr/bin/python3
"""stoker against torch's DataLoader, side by side, in one run on the same
files (run through bench/compare_torch.sh, which builds and installs).

  (a) torch DataLoader: torchvision RandomResizedCrop(224) +
      RandomHorizontalFlip + ToTensor + Normalize, batch 64,
      num_workers = cores, persistent workers;
  (b) stokerd with the same pipeline, uint8 output and float32 output
      (normalised), its C++ client consuming in another process; and the
      Python stoker.DataLoader given the same torchvision transform
      (bench/stoker_python_loader.py), next to the C++ client reading every
      value of every batch as the Python loop does;
  (c) the bare libjpeg-turbo full-decode loop on one thread.

Prints images/s, images/s per core, peak memory (proportional set size,
PSS, summed over the processes involved and sampled every 20 ms, so pages
shared between them, like the ring or the DataLoader's shared tensors, are
not counted twice), and the ratios the targets are stated in.
"""
import argparse
import os
import subprocess
import sys
import tempfile
import threading
import time

try:
    import psutil
except ImportError:
    sys.exit("compare_torch: python3-psutil is missing "
             "(apt-get install python3-psutil)")


def pss_of_tree(roots):
    """Summed PSS of the given processes and all their descendants."""
    total = 0
    for root in roots:
        try:
            procs = [root] + root.children(recursive=True)
        except psutil.NoSuchProcess:
            continue
        for proc in procs:
            try:
                total += proc.memory_full_info().pss
            except (psutil.NoSuchProcess, psutil.AccessDenied):
                pass
    return total


class PeakMemory:
    """Samples the summed PSS of some process trees until stopped."""

    def __init__(self, pids):
        self.roots = [psutil.Process(pid) for pid in pids]
        self.peak = 0
        self.done = threading.Event()
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.thread.start()

    def run(self):
        while not self.done.wait(0.02):
            self.peak = max(self.peak, pss_of_tree(self.roots))

    def stop(self):
        self.done.set()
        self.thread.join()
        return self.peak


def results(text):
    """'key value' lines -> dict of floats."""
    out = {}
    for line in text.splitlines():
        parts = line.split()
        if len(parts) == 2:
            try:
                out[parts[0]] = float(parts[1])
            except ValueError:
                pass
    return out


def run_measured(command, extra_pids=()):
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, text=True)
    memory = PeakMemory([proc.pid, *extra_pids])
    out, _ = proc.communicate()
    peak = memory.stop()
    if proc.returncode != 0:
        sys.exit(f"compare_torch: {' '.join(command)} failed")
    return results(out), peak


def run_torch(args, step_ms=0):
    here = os.path.dirname(os.path.abspath(__file__))
    r, peak = run_measured(
        ["/usr/bin/python3", os.path.join(here, "torch_loader.py"),
         f"--data={args.data}", f"--epochs={args.epochs}",
         f"--workers={args.cores}", f"--step_ms={step_ms}"])
    return r, peak


def run_stoker(args, dtype, step_ms=0, python=False, touch=False):
    here = os.path.dirname(os.path.abspath(__file__))
    with tempfile.TemporaryDirectory(prefix="stoker-cmp") as tmp:
        socket = os.path.join(tmp, "stoker.sock")
        daemon = subprocess.Popen(
            [args.stokerd, "--config=", f"--socket=unix://{socket}",
             f"--workers={args.cores}", "--log_level=warn"])
        for _ in range(200):
            if os.path.exists(socket):
                break
            time.sleep(0.05)
        try:
            if python:
                command = ["/usr/bin/python3",
                           os.path.join(here, "stoker_python_loader.py"),
                           f"--data={args.data}", f"--socket={socket}",
                           f"--epochs={args.epochs}", f"--step_ms={step_ms}"]
            else:
                command = [args.bench, "--mode=client",
                           f"--target=unix://{socket}", f"--data={args.data}",
                           "--pipeline=train", f"--dtype={dtype}",
                           f"--epochs={args.epochs}", "--batch_size=64",
                           f"--step_ms={step_ms}", f"--touch={str(touch).lower()}"]
            r, peak = run_measured(command, extra_pids=[daemon.pid])
        finally:
            daemon.terminate()
            daemon.wait()
    return r, peak


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--data", required=True)
    parser.add_argument("--stokerd", required=True)
    parser.add_argument("--bench", required=True, help="bench_e2e binary")
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--cores", type=int, default=os.cpu_count())
    parser.add_argument("--step_ms", type=float, default=250,
                        help="simulated training step for the epoch-"
                        "boundary measurement (longer than either loader "
                        "needs per batch)")
    args = parser.parse_args()
    try:
        import torch  # noqa: F401
        import torchvision  # noqa: F401
    except ImportError:
        sys.exit("compare_torch: python3-torch and python3-torchvision are "
                 "missing (apt-get install python3-torchvision)")

    bare = results(subprocess.run(
        [args.bench, "--mode=bare_full", f"--data={args.data}"],
        check=True, capture_output=True, text=True).stdout)["images_per_s"]
    torch_r, torch_mem = run_torch(args)
    u8_r, u8_mem = run_stoker(args, "uint8")
    f32_r, f32_mem = run_stoker(args, "float32")
    torch_ips, u8_ips = torch_r["images_per_s"], u8_r["images_per_s"]
    f32_ips = f32_r["images_per_s"]
    touch_r, touch_mem = run_stoker(args, "float32", touch=True)
    py_r, py_mem = run_stoker(args, "float32", python=True)
    touch_ips, py_ips = touch_r["images_per_s"], py_r["images_per_s"]
    # The epoch boundary: a trainer whose step is slower than either loader,
    # so any wait is the loader's stall, not its throughput.
    torch_step, _ = run_torch(args, args.step_ms)
    stoker_step, _ = run_stoker(args, "float32", args.step_ms)

    cores = args.cores
    print(f"\n{cores} cores; RandomResizedCrop(224) + flip, batch 64, "
          f"epochs 2..{args.epochs} measured\n")
    print(f"{'':34}{'images/s':>10}{'per core':>10}{'peak PSS MB':>13}")
    rows = [("torch DataLoader (float32)", torch_ips, torch_mem),
            ("stoker, uint8 NHWC", u8_ips, u8_mem),
            ("stoker, float32 NCHW normalised", f32_ips, f32_mem),
            ("  C++ client reading every value", touch_ips, touch_mem),
            ("  Python stoker.DataLoader, same", py_ips, py_mem),
            ("bare libjpeg-turbo full decode", bare, None)]
    for name, ips, mem in rows:
        per_core = ips if mem is None else ips / cores
        mem_text = "" if mem is None else f"{mem / 1e6:13.0f}"
        print(f"{name:34}{ips:10.0f}{per_core:10.0f}{mem_text}")
    print()
    print(f"stoker uint8 / torch DataLoader          : {u8_ips / torch_ips:5.2f}x"
          "   (target >= 3)")
    print(f"stoker uint8 / ({cores} cores x bare decode)  : "
          f"{u8_ips / (cores * bare):5.2f}    (target >= 0.85)")
    print(f"stoker uint8 memory / DataLoader memory : "
          f"{u8_mem / torch_mem:5.2f}    (target <= 0.25)")
    print(f"stoker float32 / torch DataLoader        : {f32_ips / torch_ips:5.2f}x")
    print(f"Python stoker.DataLoader / C++ client    : {py_ips / touch_ips:5.2f}"
          "    (target >= 0.95)")
    print(f"Python stoker.DataLoader / torch DataLoader: "
          f"{py_ips / torch_ips:5.2f}x  (target >= 3)")
    print(f"Python stoker.DataLoader memory / DataLoader memory: "
          f"{py_mem / torch_mem:5.2f}")
    print(f"Python trainer input-bound: {py_r.get('input_bound_percent', -1):.0f}%")
    print(f"\nEpoch boundary, with a {args.step_ms:.0f} ms training step per "
          "batch (wait in ms for a batch):")
    print(f"{'':34}{'first of epoch':>16}{'median other':>14}")
    for name, r in (("torch DataLoader", torch_step),
                    ("stoker float32", stoker_step)):
        print(f"{name:34}{r['epoch_start_wait_ms']:16.1f}"
              f"{r['median_wait_ms']:14.1f}")


if __name__ == "__main__":
    main()
