"""The dataset sources side by side: an ImageFolder, WebDataset tar shards
and a manifest over the same images.

1. Throughput: the same JPEGs (4096 by default, 500x375 photo-like) as an
   ImageFolder, as 8 shards and as a CSV manifest; `stokerctl bench` on
   each (train pipeline, 224x224 uint8), in turns, --rounds times.
2. Scale: 1.28M samples (1000 classes of 1280, ImageNet-like names) as a
   tree of hard links to one small JPEG, as a manifest of that tree and as
   128 shards: for each, CreateJob time when the index is built and when a
   second job shares it, and the index's bytes per sample.
3. Sharing: 8 jobs over the 1.28M-sample tree: stokerd's resident memory
   before and after, and how many indexes it holds.

  PYTHONPATH=build/python python3 bench/bench_sources.py \\
      --stokerd=build/daemon/stokerd --stokerctl=build/client/stokerctl \\
      --make_dataset=build/bench/make_dataset
"""

import argparse
import io
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time

import stoker


def shard_bench_parser(description, shards):
    """The arguments the benchmarks over shards share (bench_remote,
    bench_streaming): the programs, the dataset's size, the run's, and
    where to write the results."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--stokerd", required=True)
    parser.add_argument("--make_dataset", required=True)
    parser.add_argument("--images", type=int, default=4096)
    parser.add_argument("--shards", type=int, default=shards)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--json", help="write the results here too")
    return parser


def report(results, path=None):
    """Prints the results as JSON, and writes them to `path` if given."""
    print(json.dumps(results, indent=1))
    if path:
        with open(path, "w") as f:
            json.dump(results, f, indent=1)


def start(args, directory, extra=()):
    socket = os.path.join(directory, "stoker.sock")
    log = open(os.path.join(directory, "stokerd.log"), "w")
    daemon = subprocess.Popen(
        [args.stokerd, "--config=", f"--socket={socket}",
         f"--workers={args.workers}", "--scan_timeout=30m", *extra],
        stdout=log, stderr=log)
    deadline = time.monotonic() + 30
    while not os.path.exists(socket):
        if daemon.poll() is not None or time.monotonic() > deadline:
            sys.exit("stokerd did not start")
        time.sleep(0.05)
    return daemon, socket


def imagefolder_samples(root):
    """(path, label) in torchvision's ImageFolder order (flat classes)."""
    classes = sorted(d for d in os.listdir(root)
                     if os.path.isdir(os.path.join(root, d)))
    return [(os.path.join(root, c, f), label)
            for label, c in enumerate(classes)
            for f in sorted(os.listdir(os.path.join(root, c)))]


