"""How long a stoker.DataLoader loop stands still when stokerd restarts.

Each trial: take a batch, SIGKILL the daemon, start a new one 0.3 s later,
and time from that start to the first batch of the loader's re-created job.
Prints every trial and the median.

  PYTHONPATH=build/python python3 bench/bench_restart.py \\
      --stokerd=build/daemon/stokerd --make_dataset=build/bench/make_dataset
"""

import argparse
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time

import stoker
from torchvision import transforms as T


def start(stokerd: str, socket: str) -> subprocess.Popen:
    return subprocess.Popen(
        [stokerd, "--config=", f"--socket={socket}", "--workers=1"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def one_restart(loader, it, daemon, stokerd, socket):
    """Kills `daemon`, restarts it; returns (seconds, new daemon, iterator)."""
    old_job = loader.job_id
    daemon.send_signal(signal.SIGKILL)
    daemon.wait()
    restarted = {}

    def later():
        time.sleep(0.3)
        restarted["at"] = time.monotonic()
        restarted["daemon"] = start(stokerd, socket)

    thread = threading.Thread(target=later)
    thread.start()
    try:
        while loader.job_id == old_job:
            try:
                next(it)
            except StopIteration:
                it = iter(loader)
        got = time.monotonic()
    finally:
        thread.join()
    return got - restarted["at"], restarted["daemon"], it


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--stokerd", default="build/daemon/stokerd")
    parser.add_argument("--make_dataset", default="build/bench/make_dataset")
    parser.add_argument("--trials", type=int, default=15)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="stoker-restart-") as tmp:
        data = os.path.join(tmp, "data")
        subprocess.run([args.make_dataset, f"--out={data}", "--classes=2",
                        "--per_class=16"], check=True,
                       stdout=subprocess.DEVNULL)
        socket = os.path.join(tmp, "stoker.sock")
        daemon = start(args.stokerd, socket)
        loader = None
        try:
            loader = stoker.DataLoader(
                data, transform=T.Compose([T.Resize((32, 32)),
                                           T.PILToTensor()]),
                batch_size=4, socket=socket, reconnect_timeout=60)
            it = iter(loader)
            next(it)
            times = []
            for _ in range(args.trials):
                seconds, daemon, it = one_restart(loader, it, daemon,
                                                  args.stokerd, socket)
                times.append(seconds)
        finally:
            if loader is not None:
                loader.close()
            daemon.terminate()
            daemon.wait()
    times.sort()
    print("restart to next batch, s:", " ".join(f"{t:.2f}" for t in times))
    print(f"median {times[len(times) // 2]:.2f} s, "
          f"max {times[-1]:.2f} s over {len(times)} restarts")
    return 0


if __name__ == "__main__":
    sys.exit(main())
