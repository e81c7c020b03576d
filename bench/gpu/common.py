"""What the GPU benchmarks share: a stokerd of their own, samplers of the
GPU's busy time, of host CPU and of memory, and one JSON line per result.

Every part of bench/gpu/run.sh is a script that prints `RESULT {json}`
lines; run.sh gathers them and summarize.py turns them into the table.
"""
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from compare_torch import pss_of_tree  # noqa: E402  (bench/compare_torch.py)

import psutil  # noqa: E402


def output_tail(dtype, mean, std):
    """The transform's conversion for a batch dtype: uint8 as it was
    decoded, or float32 normalised with mean and std."""
    import torchvision.transforms as T
    if dtype == "uint8":
        return [T.PILToTensor()]
    return [T.ToTensor(), T.Normalize(mean, std)]


def timed_steps(batches, step, seconds, sync):
    """Training steps on `batches` for `seconds`: (steps, seconds spent
    waiting in next(), elapsed seconds, the GPU's work included)."""
    waited, steps, start = 0.0, 0, time.monotonic()
    while time.monotonic() - start < seconds:
        before = time.monotonic()
        images, labels = next(batches)
        waited += time.monotonic() - before
        step(images, labels)
        steps += 1
    sync()
    return steps, waited, time.monotonic() - start


def emit(part, **fields):
    """One result line, read by run.sh."""
    print("RESULT " + json.dumps({"part": part, **fields}), flush=True)


def stokerd_path():
    path = os.environ.get("STOKERD")
    if not path:
        sys.exit("STOKERD is not set (run through bench/gpu/run.sh)")
    return path


class Stokerd:
    """A stokerd on a private socket with `workers` threads, stopped on
    exit of the with-block; its log goes to `log_dir`."""

    def __init__(self, workers, log_dir=None):
        self.dir = tempfile.mkdtemp(prefix="stoker-gpu-")
        self.socket = os.path.join(self.dir, "stoker.sock")
        log_dir = log_dir or os.environ.get("STOKER_GPU_LOGS") or self.dir
        self.log_path = os.path.join(log_dir, f"stokerd-{workers}w-{os.getpid()}.log")
        self.args = [stokerd_path(), "--config=", f"--socket={self.socket}",
                     f"--workers={workers}", "--log_level=warn"]

    def __enter__(self):
        described = subprocess.run(self.args + ["--check_config"], text=True,
                                   capture_output=True, check=True).stdout
        self.prefix = re.search(r"^# rings: /dev/shm/(\S+)\*$", described,
                                re.M).group(1)
        self.log = open(self.log_path, "a")
        self.process = subprocess.Popen(self.args, stderr=self.log)
        deadline = time.monotonic() + 30
        while not os.path.exists(self.socket):
            if self.process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"stokerd did not start; see {self.log_path}")
            time.sleep(0.02)
        return self

    def __exit__(self, *exc):
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self.log.close()
        left = [n for n in os.listdir("/dev/shm") if n.startswith(self.prefix)]
        for name in left:  # a killed daemon's rings; never another's
            os.unlink(os.path.join("/dev/shm", name))
        shutil.rmtree(self.dir, ignore_errors=True)


class Sampler:
    """Samples, every `period` s until stopped: the GPU's busy percentage
    (NVML's utilization, as nvidia-smi shows it), the host's CPU
    percentage, and the summed PSS of some process trees (peak)."""

    def __init__(self, pids, period=0.1, gpu_index=0):
        self.roots = [psutil.Process(pid) for pid in pids]
        self.period = period
        self.gpu_busy = []
        self.cpu = []
        self.peak_pss = 0
        self._nvml = None
        try:
            import pynvml
            pynvml.nvmlInit()
            self._nvml = pynvml
            self._handle = pynvml.nvmlDeviceGetHandleByIndex(gpu_index)
        except Exception:  # no NVML (no GPU, or no nvidia-ml-py): no figure
            self._nvml = None
        psutil.cpu_percent()  # starts the interval
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self):
        ticks = 0
        while not self._done.wait(self.period):
            if self._nvml is not None:
                rates = self._nvml.nvmlDeviceGetUtilizationRates(self._handle)
                self.gpu_busy.append(rates.gpu)
            ticks += 1
            if ticks % 5 == 0:  # PSS reads /proc/*/smaps: not every tick
                self.cpu.append(psutil.cpu_percent())
                self.peak_pss = max(self.peak_pss, pss_of_tree(self.roots))

    def stop(self):
        self._done.set()
        self._thread.join()
        mean = lambda xs: sum(xs) / len(xs) if xs else None  # noqa: E731
        return {"gpu_busy_percent": mean(self.gpu_busy),
                "host_cpu_percent": mean(self.cpu),
                "peak_pss_mb": self.peak_pss / 1e6}
