"""Remote shards against local ones, on the same cores: the same tar shards
(4096 photo-like 500x375 JPEGs in 16 shards by default) read from local
disk, and from an S3-compatible server on the loopback (s3rver, as the
tests start it) through the daemon's shard cache:

  * the server's own rate for the same bytes (curl, 4 transfers at once,
    as the daemon fetches);
  * a local-shard job: its first and second epoch;
  * an S3 job with a cold cache: CreateJob (which fetches every shard) plus
    its first epoch, then its second epoch;
  * a second S3 job once the cache is warm: CreateJob (HEADs only) and one
    epoch;
  * per job, images/s and MB/s (shard bytes over the epoch's time), the
    shard cache's hits over its lookups, and stokerd's resident memory
    (peak while the job is created and read, sampled every 20 ms).

  PYTHONPATH=build/python python3 bench/bench_remote.py \\
      --stokerd=build/daemon/stokerd --make_dataset=build/bench/make_dataset
"""

import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "python"))

import stoker  # noqa: E402
from bench_sources import (imagefolder_samples, report,  # noqa: E402
                           shard_bench_parser, start, write_shards)
from remote_servers import ACCESS_KEY, SECRET_KEY, S3Server  # noqa: E402
from torchvision import transforms as T  # noqa: E402

TRANSFORM = T.Compose([T.RandomResizedCrop(224), T.RandomHorizontalFlip(),
                       T.PILToTensor()])


class PeakRss:
    """The peak resident memory of a process while in a `with` block."""

    def __init__(self, pid):
        self.pid, self.peak, self._stop = pid, 0, threading.Event()

    def _sample(self):
        while not self._stop.is_set():
            with open(f"/proc/{self.pid}/status") as f:
                for line in f:
                    if line.startswith("VmRSS:"):
                        self.peak = max(self.peak, int(line.split()[1]) * 1024)
            self._stop.wait(0.02)

    def __enter__(self):
        self._thread = threading.Thread(target=self._sample, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()


def cache_counts(socket):
    with stoker.Client(socket) as client:
        d = client.stats()["daemon"]
    return int(d.get("shard_cache_hits", 0)), int(d.get("shard_cache_misses", 0))


def run_job(socket, shards, nbytes, epochs, remote=None, daemon_pid=None):
    """CreateJob's time and each epoch's, with rates and the cache's hits."""
    hits0, misses0 = cache_counts(socket)
    with PeakRss(daemon_pid) as rss:
        t0 = time.perf_counter()
        loader = stoker.DataLoader(shards=shards, batch_size=64, shuffle=True,
                                   seed=1, transform=TRANSFORM, socket=socket,
                                   remote=remote)
        create = time.perf_counter() - t0
        times, images = [], 0
        for epoch in range(epochs):
            loader.set_epoch(epoch)
            t = time.perf_counter()
            images = sum(len(y) for _, y in loader)
            times.append(time.perf_counter() - t)
        loader.close()
    hits, misses = cache_counts(socket)
    lookups = (hits - hits0) + (misses - misses0)
    return {"create_s": round(create, 3),
            "epochs": [{"seconds": round(s, 3),
                        "images_per_s": round(images / s, 1),
                        "mb_per_s": round(nbytes / s / 1e6, 1)} for s in times],
            "first_epoch_with_create_images_per_s":
                round(images / (create + times[0]), 1),
            "cache_hit_ratio": round((hits - hits0) / lookups, 3) if lookups else None,
            "daemon_peak_rss_mb": round(rss.peak / 2**20, 1)}


def server_rate(server, keys, nbytes):
    """curl fetching every shard, 4 at once: the server's own MB/s."""
    t = time.perf_counter()
    procs = []
    for i, key in enumerate(keys):
        procs.append(subprocess.Popen(
            ["curl", "-sS", "--fail", "--aws-sigv4", "aws:amz:us-east-1:s3",
             "--user", f"{ACCESS_KEY}:{SECRET_KEY}",
             "-H", "x-amz-content-sha256: UNSIGNED-PAYLOAD",
             f"{server.endpoint}/{server.bucket}/{key}", "-o", os.devnull]))
        if len(procs) == 4 or i == len(keys) - 1:
            for p in procs:
                assert p.wait() == 0
            procs = []
    return round(nbytes / (time.perf_counter() - t) / 1e6, 1)


def main():
    args = shard_bench_parser(__doc__.splitlines()[0], shards=16).parse_args()
    scratch = tempfile.mkdtemp(prefix="stoker-bench-remote-")
    daemon = server = None
    try:
        folder = os.path.join(scratch, "folder")
        subprocess.run([args.make_dataset, f"--out={folder}", "--classes=16",
                        f"--per_class={args.images // 16}"], check=True,
                       stdout=subprocess.DEVNULL)
        shard_dir = os.path.join(scratch, "shards")
        os.mkdir(shard_dir)
        pattern = write_shards(imagefolder_samples(folder), shard_dir, args.shards)
        names = sorted(os.listdir(shard_dir))
        nbytes = sum(os.path.getsize(os.path.join(shard_dir, n)) for n in names)
        server = S3Server(os.path.join(scratch, "s3"))
        for name in names:
            server.put("train/" + name, os.path.join(shard_dir, name))
        rate = server_rate(server, ["train/" + n for n in names], nbytes)
        node = os.path.join(scratch, "node")
        os.mkdir(node)
        daemon, socket = start(args, node, [f"--cache_dir={node}/cache",
                                            "--cache_size=8G"])
        remote = {"endpoint_url": server.endpoint, "access_key_id": ACCESS_KEY,
                  "secret_access_key": SECRET_KEY}
        s3_pattern = "s3://data/train/" + os.path.basename(pattern)
        results = {
            "images": len(imagefolder_samples(folder)), "shards": len(names),
            "shard_mb": round(nbytes / 1e6, 1), "workers": args.workers,
            "server_mb_per_s": rate,
            "local": run_job(socket, pattern, nbytes, args.epochs,
                             daemon_pid=daemon.pid),
            "s3_cold": run_job(socket, s3_pattern, nbytes, args.epochs, remote,
                               daemon.pid),
            "s3_warm_job": run_job(socket, s3_pattern, nbytes, 1, remote,
                                   daemon.pid),
        }
        local = results["local"]["epochs"][-1]["images_per_s"]
        warm = results["s3_cold"]["epochs"][-1]["images_per_s"]
        results["warm_epoch_vs_local"] = round(warm / local, 3)
        report(results, args.json)
    finally:
        if daemon is not None:
            daemon.terminate()
            daemon.wait()
        if server is not None:
            server.stop()
        shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    main()
