"""DataLoader: batches from stokerd as torch tensors.

    loader = stoker.DataLoader("/data/imagenet/train", batch_size=256,
                               transform=T.Compose([...]), shuffle=True,
                               device="cuda")
    for epoch in range(90):
        loader.set_epoch(epoch)          # optional, as with DistributedSampler
        for images, labels in loader:    # one epoch
            ...

The loader creates one job on the daemon and consumes it as a stream that
runs on from epoch to epoch. A new iteration, set_epoch() to another epoch,
or load_state_dict() starts a new job at the wanted position (same seed,
same bytes).
"""
from __future__ import annotations

import importlib
import os
import threading
import time
import weakref
from typing import Any, Dict, Iterator, Optional, Sequence, Tuple, Union

import torch

from stoker import batch_transforms, datasets, errors, recipe, transforms
from stoker.client import Client, default_socket
from stoker.stream import Resources, Stream

_SHARING = {"exclusive": "CONSUMER_MODE_EXCLUSIVE",
            "broadcast": "CONSUMER_MODE_BROADCAST",
            "partition": "CONSUMER_MODE_PARTITION"}
_ON_LAG = {"detach": "LAG_POLICY_DETACH", "skip": "LAG_POLICY_SKIP"}
_ON_ERROR = {"replace": "ON_ERROR_REPLACE", "fail": "ON_ERROR_FAIL"}
# What a saved state must agree on to resume the same stream.
_STREAM_FIELDS = ("dataset", "batch_size", "output", "seed", "shuffle",
                  "drop_last", "pipeline", "rank", "world_size",
                  "shard_drop_last")


def _reference_versions() -> Dict[str, str]:
    """This process's Pillow and numpy, whose output torchvision's depends
    on in a few corners (JobSpec.reference): the daemon matches them. One
    not installed is left out (the daemon then takes the newest)."""
    versions = {}
    for key, module in (("pillow", "PIL"), ("numpy", "numpy")):
        try:
            versions[key] = str(importlib.import_module(module).__version__)
        except ImportError:
            pass
    return versions


def _distributed_rank() -> Tuple[int, int]:
    """(rank, world_size): torch.distributed if initialised, else RANK and
    WORLD_SIZE from the environment, else (0, 1)."""
    dist = torch.distributed
    if dist.is_available() and dist.is_initialized():
        return dist.get_rank(), dist.get_world_size()
    return int(os.environ.get("RANK", 0)), int(os.environ.get("WORLD_SIZE", 1))


def _dataset_spec(root, shards, manifest, label_field) -> Dict[str, Any]:
    """The job spec's dataset: exactly one of root, shards and manifest,
    with paths made absolute from this process's directory."""
    named = [name for name, value in (("root", root), ("shards", shards),
                                      ("manifest", manifest))
             if value is not None]
    if len(named) != 1:
        raise errors.InvalidArgument(
            "name one dataset: root (an ImageFolder), shards or manifest"
            + (f", not {' and '.join(named)}" if named else ""))
    if label_field and shards is None:
        raise errors.InvalidArgument("label_field applies to shards only")
    if root is not None:
        return {"path": os.path.abspath(os.path.expanduser(os.fspath(root)))}
    if manifest is not None:
        return {"manifest": os.path.abspath(os.fspath(manifest))}
    if isinstance(shards, (str, os.PathLike)):
        shards = [shards]
    spec = {"shards": [os.path.abspath(os.fspath(s)) for s in shards]}
    if label_field:
        spec["label_field"] = label_field
    return spec


