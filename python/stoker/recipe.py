"""torch.utils.data.DataLoader's keywords on stoker.DataLoader: what a
training recipe (torchvision's references/classification/train.py) passes.

  sampler=      DistributedSampler -> rank, world_size, shuffle, seed and
                shard_drop_last (its drop_last); RandomSampler -> shuffle;
                SequentialSampler -> no shuffle; any other is refused.
  generator=    a torch.Generator: its initial_seed() is the seed.
  collate_fn=   refused: stokerd collates; batch_transform= runs on batches.
  num_workers, pin_memory, persistent_workers, prefetch_factor,
  worker_init_fn, timeout, multiprocessing_context, pin_memory_device:
                accepted and ignored, said in one logged line per loader.
"""
from __future__ import annotations

import logging
import math
from typing import Any, Dict, List, Optional, Tuple

from stoker.errors import InvalidArgument

logger = logging.getLogger("stoker")

IGNORED = ("num_workers", "pin_memory", "persistent_workers",
           "prefetch_factor", "worker_init_fn", "timeout",
           "multiprocessing_context", "pin_memory_device")
_WHY_IGNORED = (
    "stokerd's persistent worker threads decode and collate in place of "
    "worker processes, and each batch arrives in shared memory already "
    "mapped into this process (device='cuda' copies it to the GPU "
    "asynchronously: nothing to pin)")


def log_ignored(options: Dict[str, Any]) -> None:
    """One line naming the worker options given (ignored) and why; any
    other keyword (batch_sampler, a misspelt one) is a TypeError."""
    unknown = sorted(set(options) - set(IGNORED))
    if unknown:
        raise TypeError("DataLoader() got unexpected keyword arguments: "
                        + ", ".join(unknown))
    if options:
        given = ", ".join(f"{k}={v!r}" for k, v in options.items())
        logger.warning("stoker.DataLoader ignores %s: %s", given, _WHY_IGNORED)


def refuse_collate_fn(collate_fn: Any) -> None:
    if collate_fn is not None:
        raise InvalidArgument(
            f"collate_fn={collate_fn!r}: stokerd collates the batches; for "
            "the reference's mixup/cutmix collate_fn, pass batch_transform="
            "stoker.RandomChoice([stoker.MixUp(...), stoker.CutMix(...)])")


def _sampler_class(sampler: Any) -> str:
    kind = type(sampler)
    return f"{kind.__module__}.{kind.__qualname__}"


def _implied_by_sampler(sampler: Any) -> List[Tuple[str, Any]]:
    """The (option, value) pairs a sampler stands for."""
    import torch.utils.data as data
    kind = type(sampler)
    if kind is data.DistributedSampler:
        return [("shuffle", bool(sampler.shuffle)), ("seed", int(sampler.seed)),
                ("rank", int(sampler.rank)),
                ("world_size", int(sampler.num_replicas)),
                ("shard_drop_last", bool(sampler.drop_last))]
    if kind is data.SequentialSampler:
        return [("shuffle", False)]
    if kind is data.RandomSampler:
        if sampler.replacement or sampler._num_samples is not None:
            raise InvalidArgument(
                "sampler=RandomSampler with replacement or num_samples: "
                "stoker serves each sample once per epoch (a permutation)")
        implied = [("shuffle", True)]
        if sampler.generator is not None:
            implied.append(("seed", int(sampler.generator.initial_seed())))
        return implied
    repeats = getattr(sampler, "num_repeats", None)
    if repeats is not None:  # the classification reference's RASampler
        raise InvalidArgument(
            f"sampler={_sampler_class(sampler)}: stokerd repeats each sample "
            "itself, each copy augmented anew, and splits them over the ranks "
            "of torch.distributed as RASampler does: instead of sampler=, "
            f"pass repeated_augmentations={int(repeats)}")
    raise InvalidArgument(
        f"sampler={_sampler_class(sampler)}: stoker translates "
        "DistributedSampler, RandomSampler and SequentialSampler only; "
        "stokerd draws the order itself from seed=")


def order_options(sampler: Any, generator: Any, shuffle: bool,
                  seed: Optional[int], rank: Optional[int],
                  world_size: Optional[int],
                  shard_drop_last: Optional[bool]) -> Dict[str, Any]:
    """shuffle, seed, rank, world_size and shard_drop_last from the loader's
    own arguments (None: not given) and what `sampler` and `generator`
    stand for; a value given both ways must agree. rank and world_size
    stay None when nothing gives them."""
    given = {"seed": seed, "rank": rank, "world_size": world_size,
             "shard_drop_last": shard_drop_last}
    implied: List[Tuple[str, Any, str]] = []
    if sampler is not None:
        if shuffle:
            raise InvalidArgument("sampler option is mutually exclusive with "
                                  "shuffle (as in torch's DataLoader)")
        implied += [(k, v, "sampler") for k, v in _implied_by_sampler(sampler)]
    else:
        given["shuffle"] = bool(shuffle)
    if generator is not None:
        implied.append(("seed", int(generator.initial_seed()), "generator"))
    for key, value, source in implied:
        if given.get(key) is None:
            given[key] = value
        elif given[key] != value:
            raise InvalidArgument(
                f"{key}={given[key]!r}, but the {source} gives {value!r}")
    given["seed"] = given["seed"] or 0
    given["shard_drop_last"] = bool(given["shard_drop_last"])
    return given


def samples_per_rank(num_samples: int, world_size: int,
                     drop_last: bool) -> int:
    """DistributedSampler's num_samples: this rank's share of an epoch."""
    world = max(world_size, 1)
    if drop_last and num_samples % world:
        return math.ceil((num_samples - world) / world)
    return math.ceil(num_samples / world)


class SamplerEpoch:
    """Follows a DistributedSampler given as sampler=: the epoch its
    set_epoch() set, once it is not the last one seen (at first, 0: where
    the sampler and the loader start)."""

    def __init__(self, sampler: Any):
        follows = sampler is not None and hasattr(sampler, "set_epoch")
        self._sampler = sampler if follows else None
        self._seen = 0

    def changed(self) -> Optional[int]:
        """The sampler's epoch if set_epoch() changed it since last asked."""
        if self._sampler is None or self._sampler.epoch == self._seen:
            return None
        self._seen = self._sampler.epoch
        return int(self._seen)


class LoaderSampler:
    """loader.sampler: set_epoch(epoch) sets the loader's epoch (as
    DistributedSampler's does); len() is this rank's samples per epoch;
    rank, num_replicas, shuffle, seed, drop_last as DistributedSampler's."""

    def __init__(self, loader: Any):
        self._loader = loader
        spec = loader._spec
        self.rank = spec["rank"]
        self.num_replicas = max(spec["world_size"], 1)
        self.shuffle = spec["shuffle"]
        self.seed = spec["seed"]
        self.drop_last = spec["shard_drop_last"]

    def set_epoch(self, epoch: int) -> None:
        self._loader.set_epoch(epoch)

    def __len__(self) -> int:
        return samples_per_rank(self._loader.num_samples, self.num_replicas,
                                self.drop_last)

    def __repr__(self) -> str:
        return (f"LoaderSampler(rank={self.rank}, num_replicas="
                f"{self.num_replicas}, shuffle={self.shuffle}, "
                f"seed={self.seed}, drop_last={self.drop_last})")
