#!/usr/bin/python3
"""Image-text pairs (CLIP on img2dataset shards) through stoker.DataLoader
against torch's DataLoader, same shards, same transform, same tokenizer,
same cores, one run; and what carrying the caption and the JSON costs next
to the image alone.

  (a) torch DataLoader over an IterableDataset that reads the tars itself
      (tarfile, members grouped by key as webdataset groups them, shards
      split by worker as webdataset's split_by_worker splits them), decodes
      with PIL, runs open_clip's training transform
      (RandomResizedCrop(224, scale=(0.9, 1.0), bicubic), ToTensor,
      Normalize) and the tokenizer, parses the JSON; num_workers = cores,
      persistent workers;
  (b) stoker.DataLoader(shards=..., fields=("jpg;png;jpeg;webp", "txt",
      "json"), field_transforms={"txt": tokenize}): the transform in
      stokerd's workers (as many as cores), the tokenizer and the JSON in
      the trainer;
  (c) stoker with the image alone, and with the caption and JSON but no
      tokenizer: the cost of the fields themselves. The three stoker runs
      take turns, --rounds times; each figure is the median, and the
      trainer's own CPU time per 1000 images (what the fields add to the
      training process: reading them from the ring, decoding, collating)
      is given beside it.

  PYTHONPATH=build/python /usr/bin/python3 bench/bench_fields.py \\
      --data=DIR --build=build [--epochs=3] [--batch_size=64]

DIR is an ImageFolder (bench/make_dataset makes a photo-like one); its
images become shards of <key>.jpg, <key>.txt and <key>.json.
"""
import argparse
import io
import json
import os
import re
import subprocess
import sys
import tarfile
import tempfile
import time

import torch
from PIL import Image
from torchvision import transforms as T

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "python", "examples"))
from train_clip import OPENAI_MEAN, OPENAI_STD, tokenize  # noqa: E402

BASE_PLUS_EXT = re.compile(r"^((?:.*/|)[^.]+)[.]([^/]*)$")  # webdataset's
WORDS = ("a photo of the small red dog sitting on a wooden bench near "
         "the old harbour at sunset with boats in the distance").split()


def caption(n):
    """A caption of 8 to 20 words, as web alt-texts run."""
    count = 8 + n % 13
    return " ".join(WORDS[(n * 7 + i * 3) % len(WORDS)] for i in range(count))


def metadata(n, key, width, height):
    """img2dataset's JSON for one sample (about 450 bytes)."""
    return {"url": f"https://images.example.com/{n % 997}/{key}.jpg",
            "caption": caption(n), "key": key, "status": "success",
            "error_message": None, "width": width, "height": height,
            "original_width": width * 2, "original_height": height * 2,
            "exif": "{\"Image Make\": \"Canon\", \"Image Model\": "
                    "\"Canon EOS 5D Mark II\"}",
            "sha256": f"{n:064x}"}