class DataLoader:
    """A drop-in for torch.utils.data.DataLoader(ImageFolder(root,
    transform), ...) served by stokerd.

    root: an ImageFolder directory (root/<class>/<image>); the daemon
        reads it with this process's user's permissions; a relative path is
        taken from this process's directory. Or a torchvision ImageFolder:
        its root, and its transform unless `transform` is given.
    shards: instead of root, WebDataset tar shards: a path or a list of
        paths, brace patterns allowed ("/data/train-{000000..001023}.tar").
        Each sample's label is its .cls member, or the field `label_field`
        of its .json member.
    manifest: instead of root, a .csv (header: path,label[,class]) or
        .jsonl file of rows, in dataset order; relative paths in it are
        taken from its directory.
    transform: a torchvision transform or Compose (see stoker.transforms for
        what translates), or a list of stoker.v1.Op dicts.
    device: "cpu" (tensors are views of the daemon's shared memory) or a CUDA
        device (batches copied on the loader's own CUDA stream, which
        torch.cuda.current_stream() at next() waits for).
    rank, world_size: default from torch.distributed, else RANK/WORLD_SIZE,
        else one rank; each rank gets DistributedSampler's share.
    sharing: the job's consumer mode, "exclusive" (default), "broadcast" or
        "partition": the loader creates the job; other programs may attach
        to it (loader.job_id, stoker.Client, the C++ SDK), and the loader
        then yields the batches its own consumer receives, in order.
    job_id: attach to this existing job (shared by its owner through its
        access_group) instead of creating one: its pipeline and spec apply,
        root and transform are only checked to be given.
    A shared loader (sharing other than "exclusive", or job_id) follows the
    job's one stream: each iteration yields the batches of the epoch it is
    in, as its consumer receives them (a partition consumer gets a part of
    each epoch, a broadcast one may skip batches with on_lag="skip"); it
    cannot be moved (set_epoch to another epoch, load_state_dict) and does
    not re-create the job after a daemon restart.
    repeated_augmentations: k > 1 repeats each sample of an epoch's order
        k times in a row, each copy with its own augmentation, the ranks
        sharing that repeated order out (the classification reference's
        RASampler, --ra-reps); an epoch keeps its length, so it sees about
        1/k of the distinct samples. At most 16.
    fast_resample: resample approximately (a DCT-scaled JPEG decode, an
        area average) instead of exactly as Pillow: less daemon CPU, but
        pixels that differ from torchvision's (numbers: docs/transforms.md).
    reconnect_timeout: seconds to keep reconnecting when the daemon restarts
        or the connection drops; the loader re-creates its job at the batch
        after the last one it yielded.
    batch_transform: a callable (images, labels) -> (images, labels) run on
        each batch in this process, such as stoker.MixUp, stoker.CutMix or
        stoker.RandomChoice of them; given generator= when it takes one,
        a torch.Generator seeded from (seed, rank, epoch, batch index).
    sampler, generator, num_workers, pin_memory...: torch's DataLoader's,
        translated or ignored as stoker.recipe says; collate_fn is refused.
    seed, shard_drop_last: None is 0 and False unless sampler or generator
        give them.
    The other keywords are the job spec's fields (proto/stoker/v1/loader.proto).
    """

    def __init__(self, root: Any = None, batch_size: int = 1,
                 transform: Any = None,
                 shuffle: bool = False, drop_last: bool = False,
                 seed: Optional[int] = None,
                 device: Any = "cpu", socket: Optional[str] = None,
                 rank: Optional[int] = None, world_size: Optional[int] = None,
                 shard_drop_last: Optional[bool] = None, slots: int = 8,
                 prefetch: int = 2, weight: int = 1, on_error: str = "replace",
                 sharing: str = "exclusive", max_lag: int = 0,
                 on_lag: str = "detach", min_consumers: int = 1,
                 access_group: str = "", name: str = "python",
                 reconnect_timeout: float = 60.0, job_id: Optional[str] = None,
                 fast_resample: bool = False,
                 repeated_augmentations: int = 1,
                 shards: Union[str, Sequence[str], None] = None,
                 manifest: Optional[str] = None, label_field: str = "",
                 batch_transform: Any = None, sampler: Any = None,
                 generator: Optional[torch.Generator] = None,
                 collate_fn: Any = None, **ignored: Any):
        root, transform, self._folder = datasets.unpack_root(root, transform)
        recipe.refuse_collate_fn(collate_fn)
        order = recipe.order_options(sampler, generator, shuffle, seed, rank,
                                     world_size, shard_drop_last)
        recipe.log_ignored(ignored)
        self._sampler_epoch = recipe.SamplerEpoch(sampler)
        # Attached to another's job, its pipeline applies.
        pipeline, output = (transforms.translate(transform) if job_id is None
                            else ([], {}))
        dist_rank, dist_world = _distributed_rank()
        self.rank = dist_rank if order["rank"] is None else int(order["rank"])
        self.world_size = (dist_world if order["world_size"] is None
                           else int(order["world_size"]))
        for value, table, what in ((sharing, _SHARING, "sharing"),
                                   (on_lag, _ON_LAG, "on_lag"),
                                   (on_error, _ON_ERROR, "on_error")):
            if value not in table:
                raise errors.InvalidArgument(
                    f"{what}={value!r}: one of {', '.join(table)}")
        self.device = torch.device(device)
        if self.device.type not in ("cpu", "cuda"):
            raise errors.InvalidArgument(f"device {device!r}: cpu or cuda")
        self._cuda_device = None
        if self.device.type == "cuda":
            if not torch.cuda.is_available():
                raise errors.FailedPrecondition(
                    f"device={device!r}, but torch sees no CUDA device")
            self._cuda_device = (self.device.index if self.device.index
                                 is not None else torch.cuda.current_device())
        self._spec = {
            "dataset": _dataset_spec(root, shards, manifest, label_field),
            "batch_size": int(batch_size), "slots": int(slots),
            "output": output, "seed": int(order["seed"]),
            "shuffle": order["shuffle"],
            "drop_last": bool(drop_last), "epochs": 0,
            "on_error": _ON_ERROR[on_error], "name": name,
            "pipeline": pipeline, "rank": self.rank,
            "world_size": self.world_size,
            "shard_drop_last": order["shard_drop_last"],
            "sharing": {"mode": _SHARING[sharing]},
            "weight": int(weight), "access_group": access_group,
            "fast_resample": bool(fast_resample),
            "repeated_augmentations": int(repeated_augmentations),
            "reference": _reference_versions(),
        }
        if (sharing == "broadcast" or max_lag != 0 or on_lag != "detach" or
                min_consumers != 1):  # the daemon refuses them otherwise
            self._spec["sharing"].update(max_lag=int(max_lag),
                                         on_lag=_ON_LAG[on_lag],
                                         min_consumers=int(min_consumers))
        self._held = None  # the batch under the last one transformed
        self._batch_transform = batch_transform
        self._with_generator = batch_transforms.accepts_generator(
            batch_transform) if batch_transform is not None else False
        self._check_batch_transform(0)
        self._name = name
        self._job_id = job_id
        self._shared = job_id is not None or sharing != "exclusive"
        self._stash = None  # shared: a batch of the next epoch, taken early
        self._prefetch = int(prefetch)
        self._reconnect_timeout = float(reconnect_timeout)
        # iter() and next() from several threads take turns: a stream one
        # thread opens is never replaced (and its job lost) by another's.
        self._guard = threading.RLock()
        self._resources = Resources(Client(socket or default_socket()))
        self._finalizer = weakref.finalize(self, self._resources.close)
        self._iterating: Optional["_EpochIterator"] = None
        # The next batch this loader would yield; the stream's next batch
        # is that one while _stream_in_step.
        self._next = (0, 0)
        self._epoch_set: Optional[int] = None
        self._resume: Optional[Tuple[int, int]] = None
        self._root, self._transform = root, transform
        self._dataset: Any = self._folder
        self._open_stream((0, 0))  # checks everything now; gives len()
        try:
            self._check_batch_transform(len(self._classes))
        except BaseException:
            self.close()
            raise

    # -- torch.utils.data.DataLoader's surface --------------------------------

    def __len__(self) -> int:
        """Batches per epoch for this rank."""
        return self._batches_per_epoch

    @property
    def batch_size(self) -> int:
        return self._spec["batch_size"]

    @property
    def drop_last(self) -> bool:
        return self._spec["drop_last"]

    @property
    def num_samples(self) -> int:
        """Samples in the dataset (all ranks)."""
        return self._num_samples

    @property
    def classes(self) -> list:
        """Class names; label i is classes[i] (ImageFolder's classes)."""
        return list(self._classes)

    @property
    def dataset(self) -> Any:
        """The ImageFolder given as root, else a stoker.datasets.LoaderDataset:
        len(), classes, class_to_idx; for a root, samples and targets too."""
        if self._dataset is None:
            root = self._root
            if isinstance(root, str):
                root = os.path.expanduser(root)
            self._dataset = datasets.LoaderDataset(
                self._num_samples, self._classes, root, self._transform)
        return self._dataset

    @property
    def sampler(self) -> recipe.LoaderSampler:
        """set_epoch() and len() as a DistributedSampler's (this rank's
        samples per epoch)."""
        return recipe.LoaderSampler(self)

    def set_epoch(self, epoch: int) -> None:
        """The epoch the next iteration serves (its order depends on seed
        and epoch only), as DistributedSampler.set_epoch. A shared loader
        only accepts the epoch its stream is at."""
        if self._shared and int(epoch) != self._next[0]:
            raise errors.FailedPrecondition(
                f"set_epoch({epoch}): a shared job's stream is at epoch "
                f"{self._next[0]} and cannot be moved")
        if not self._shared:
            self._epoch_set = int(epoch)

    def _start(self) -> Tuple[int, int]:
        """Where the next iteration begins."""
        if self._resume is not None and self._epoch_set in (None, self._resume[0]):
            start = self._resume
        elif self._epoch_set is not None:
            start = (self._epoch_set, 0)
        elif self._next[1] == 0:
            start = self._next
        else:  # the last iteration stopped early: a new epoch begins
            start = (self._next[0] + 1, 0)
        if start[1] >= self._batches_per_epoch:
            start = (start[0] + 1, 0)
        return start

    def __iter__(self) -> Iterator[Tuple[torch.Tensor, torch.Tensor]]:
        with self._guard:
            return self._iter()

    def _iter(self) -> "_EpochIterator":
        epoch = self._sampler_epoch.changed()
        if epoch is not None:  # the sampler= given was set_epoch()ed
            self.set_epoch(epoch)
        if not self._shared:  # a shared stream goes on where it is
            start = self._start()
            if not self._stream_in_step or start != self._next:
                self._open_stream(start)
            self._resume = None
            self._epoch_set = None
        self._iterating = _EpochIterator(self, self._next[0])
        return self._iterating

    def state_dict(self) -> Dict[str, Any]:
        """Where to resume: the batch after the last one yielded (what was
        yielded counts as trained on; a loop left early resumes where it
        stopped), unless set_epoch() or load_state_dict() was called since
        the last iteration began; and the job spec."""
        if self._resume is not None or self._epoch_set is not None:
            epoch, batch = self._start()
        else:
            epoch, batch = self._next
        return {"version": 1, "epoch": epoch, "batch": batch,
                "batches_per_epoch": self._batches_per_epoch,
                "spec": dict(self._spec)}

    def load_state_dict(self, state: Dict[str, Any]) -> None:
        """Resumes at the saved position on the next iteration, with the same
        bytes an uninterrupted run would have had."""
        if self._shared:
            raise errors.FailedPrecondition(
                "a shared job's stream cannot be moved: load_state_dict is "
                "for exclusive jobs")
        if state.get("version") != 1:
            raise errors.InvalidArgument(
                f"not a stoker DataLoader state (version {state.get('version')!r})")
        saved = state["spec"]
        differ = [f for f in _STREAM_FIELDS if saved.get(f) != self._spec.get(f)]
        if state.get("batches_per_epoch") != self._batches_per_epoch:
            differ.append("batches_per_epoch (the dataset changed: saved "
                          f"{state.get('batches_per_epoch')}, now "
                          f"{self._batches_per_epoch})")
        if differ:
            raise errors.InvalidArgument(
                "the saved state is of another stream; these differ: " +
                ", ".join(f if f.startswith("batches_per_epoch") else
                          f"{f} (saved {saved.get(f)!r}, now "
                          f"{self._spec.get(f)!r})" for f in differ))
        self._resume = (int(state["epoch"]), int(state["batch"]))
        self._epoch_set = None

    # -- stoker's own ----------------------------------------------------------

    @property
    def job_id(self) -> str:
        return self._stream.job["id"]

    def input_stats(self) -> Dict[str, float]:
        """Where the trainer's time goes: input_bound_percent is the share
        spent waiting for batches (near 0: the GPU never waits for input)."""
        return self._stream.input_stats()

    def confirm(self) -> None:
        """Confirms every batch yielded so far: from here on none of them
        goes to another consumer, even if this process stops. Raises the
        daemon's reason (stoker.Unavailable, DeadlineExceeded,
        ResourceExhausted...) if it already took one back, because this
        process was stopped past the keepalive or held the batch past the
        lease timeout: then that batch may not be trained on. The next
        iteration confirms the batches before it on its own; call confirm()
        before optimizer.step() to be sure of the batch just yielded. On the
        CUDA path it waits for the copies in flight."""
        self._stream.confirm(drain=True)

    def close(self) -> None:
        """Detaches and deletes the job; batches still held stay readable."""
        self._held = None
        self._finalizer()

    def __enter__(self) -> "DataLoader":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # -- internals -------------------------------------------------------------

    @property
    def _stream(self) -> Stream:
        if self._resources.stream is None:
            raise ValueError("the DataLoader is closed")
        return self._resources.stream

    def _open_stream(self, start: Tuple[int, int]) -> None:
        self._stream_in_step = False  # until the new one is open
        self._resources.close_stream()
        spec = dict(self._spec, start_epoch=start[0], start_batch=start[1])
        self._resources.stream = Stream(
            self._resources.client, spec, self._name, self._prefetch,
            self._cuda_device, self._job_id)
        job = self._stream.job
        self._batches_per_epoch = int(job["batches_per_epoch"])
        self._num_samples = int(job["num_samples"])
        self._classes = job.get("class_names", [])
        self._next = start
        self._stream_in_step = True

    def _take(self, iterator: "_EpochIterator"):
        if iterator is not self._iterating:
            raise RuntimeError("this iterator was replaced by a newer "
                               "iter(loader); stoker serves one at a time")
        if self._shared:
            return self._take_shared(iterator)
        try:
            images, labels, epoch, index = self._next_batch()
        except BaseException:
            self._stream_in_step = False  # the next iteration opens afresh
            raise
        if (epoch, index) != self._next:
            self._stream_in_step = False
            raise errors.Internal(
                f"expected batch {self._next[1]} of epoch {self._next[0]}, "
                f"the daemon sent batch {index} of epoch {epoch}")
        self._next = self._after(epoch, index)
        return images, labels, epoch, index

    @property
    def _partition(self) -> bool:
        """A partition job: its epochs end when the daemon says so (a batch
        taken back from another consumer may come after the last one)."""
        sharing = self._stream.job.get("spec", {}).get("sharing", {})
        return sharing.get("mode") == _SHARING["partition"]

    def _after(self, epoch: int, index: int) -> Tuple[int, int]:
        """The place of the batch that follows batch `index` of `epoch`."""
        if index + 1 < self._batches_per_epoch:
            return epoch, index + 1
        return epoch + 1, 0

    def _take_shared(self, iterator: "_EpochIterator"):
        if self._stash is not None:
            batch, self._stash = self._stash, None
        else:
            batch = self._stream.next()
        images, labels, epoch, index = batch
        # A partition job sends a batch taken back from another consumer
        # (it went away, or was stopped past the lease timeout) again, after
        # later ones: it belongs to the epoch being iterated.
        if self._partition and epoch <= iterator.epoch:
            self._next = max(self._next, self._after(epoch, index))
            return batch
        if (epoch, index) < self._next:
            raise errors.Internal(
                f"the daemon sent batch {index} of epoch {epoch} after batch "
                f"{self._next[1]} of epoch {self._next[0]}")
        if epoch > iterator.epoch:
            if iterator.yielded == 0:  # joined later: this is its epoch
                iterator.epoch = epoch
            else:  # this epoch is over for this consumer
                self._stash = batch
                self._next = (epoch, 0)
                raise StopIteration
        self._next = self._after(epoch, index)
        return batch

    def _check_batch_transform(self, classes: int) -> None:
        if self._batch_transform is not None:
            batch_transforms.check_for_loader(
                self._batch_transform, self._spec["output"], classes)

    def _transformed(self, images, labels, epoch: int, index: int):
        """The batch through batch_transform, with its generator. On the
        CPU the batch under it stays held until the next one is taken, so
        that the next take confirms it (as a loop holding the batch would)."""
        if self._batch_transform is None:
            return images, labels
        if self._cuda_device is None:
            self._held = (images, labels)
        generator = None
        if self._with_generator:
            generator = batch_transforms.batch_generator(
                self._spec["seed"], self.rank, epoch, index)
        return batch_transforms.call_batch_transform(
            self._batch_transform, images, labels, generator,
            self._with_generator)

    def _next_batch(self):
        """The stream's next batch; when the daemon went away (restart, lost
        connection), a new job at the batch after the last one yielded."""
        deadline = None
        while True:
            try:
                if not self._stream_in_step:
                    self._open_stream(self._next)
                return self._stream.next()
            except errors.Unavailable:
                if self._shared:
                    raise
                now = time.monotonic()
                if deadline is None:
                    deadline = now + self._reconnect_timeout
                if now >= deadline:
                    raise
                self._stream_in_step = False
                try:
                    # Returns as soon as the daemon listens again; in
                    # slices, so that Ctrl-C is seen.
                    self._resources.reconnect(min(0.5, deadline - now))
                except errors.Unavailable:
                    time.sleep(0.05)  # not listening yet


class _EpochIterator:
    """One epoch of a DataLoader."""

    def __init__(self, loader: DataLoader, epoch: int):
        self._loader = loader
        self.epoch = epoch
        self.yielded = 0

    def __iter__(self):
        return self

    def __len__(self) -> int:
        return len(self._loader)

    def __next__(self) -> Tuple[torch.Tensor, torch.Tensor]:
        loader = self._loader
        with loader._guard:
            if loader._next[0] != self.epoch and not (
                    loader._shared and (self.yielded == 0 or loader._partition)):
                raise StopIteration
            images, labels, epoch, index = loader._take(self)
            self.yielded += 1
            return loader._transformed(images, labels, epoch, index)
