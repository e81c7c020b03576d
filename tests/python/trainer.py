"""A trainer for the resume and distributed tests: iterates `epochs` epochs
and, after each batch, writes (atomically) the digests of every batch so far
with the loader's state, as a checkpoint would. Options:
  --kill_at=N   SIGKILL itself after the N-th batch of this run
  --distributed gloo init through the file FILE (rank, world from env)
  --shards      the dataset argument is a tar shard pattern, not a folder
  --streaming   stream the shards (docs/remote.md), one shard a window
"""
import argparse
import hashlib
import json
import os
import signal

import torch
import torchvision.transforms as T

import stoker

parser = argparse.ArgumentParser()
parser.add_argument("socket")
parser.add_argument("dataset")
parser.add_argument("checkpoint")
parser.add_argument("--epochs", type=int, default=2)
parser.add_argument("--kill_at", type=int, default=-1)
parser.add_argument("--distributed", default="")
parser.add_argument("--shards", action="store_true")
parser.add_argument("--streaming", action="store_true")
args = parser.parse_args()

if args.distributed:
    torch.distributed.init_process_group(
        "gloo", init_method="file://" + args.distributed,
        rank=int(os.environ["RANK"]), world_size=int(os.environ["WORLD_SIZE"]))
    os.environ.pop("RANK")  # the loader must take them from torch.distributed
    os.environ.pop("WORLD_SIZE")

source = {"shards": args.dataset} if args.shards else {"root": args.dataset}
if args.streaming:
    source.update(streaming=True, shuffle_window=1)
loader = stoker.DataLoader(
    **source, batch_size=4, shuffle=True, seed=11, socket=args.socket,
    transform=T.Compose([T.RandomResizedCrop(48), T.RandomHorizontalFlip(),
                         T.ToTensor(), T.Normalize([0.5] * 3, [0.25] * 3)]))
done = {"digests": [], "labels": [], "state": None}
if os.path.exists(args.checkpoint):
    with open(args.checkpoint) as f:
        done = json.load(f)
    loader.load_state_dict(done["state"])
start_epoch = done["state"]["epoch"] if done["state"] else 0
taken = 0
for epoch in range(start_epoch, args.epochs):
    loader.set_epoch(epoch)
    for images, labels in loader:
        digest = hashlib.sha256(images.numpy().tobytes() +
                                labels.numpy().tobytes()).hexdigest()
        done["digests"].append(digest)
        done["labels"].append(labels.tolist())
        done["state"] = loader.state_dict()
        with open(args.checkpoint + ".tmp", "w") as f:
            json.dump(done, f)
        os.replace(args.checkpoint + ".tmp", args.checkpoint)
        taken += 1
        if taken == args.kill_at:
            os.kill(os.getpid(), signal.SIGKILL)
print(json.dumps({"batches": len(done["digests"]), "rank": loader.rank,
                  "world_size": loader.world_size, "length": len(loader)}))
