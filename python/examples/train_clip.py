#!/usr/bin/python3
"""Trains a small CLIP-style model (contrastive image-text) for a few steps
on image-text shards as img2dataset writes them (<key>.jpg, <key>.txt,
<key>.json), served by stokerd, and prints images/s and how much of the
time went to waiting for input.

  python3 train_clip.py --shards='/data/cc3m/{00000..00331}.tar' [--socket=PATH]
                        [--steps=20] [--batch_size=64] [--size=224]

The loader is open_clip's webdataset pipeline in one call: its training
transform (RandomResizedCrop(224, scale=(0.9, 1.0), bicubic), ToTensor,
Normalize with OpenAI's mean and std) runs in the daemon; the samples
without a caption are left out (open_clip's filter_no_caption_or_no_image);
the tokenizer runs per sample in this process (open_clip's
map_dict(text=tokenizer)). The tokenizer here is a small stand-in for
open_clip's: words hashed into its vocabulary, 77 tokens with start and end.
"""
import argparse
import re
import time
import zlib

import torch
import torchvision
import torchvision.transforms as T

import stoker

OPENAI_MEAN = (0.48145466, 0.4578275, 0.40821073)
OPENAI_STD = (0.26862954, 0.26130258, 0.27577711)
VOCABULARY, CONTEXT = 49408, 77
START, END = VOCABULARY - 2, VOCABULARY - 1


def tokenize(text: str) -> torch.Tensor:
    """A caption as open_clip's tokenizer shapes it: LongTensor[77]."""
    words = re.findall(r"[\w']+|[^\w\s]", text.lower())
    ids = [zlib.crc32(w.encode()) % (VOCABULARY - 2) for w in words]
    ids = [START] + ids[:CONTEXT - 2] + [END]
    return torch.tensor(ids + [0] * (CONTEXT - len(ids)), dtype=torch.long)


class TinyClip(torch.nn.Module):
    """An image tower (ResNet-18) and a text tower (mean of token
    embeddings), both to a shared embedding, with CLIP's learned scale."""

    def __init__(self, dim: int = 128):
        super().__init__()
        self.image = torchvision.models.resnet18(num_classes=dim)
        self.tokens = torch.nn.Embedding(VOCABULARY, dim, padding_idx=0)
        self.text = torch.nn.Linear(dim, dim)
        self.scale = torch.nn.Parameter(torch.tensor(2.659))  # log(1 / 0.07)

    def forward(self, images, tokens):
        image = torch.nn.functional.normalize(self.image(images), dim=-1)
        mask = (tokens != 0).unsqueeze(-1).float()
        pooled = (self.tokens(tokens) * mask).sum(1) / mask.sum(1)
        text = torch.nn.functional.normalize(self.text(pooled), dim=-1)
        return image, text, self.scale.exp()


def clip_loss(image, text, scale):
    logits = scale * image @ text.t()
    labels = torch.arange(len(logits), device=logits.device)
    return (torch.nn.functional.cross_entropy(logits, labels) +
            torch.nn.functional.cross_entropy(logits.t(), labels)) / 2


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--shards", required=True,
                        help="tar shards: a brace pattern, s3:// or https://")
    parser.add_argument("--socket", default=None,
                        help="stokerd's socket (default: $STOKER_SOCKET, "
                        "then /run/stoker/stoker.sock)")
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--batch_size", type=int, default=64)
    parser.add_argument("--size", type=int, default=224)
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available()
                        else "cpu")
    args = parser.parse_args()
    device = torch.device(args.device)

    # open_clip: wds.WebDataset(shards).select(filter_no_caption_or_no_image)
    #   .decode("pilrgb").rename(image="jpg;png;jpeg;webp", text="txt")
    #   .map_dict(image=preprocess_train, text=tokenize).to_tuple(...)
    preprocess = T.Compose([
        T.RandomResizedCrop(args.size, scale=(0.9, 1.0),
                            interpolation=T.InterpolationMode.BICUBIC),
        T.ToTensor(), T.Normalize(OPENAI_MEAN, OPENAI_STD)])
    loader = stoker.DataLoader(
        shards=args.shards, fields=("jpg;png;jpeg;webp", "txt"),
        missing="skip", transform=preprocess,
        field_transforms={"txt": tokenize}, batch_size=args.batch_size,
        shuffle=True, drop_last=True, device=device, socket=args.socket)
    print(f"{loader.num_samples} image-text pairs ({loader.samples_skipped} "
          f"without a caption left out), {len(loader)} batches per epoch, "
          f"on {device}")

    model = TinyClip().to(device).train()
    optimizer = torch.optim.AdamW(model.parameters(), lr=5e-4,
                                  weight_decay=0.2)
    step, images_seen, start, epoch = 0, 0, None, 0
    while step < args.steps:
        loader.set_epoch(epoch)
        for images, tokens in loader:  # images already on the device
            tokens = tokens.to(device, non_blocking=True)
            loss = clip_loss(*model(images, tokens))
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()
            step += 1
            if step == 1:  # the first step warms up; measure the others
                if device.type == "cuda":
                    torch.cuda.synchronize()
                start = time.monotonic()
            else:
                images_seen += images.shape[0]
            if step % 5 == 0 or step == args.steps:
                print(f"step {step}: contrastive loss {loss.item():.3f}")
            if step == args.steps:
                break
        epoch += 1
    if device.type == "cuda":
        torch.cuda.synchronize()
    elapsed = time.monotonic() - start
    stats = loader.input_stats()
    print(f"{images_seen / elapsed:.1f} images/s over {args.steps - 1} steps; "
          f"input-bound {stats['input_bound_percent']:.1f}%")
    loader.close()


if __name__ == "__main__":
    main()