def write_shards(samples, pattern_dir, count, data_of=None):
    """Consecutive runs of `samples` as `count` shards; their brace pattern."""
    per = -(-len(samples) // count)
    for shard in range(count):
        path = os.path.join(pattern_dir, f"shard-{shard:06d}.tar")
        with tarfile.open(path, "w", format=tarfile.USTAR_FORMAT) as tar:
            for i, (file, label) in enumerate(samples[shard * per:
                                                      (shard + 1) * per]):
                key = f"s{shard * per + i:08d}"
                data = data_of(file) if data_of else open(file, "rb").read()
                for name, payload in ((key + ".jpg", data),
                                      (key + ".cls", str(label).encode())):
                    info = tarfile.TarInfo(name)
                    info.size = len(payload)
                    tar.addfile(info, io.BytesIO(payload))
    return os.path.join(pattern_dir, f"shard-{{000000..{count - 1:06d}}}.tar")


def write_manifest(samples, path):
    base = os.path.dirname(path)
    with open(path, "w") as f:
        f.write("path,label\n")
        for file, label in samples:
            f.write(f"{os.path.relpath(file, base)},{label}\n")
    return path


def throughput(args, work, socket):
    root = os.path.join(work, "folder")
    subprocess.run([args.make_dataset, f"--out={root}", "--classes=8",
                    f"--per_class={args.images // 8}"], check=True,
                   capture_output=True)
    samples = imagefolder_samples(root)
    shards_dir = os.path.join(work, "shards")
    os.mkdir(shards_dir)
    sources = {
        "imagefolder": [root],
        "8 shards": [write_shards(samples, shards_dir, 8)],
        "manifest": [write_manifest(samples, os.path.join(work, "m.csv"))],
    }
    print(f"## throughput: {len(samples)} JPEGs, {args.workers} workers, "
          f"train pipeline 224x224 uint8, {args.seconds} s per run")
    rates = {name: [] for name in sources}
    for _ in range(args.rounds):
        for name, dataset in sources.items():
            out = subprocess.run(
                [args.stokerctl, f"--socket={socket}", "--json",
                 "--pipeline=train", "--batch_size=64",
                 f"--duration={args.seconds}s", "bench", *dataset],
                check=True, capture_output=True, text=True).stdout
            rates[name].append(json.loads(out)["images_per_second"])
    for name, values in rates.items():
        print(f"{name:12s} " + "  ".join(f"{v:7.1f}" for v in values) +
              "  images/s")


def tiny_jpeg(args, work):
    """One small real JPEG, read from a generated dataset."""
    root = os.path.join(work, "tiny")
    subprocess.run([args.make_dataset, f"--out={root}", "--classes=1",
                    "--per_class=1", "--width=32", "--height=24",
                    "--vary_size=false"], check=True, capture_output=True)
    (path, _), = imagefolder_samples(root)
    return path


def big_tree(args, work, classes, per_class):
    """classes x per_class ImageNet-like names: hard links to one small
    JPEG, copied once per class (a file takes at most 65000 links)."""
    source = tiny_jpeg(args, work)
    root = os.path.join(work, "big")
    copies = os.path.join(work, "copies")
    os.mkdir(copies)
    for c in range(classes):
        wnid = f"n{1440764 + c:08d}"
        directory = os.path.join(root, wnid)
        os.makedirs(directory)
        copy = shutil.copy(source, os.path.join(copies, f"{c}.jpg"))
        for i in range(per_class):
            os.link(copy, os.path.join(directory, f"{wnid}_{10000 + i}.JPEG"))
    return root, source


def spec_for(dataset):
    return {"dataset": dataset, "batch_size": 32, "slots": 2,
            "output": {"height": 32, "width": 32}, "epochs": 0,
            "name": "bench_sources"}


def create(client, dataset):
    start_time = time.monotonic()
    job = client.create_job(spec_for(dataset))
    return time.monotonic() - start_time, job


def scale(args, work, socket):
    classes, per_class = 1000, args.scale // 1000
    t0 = time.monotonic()
    root, source = big_tree(args, work, classes, per_class)
    samples = imagefolder_samples(root)
    manifest = write_manifest(samples, os.path.join(work, "big.csv"))
    data = open(source, "rb").read()
    shards_dir = os.path.join(work, "big_shards")
    os.mkdir(shards_dir)
    pattern = write_shards(samples, shards_dir, 128, data_of=lambda _: data)
    print(f"\n## scale: {len(samples)} samples (made in "
          f"{time.monotonic() - t0:.0f} s)")
    print("source       CreateJob built  shared   index bytes/sample")
    client = stoker.Client(socket, timeout=1800)
    for name, dataset in (("imagefolder", {"path": root}),
                          ("manifest", {"manifest": manifest}),
                          ("128 shards", {"shards": [pattern]})):
        built, first = create(client, dataset)
        shared, second = create(client, dataset)
        per_sample = int(first["index_bytes"]) / int(first["num_samples"])
        print(f"{name:12s} {built:8.2f} s {shared:6.3f} s   {per_sample:6.1f}")
        for job in (first, second):
            client.delete_job(job["id"])
    return client, root


def memory(client, root, jobs):
    time.sleep(0.5)
    before = int(client.stats()["daemon"]["rss_bytes"])
    created = [client.create_job(spec_for({"path": root}))
               for _ in range(jobs)]
    time.sleep(1.0)
    daemon = client.stats()["daemon"]
    after = int(daemon["rss_bytes"])
    print(f"\n## sharing: {jobs} jobs over the {created[0]['num_samples']}-"
          f"sample tree")
    print(f"resident memory {before / 2**20:.0f} MiB -> {after / 2**20:.0f} "
          f"MiB (+{(after - before) / 2**20:.0f} MiB); "
          f"{daemon.get('dataset_indexes', 0)} index(es) of "
          f"{int(daemon.get('dataset_index_bytes', 0)) / 2**20:.1f} MiB")
    for job in created:
        client.delete_job(job["id"])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--stokerd", default="build/daemon/stokerd")
    parser.add_argument("--stokerctl", default="build/client/stokerctl")
    parser.add_argument("--make_dataset", default="build/bench/make_dataset")
    parser.add_argument("--images", type=int, default=4096)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--seconds", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--scale", type=int, default=1_280_000)
    parser.add_argument("--jobs", type=int, default=8)
    parser.add_argument("--skip_throughput", action="store_true")
    args = parser.parse_args()
    sys.stdout.reconfigure(line_buffering=True)
    work = tempfile.mkdtemp(prefix="stoker-bench-sources-")
    daemon, socket = start(args, work)
    try:
        if not args.skip_throughput:
            throughput(args, work, socket)
        client, root = scale(args, work, socket)
        memory(client, root, args.jobs)
        client.close()
    finally:
        daemon.terminate()
        daemon.wait()
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
