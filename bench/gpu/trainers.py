"""Several trainers on one GPU node: 1, 2 and 4 trainer processes training
ResNet-18 at once on the same GPU, fed by one stokerd (each trainer its own
job), against the same trainers each with its own torch DataLoader (the
workers split between them); then two trainers over the same dataset in one
broadcast job, which decodes each batch once for both.

  trainers.py --data=DIR [--trainers=1,2,4] [--workers=15] [--seconds=20]

Every trainer warms up, then all start the measured window together. For
each case: total images/s (summed over the trainers), GPU busy % (NVML),
host CPU %, peak PSS of every process involved, mean input-bound % and,
for stoker, stokerd's CPU time per image trained (per image decoded, too,
for the broadcast job).
"""
import argparse
import json
import os
import select
import subprocess
import sys
import time

import psutil

from common import Sampler, Stokerd, emit, timed_steps


def child_loader(args, device):
    """The child's loader and an endless iterator over its batches."""
    import torch
    import torchvision
    from train_e2e import train_transform  # the same classic transform
    transform = train_transform("classic", args.crop)
    if args.loader == "torch":
        dataset = torchvision.datasets.ImageFolder(args.data, transform)
        loader = torch.utils.data.DataLoader(
            dataset, batch_size=args.batch, shuffle=True, drop_last=True,
            num_workers=args.workers, pin_memory=device.type == "cuda",
            persistent_workers=True)
        classes = len(dataset.classes)
    else:
        import stoker
        extra = {"seed": args.index}
        if args.sharing == "broadcast" and args.index == 0:
            extra = {"sharing": "broadcast", "min_consumers": 2}
        elif args.sharing == "broadcast":
            while not os.path.exists(args.job_file):
                time.sleep(0.05)
            with open(args.job_file) as f:
                extra = {"job_id": f.read().strip()}
        loader = stoker.DataLoader(args.data, batch_size=args.batch,
                                   transform=transform, shuffle=True,
                                   drop_last=True, socket=args.socket,
                                   device=str(device), **extra)
        if args.sharing == "broadcast" and args.index == 0:
            with open(args.job_file + ".new", "w") as f:
                f.write(loader.job_id)
            os.rename(args.job_file + ".new", args.job_file)
        classes = len(loader.classes)

    def batches():
        while True:
            for images, labels in loader:
                yield (images.to(device, non_blocking=True),
                       labels.to(device, non_blocking=True))
    return loader, classes, batches()


def child(args):
    """One trainer: warms up, says READY, waits for GO, trains, reports."""
    import torch
    import torchvision
    device = torch.device(args.device)
    loader, classes, batches = child_loader(args, device)
    model = torchvision.models.resnet18(num_classes=classes)
    model = model.to(device, memory_format=torch.channels_last).train()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    loss_fn = torch.nn.CrossEntropyLoss()
    sync = torch.cuda.synchronize if device.type == "cuda" else (lambda: None)

    def step(images, labels):
        images = images.contiguous(memory_format=torch.channels_last)
        with torch.autocast(device.type, dtype=torch.bfloat16):
            loss = loss_fn(model(images), labels)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()

    warm_end = time.monotonic() + args.warmup
    while time.monotonic() < warm_end:
        step(*next(batches))
    sync()
    print("READY", flush=True)
    if sys.stdin.readline() != "GO\n":  # the parent is gone
        sys.exit(1)
    steps, waited, elapsed = timed_steps(batches, step, args.seconds, sync)
    print("CHILD " + json.dumps({"images_per_s": steps * args.batch / elapsed,
                                 "images": steps * args.batch,
                                 "input_bound_percent": 100 * waited / elapsed}),
          flush=True)
    # The loaders stay until every trainer has reported: the broadcast
    # job's owner would otherwise end it under the others.
    sys.stdin.readline()
    if hasattr(loader, "close"):
        loader.close()