def write_shards(data, directory, count):
    """The folder's JPEGs as `count` img2dataset shards; their pattern."""
    paths = sorted(os.path.join(d, f) for d, _, fs in os.walk(data)
                   for f in fs if f.lower().endswith(".jpg"))
    per = -(-len(paths) // count)
    for shard in range(count):
        with tarfile.open(os.path.join(directory, f"{shard:05d}.tar"),
                          "w") as tar:
            for i, path in enumerate(paths[shard * per:(shard + 1) * per]):
                key = f"{shard:05d}{i:04d}"
                with open(path, "rb") as f:
                    image = f.read()
                with Image.open(io.BytesIO(image)) as im:
                    width, height = im.size
                n = shard * per + i
                for suffix, payload in (
                        ("jpg", image), ("txt", caption(n).encode()),
                        ("json", json.dumps(metadata(n, key, width,
                                                     height)).encode())):
                    info = tarfile.TarInfo(f"{key}.{suffix}")
                    info.size = len(payload)
                    tar.addfile(info, io.BytesIO(payload))
    return os.path.join(directory, f"{{00000..{count - 1:05d}}}.tar"), \
        len(paths)


class TarPairs(torch.utils.data.IterableDataset):
    """What webdataset's pipeline does, in plain Python: each worker reads
    its share of the shards in order, groups members by key, decodes."""

    def __init__(self, shards, transform):
        self.shards = shards
        self.transform = transform

    def samples(self, path):
        with tarfile.open(path, "r|") as tar:
            current = {}
            for member in tar:
                match = BASE_PLUS_EXT.match(member.name)
                if not match:
                    continue
                key, suffix = match.group(1), match.group(2).lower()
                if current and current["__key__"] != key:
                    yield current
                    current = {}
                current["__key__"] = key
                current[suffix] = tar.extractfile(member).read()
            if current:
                yield current

    def __iter__(self):
        info = torch.utils.data.get_worker_info()
        mine = self.shards if info is None else \
            self.shards[info.id::info.num_workers]
        for path in mine:
            for sample in self.samples(path):
                if "txt" not in sample or "jpg" not in sample:
                    continue
                with Image.open(io.BytesIO(sample["jpg"])) as im:
                    image = self.transform(im.convert("RGB"))
                yield (image, tokenize(sample["txt"].decode("utf-8")),
                       json.loads(sample["json"]))


def median(runs):
    """The run of median rate, as (rate, cpu)."""
    return sorted(runs)[len(runs) // 2]


def collate_pairs(batch):
    images, tokens, metas = zip(*batch)
    return torch.stack(images), torch.stack(tokens), list(metas)


def rate(loader, epochs):
    """Images/s over the epochs after the first, and this process's CPU
    seconds per 1000 images over them."""
    seen, start, cpu = 0, None, None
    for epoch in range(epochs):
        if epoch == 1:
            start, cpu = time.monotonic(), time.process_time()
        if hasattr(loader, "set_epoch"):
            loader.set_epoch(epoch)
        for batch in loader:
            if epoch >= 1:
                seen += batch[0].shape[0]
    return (seen / (time.monotonic() - start),
            (time.process_time() - cpu) / seen * 1000)


def torch_rate(shards, transform, args):
    loader = torch.utils.data.DataLoader(
        TarPairs(shards, transform), batch_size=args.batch_size,
        num_workers=args.cores, persistent_workers=True,
        collate_fn=collate_pairs)
    return rate(loader, args.epochs)[0]


def stoker_rate(pattern, transform, socket, args, fields, transforms=None):
    import stoker
    loader = stoker.DataLoader(shards=pattern, fields=fields, missing="skip",
                               transform=transform,
                               field_transforms=transforms,
                               batch_size=args.batch_size, shuffle=True,
                               socket=socket)
    try:
        return rate(loader, args.epochs)
    finally:
        loader.close()


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", required=True)
    parser.add_argument("--build", default="build")
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--batch_size", type=int, default=64)
    parser.add_argument("--shards", type=int, default=8)
    parser.add_argument("--cores", type=int, default=os.cpu_count())
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    transform = T.Compose([
        T.RandomResizedCrop(224, scale=(0.9, 1.0),
                            interpolation=T.InterpolationMode.BICUBIC),
        T.ToTensor(), T.Normalize(OPENAI_MEAN, OPENAI_STD)])
    image = "jpg;png;jpeg;webp"
    with tempfile.TemporaryDirectory() as tmp:
        pattern, count = write_shards(args.data, tmp, args.shards)
        shards = sorted(os.path.join(tmp, n) for n in os.listdir(tmp))
        socket = os.path.join(tmp, "stoker.sock")
        daemon = subprocess.Popen(
            [os.path.join(args.build, "daemon", "stokerd"), "--config=",
             f"--socket={socket}", f"--workers={args.cores}"],
            stderr=subprocess.DEVNULL)
        try:
            for _ in range(200):
                if os.path.exists(socket):
                    break
                time.sleep(0.05)
            theirs = torch_rate(shards, transform, args)
            runs = {"pairs": [], "carried": [], "alone": []}
            for _ in range(args.rounds):
                runs["pairs"].append(stoker_rate(
                    pattern, transform, socket, args, (image, "txt", "json"),
                    {"txt": tokenize}))
                runs["alone"].append(stoker_rate(pattern, transform, socket,
                                                 args, (image,)))
                runs["carried"].append(stoker_rate(
                    pattern, transform, socket, args, (image, "txt", "json")))
        finally:
            daemon.terminate()
            daemon.wait()
    (pairs, pairs_cpu), (carried, carried_cpu), (alone, alone_cpu) = (
        median(runs[k]) for k in ("pairs", "carried", "alone"))
    print(f"{count} image-text pairs in {args.shards} shards, batch "
          f"{args.batch_size}, {args.cores} cores, {args.epochs - 1} epochs "
          f"timed, stoker's the median of {args.rounds} rounds\n")
    print("| loader | images/s | against torch | trainer CPU s / 1000 "
          "images |")
    print("|---|---|---|---|")
    print(f"| torch DataLoader, IterableDataset over the tars "
          f"({args.cores} workers) | {theirs:.0f} | 1.00x | |")
    for name, value, cpu in (
            ("image + tokenized caption + JSON", pairs, pairs_cpu),
            ("image + caption + JSON (no tokenizer)", carried, carried_cpu),
            ("image alone", alone, alone_cpu)):
        print(f"| stoker, {name} | {value:.0f} | {value / theirs:.2f}x | "
              f"{cpu:.3f} |")
    print(f"\nthe caption and JSON next to the image alone: "
          f"{(alone / carried - 1) * 100:+.1f}% time per image "
          f"({(alone / pairs - 1) * 100:+.1f}% with the tokenizer); the "
          f"trainer's CPU {carried_cpu - alone_cpu:+.3f} s per 1000 images "
          f"({pairs_cpu - alone_cpu:+.3f} with the tokenizer)")


if __name__ == "__main__":
    sys.exit(main())
