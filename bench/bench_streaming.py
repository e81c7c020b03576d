"""Streamed remote shards (docs/remote.md, "Streaming"), through a real
stokerd and nginx on the loopback:

  1. the rate of a streamed epoch with the shard cache at a quarter of the
     dataset, against the same shards read from local disk by the same
     daemon on the same cores (4096 photo-like 500x375 JPEGs in 32 shards
     by default, RandomResizedCrop(224) + flip): images/s of each epoch,
     the bytes each streamed epoch fetched over the dataset's, and the
     share of the cores nginx itself took meanwhile;
  2. CreateJob at LAION-2B's scale: 200,000 shard names of 10,000 samples
     each (2e9 samples) with a generated `stoker-index.tsv` beside them and
     no shard data, the time from the loader's construction to its length,
     the job's index memory as GetJob reports it, and stokerd's resident
     memory before and after.

  PYTHONPATH=build/python python3 bench/bench_streaming.py \\
      --stokerd=build/daemon/stokerd --make_dataset=build/bench/make_dataset
"""

import os
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "python"))

import stoker  # noqa: E402
from bench_remote import TRANSFORM  # noqa: E402  (RRC 224 + flip)
from bench_sources import (imagefolder_samples, report,  # noqa: E402
                           shard_bench_parser, start, write_shards)
from remote_servers import Nginx  # noqa: E402


def fetched_bytes(socket):
    with stoker.Client(socket) as client:
        return int(client.stats()["daemon"].get("shard_cache_fetched_bytes", 0))


def rss_mb(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return round(int(line.split()[1]) / 1024, 1)
    return 0.0


def cpu_seconds(pid):
    """User and system CPU of a process and its children (nginx's workers)."""
    pids = [pid] + [int(p) for p in subprocess.run(
        ["ps", "-o", "pid=", "--ppid", str(pid)], capture_output=True,
        text=True).stdout.split()]
    total = 0
    for p in pids:
        with open(f"/proc/{p}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        total += int(fields[11]) + int(fields[12])
    return total / os.sysconf("SC_CLK_TCK")


def epochs(socket, shards, epochs_run, server_pid=None, **kw):
    """images/s and fetched bytes of each epoch of one job (and the CPU the
    server used meanwhile, as a share of the cores)."""
    loader = stoker.DataLoader(shards=shards, batch_size=64, shuffle=True,
                               seed=1, transform=TRANSFORM, socket=socket, **kw)
    out = []
    for epoch in range(epochs_run):
        loader.set_epoch(epoch)
        before = fetched_bytes(socket)
        server = cpu_seconds(server_pid) if server_pid else 0
        t = time.perf_counter()
        images = sum(len(y) for _, y in loader)
        seconds = time.perf_counter() - t
        out.append({"seconds": round(seconds, 2),
                    "images_per_s": round(images / seconds, 1),
                    "fetched_mb": round((fetched_bytes(socket) - before) / 1e6, 1)})
        if server_pid:
            out[-1]["server_cpu_share"] = round(
                (cpu_seconds(server_pid) - server) / seconds / os.cpu_count(), 3)
    loader.close()
    return out


def streamed_epoch(args, scratch):
    folder = os.path.join(scratch, "folder")
    subprocess.run([args.make_dataset, f"--out={folder}", "--classes=16",
                    f"--per_class={args.images // 16}"], check=True,
                   stdout=subprocess.DEVNULL)
    shard_dir = os.path.join(scratch, "shards")
    os.mkdir(shard_dir)
    pattern = write_shards(imagefolder_samples(folder), shard_dir, args.shards)
    sizes = [os.path.getsize(os.path.join(shard_dir, n))
             for n in os.listdir(shard_dir)]
    total = sum(sizes)
    # A quarter of the dataset; the widest window two of which fit in it.
    cache = int(total * args.cache_fraction)
    window = args.window or max(1, cache // (2 * max(sizes)))
    nginx = Nginx(os.path.join(scratch, "nginx"), shard_dir)
    node = os.path.join(scratch, "node")
    os.mkdir(node)
    daemon, socket = start(args, node, [f"--cache_dir={node}/cache",
                                        f"--cache_size={cache}",
                                        f"--cache_size_per_user={cache}"])
    try:
        local = epochs(socket, pattern, args.epochs)
        remote = nginx.url(os.path.basename(pattern))
        streamed = epochs(socket, remote, args.epochs, nginx.process.pid,
                          streaming=True, shuffle_window=window)
    finally:
        daemon.terminate()
        daemon.wait()
        nginx.stop()
    rate = min(e["images_per_s"] for e in streamed[1:] or streamed)
    return {"images": args.images, "shards": args.shards,
            "dataset_mb": round(total / 1e6, 1),
            "cache_mb": round(cache / 1e6, 1), "shuffle_window": window,
            "workers": args.workers, "local": local, "streamed": streamed,
            "streamed_vs_local": round(rate / max(e["images_per_s"] for e in local), 3),
            "fetched_over_dataset": [round(e["fetched_mb"] * 1e6 / total, 3)
                                     for e in streamed]}


def laion_create(args, scratch):
    shards, per_shard, size = 200_000, 10_000, 500 * 1000 * 1000
    root = os.path.join(scratch, "laion-root")
    os.makedirs(os.path.join(root, "laion"))
    with open(os.path.join(root, "laion", "stoker-index.tsv"), "w") as f:
        f.write("# stoker shard index 1\n")
        for s in range(shards):
            f.write(f"{s:06d}.tar\t{per_shard}\t{size}\t-\n")
    nginx = Nginx(os.path.join(scratch, "nginx-laion"), root)
    node = os.path.join(scratch, "node-laion")
    os.mkdir(node)
    # A cache bound that two default windows (16 shards) of 500 MB fit in;
    # nothing is fetched: the shards do not exist.
    daemon, socket = start(args, node, [f"--cache_dir={node}/cache",
                                        "--cache_size=40G"])
    try:
        before = rss_mb(daemon.pid)
        t = time.perf_counter()
        loader = stoker.DataLoader(
            shards=nginx.url(f"laion/{{000000..{shards - 1:06d}}}.tar"),
            batch_size=256, shuffle=True, seed=1, transform=TRANSFORM,
            socket=socket)
        length = len(loader)
        create = time.perf_counter() - t
        after = rss_mb(daemon.pid)
        with stoker.Client(socket) as client:
            job = client.list_jobs()[0]
        loader.close()
    finally:
        daemon.terminate()
        daemon.wait()
        nginx.stop()
    return {"shards": shards, "samples": shards * per_shard,
            "batches_per_epoch": length, "create_s": round(create, 2),
            "index_mb": round(int(job.get("index_bytes", 0)) / 2**20, 1),
            "stokerd_rss_mb_before": before, "stokerd_rss_mb_after": after}


def main():
    parser = shard_bench_parser(__doc__.splitlines()[0], shards=32)
    parser.add_argument("--cache_fraction", type=float, default=0.25,
                        help="the shard cache's size over the dataset's")
    parser.add_argument("--window", type=int, default=0,
                        help="shuffle_window (default: the widest that fits)")
    args = parser.parse_args()
    scratch = tempfile.mkdtemp(prefix="stoker-bench-streaming-")
    try:
        results = {"laion_create": laion_create(args, scratch),
                   "streamed_epoch": streamed_epoch(args, scratch)}
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    report(results, args.json)


if __name__ == "__main__":
    main()