def spawn(args, n, loader, socket, sharing, job_file):
    """n trainer processes, started; returns them once all are READY."""
    procs = []
    for index in range(n):
        workers = max(1, args.workers // n) if loader == "torch" else 0
        cmd = [sys.executable, os.path.abspath(__file__), "--child",
               f"--data={args.data}", f"--loader={loader}",
               f"--index={index}", f"--workers={workers}",
               f"--batch={args.batch}", f"--crop={args.crop}",
               f"--seconds={args.seconds}", f"--warmup={args.warmup}",
               f"--device={args.device}", f"--socket={socket or ''}",
               f"--sharing={sharing}", f"--job_file={job_file}"]
        procs.append(subprocess.Popen(cmd, stdin=subprocess.PIPE,
                                      stdout=subprocess.PIPE, text=True))
    deadline = time.monotonic() + args.warmup + 120
    for p in procs:
        while True:
            left = deadline - time.monotonic()
            ready, _, _ = select.select([p.stdout], [], [], max(0, left))
            line = p.stdout.readline() if ready else ""
            if line.startswith("READY"):
                break
            if not ready or not line:
                for q in procs:
                    q.kill()
                raise RuntimeError(f"trainer {p.pid} did not get ready")
    return procs


def report(proc, deadline):
    """The CHILD line of one trainer, read before `deadline`."""
    line = ""
    while not line.startswith("CHILD "):
        ready, _, _ = select.select([proc.stdout], [], [],
                                    max(0, deadline - time.monotonic()))
        line = proc.stdout.readline() if ready else ""
        if not ready or not line:
            raise RuntimeError(f"trainer {proc.pid} reported nothing")
    return json.loads(line[6:])


def daemon_cpu_seconds(daemon):
    times = psutil.Process(daemon.process.pid).cpu_times()
    return times.user + times.system


def measure(args, n, loader, daemon=None, sharing="exclusive"):
    """One case: n trainers of `loader`; returns its figures."""
    socket = daemon.socket if daemon else None
    job_file = os.path.join(daemon.dir if daemon else "/tmp",
                            f"broadcast-job-{os.getpid()}")
    procs = []
    try:
        procs = spawn(args, n, loader, socket, sharing, job_file)
        pids = [p.pid for p in procs] + ([daemon.process.pid] if daemon else [])
        sampler = Sampler(pids)
        cpu_before = daemon_cpu_seconds(daemon) if daemon else 0
        for p in procs:
            p.stdin.write("GO\n")
            p.stdin.flush()
        deadline = time.monotonic() + args.seconds + 60
        results = [report(p, deadline) for p in procs]
        # The window ends when the last trainer has reported, before any
        # of them tears its loader or its CUDA context down.
        cpu = daemon_cpu_seconds(daemon) - cpu_before if daemon else 0
        sampled = sampler.stop()
        for p in procs:
            p.stdin.write("DONE\n")
            p.stdin.flush()
        for p in procs:
            p.wait(timeout=60)
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
    images = sum(r["images"] for r in results)
    figures = dict(trainers=n, loader=loader, sharing=sharing,
                   images_per_s=sum(r["images_per_s"] for r in results),
                   per_trainer=[round(r["images_per_s"], 1) for r in results],
                   input_bound_percent=sum(r["input_bound_percent"]
                                           for r in results) / n, **sampled)
    if daemon:
        figures["daemon_cpu_ms_per_image"] = 1000 * cpu / images
        if sharing == "broadcast":  # each batch decoded once for n trainers
            figures["daemon_cpu_ms_per_decoded"] = 1000 * cpu * n / images
    return figures


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--data", required=True)
    parser.add_argument("--trainers", default="1,2,4")
    parser.add_argument("--workers", type=int, default=15,
                        help="stokerd's threads; torch's workers, split")
    parser.add_argument("--seconds", type=float, default=20)
    parser.add_argument("--warmup", type=float, default=8)
    parser.add_argument("--batch", type=int, default=128)
    parser.add_argument("--crop", type=int, default=224)
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--child", action="store_true")
    for name in ("loader", "socket", "sharing", "job_file"):
        parser.add_argument(f"--{name}", default="")
    parser.add_argument("--index", type=int, default=0)
    args = parser.parse_args()
    if args.child:
        return child(args)
    if args.device.startswith("cuda"):
        import torch
        if not torch.cuda.is_available():
            emit("trainers", skipped="no CUDA device")
            return
    for n in (int(t) for t in args.trainers.split(",")):
        with Stokerd(args.workers) as daemon:
            emit("trainers", **measure(args, n, "stoker", daemon))
        emit("trainers", **measure(args, n, "torch"))
    with Stokerd(args.workers) as daemon:
        emit("trainers", **measure(args, 2, "stoker", daemon, "broadcast"))


if __name__ == "__main__":
    main()
