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

Its keywords become one stoker.options.LoaderOptions, checked once, which
the rest reads: the job's spec is stoker.spec's (the transform's pipeline
stoker.transforms'); the place in the stream, its moves and its
reconnecting are the cursor's (stoker.cursor: ExclusiveCursor, or
SharedCursor for a broadcast, partition or attached job); the stream itself
is stoker.stream's. This module is torch's DataLoader surface over them,
and the batch_transform.
"""
from __future__ import annotations

import os
import threading
import weakref
from typing import Any, Dict, Iterator, Optional, Sequence, Tuple, Union

import torch

from stoker import _native, batch_transforms, datasets, errors, recipe
from stoker import remote as remote_shards
from stoker import fields as sample_fields
from stoker import spec as job_spec
from stoker.client import Client
from stoker.cursor import Cursor, ExclusiveCursor, SharedCursor
from stoker.epochs import EpochIterator
from stoker.options import LoaderOptions
from stoker.resources import Resources
from stoker.stream import Stream


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
        of its .json member. Or remote shards, all of them:
        "s3://bucket/train-{000000..001023}.tar" or https:// URLs, fetched
        into the daemon's shard cache when the job is created, or streamed
        when they do not fit it. Or a shard list: a .txt file naming one
        shard (path or URL) per line.
    streaming, shuffle_window: remote shards streamed (True), never (False)
        or when they do not fit the cache (None); a streamed job shuffles
        within windows of shuffle_window shards (0: 16). See docs/remote.md.
    remote: for remote shards, a dict of endpoint_url, region, path_style,
        profile, access_key_id, secret_access_key, session_token; what it
        leaves out comes from the AWS_* environment and ~/.aws (see
        stoker.remote). Sent with the job; the daemon keeps none of it.
    manifest: instead of root, a .csv (header: path,label[,class]) or
        .jsonl file of rows, in dataset order; relative paths in it are
        taken from its directory.
    transform: a torchvision transform or Compose (see stoker.transforms for
        what translates), or a list of stoker.v1.Op dicts.
    fields: instead of (images, labels), the fields each sample carries, as
        webdataset's to_tuple names them: ("jpg;png;jpeg;webp", "txt",
        "json") (shards: member suffixes, the first present; manifests: a
        column, "path" the image). Each batch is a tuple in this order: the
        image through transform, the others decoded and collated as
        stoker.fields says (str, int, JSON, numpy arrays, bytes).
        missing="skip" leaves out the samples without every field ("error":
        they fail through on_error); max_field_bytes bounds one value (0:
        the daemon's bound, 64 KiB). field_transforms={"txt": tokenize}
        runs per sample in this process before collation, on field_workers
        threads (0: inline).
    masks: the field of fields= that is the image's label mask (a PNG of
        mode P or L: ("png",), or a manifest column): it takes the image's
        crops, resizes, pads, flips and warps with the same draws (nearest,
        as on a PIL mask; mask_fill, default 255, where padding or a warp
        uncovers it) and arrives as int64 [B, H, W] (docs/python.md).
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
                 transform: Any = None, shuffle: bool = False,
                 drop_last: bool = False, seed: Optional[int] = None,
                 device: Any = "cpu", socket: Optional[str] = None,
                 rank: Optional[int] = None, world_size: Optional[int] = None,
                 shard_drop_last: Optional[bool] = None, slots: int = 8,
                 prefetch: int = 2, weight: int = 1, on_error: str = "replace",
                 sharing: str = "exclusive", max_lag: int = 0,
                 on_lag: str = "detach", min_consumers: int = 1,
                 access_group: str = "", name: str = "python",
                 reconnect_timeout: float = 60.0, job_id: Optional[str] = None,
                 fast_resample: bool = False, repeated_augmentations: int = 1,
                 shards: Union[str, Sequence[str], None] = None,
                 manifest: Optional[str] = None, label_field: str = "",
                 remote: Optional[Dict[str, Any]] = None,
                 fields: Optional[Sequence[str]] = None, missing: str = "error",
                 max_field_bytes: int = 0, field_workers: int = 0,
                 field_transforms: Optional[Dict[str, Any]] = None,
                 batch_transform: Any = None, sampler: Any = None,
                 generator: Optional[torch.Generator] = None,
                 collate_fn: Any = None, masks: Sequence[str] = (),
                 mask_fill: int = 255, streaming: Optional[bool] = None,
                 shuffle_window: int = 0, **ignored: Any):
        # The keywords once, checked before anything connects (see
        # stoker.options); the spec and the cursor read them from there.
        options = self._options = LoaderOptions.from_call(locals())
        self._spec = job_spec.build(options)
        self.rank, self.world_size = options.rank, options.world_size
        self.device = options.device
        self._sampler_epoch = recipe.SamplerEpoch(options.sampler)
        self._dataset, self._held = options.folder, None
        self._set_batch_transform(options.batch_transform)
        # Threads take turns: a stream one opens is never replaced (its job lost) by another's.
        self._guard, self._pid = threading.RLock(), os.getpid()
        access = remote_shards.job_access(self._spec["dataset"].get("shards"),
                                          options.remote)
        self._resources = Resources(Client(options.socket), access)
        self._finalizer = weakref.finalize(self, self._resources.close)
        self._iterating: Optional["weakref.ref[EpochIterator]"] = None
        cursor = SharedCursor if options.shared else ExclusiveCursor
        self._cursor: Cursor = cursor(self._resources, self._spec, options)
        self._open_batcher()

    # -- torch.utils.data.DataLoader's surface --------------------------------

    def __len__(self) -> int:
        """Batches per epoch for this rank."""
        return self._cursor.batches_per_epoch

    @property
    def batch_size(self) -> int:
        return self._spec["batch_size"]

    @property
    def drop_last(self) -> bool:
        return self._spec["drop_last"]

    @property
    def num_samples(self) -> int:
        """Samples in the dataset (all ranks)."""
        return self._cursor.num_samples

    @property
    def samples_skipped(self) -> int:
        """Samples left out of the dataset because they lacked one of
        fields= (missing="skip")."""
        return int(self._stream.job.get("samples_skipped", 0))

    @property
    def classes(self) -> list:
        """Class names; label i is classes[i] (ImageFolder's classes)."""
        return list(self._cursor.classes)

    @property
    def num_workers(self) -> int:
        """torch's num_workers, as given (stokerd's workers do the work:
        loader.input_stats(), stokerctl status)."""
        return self._options.num_workers

    @property
    def dataset(self) -> Any:
        """The ImageFolder given as root, else a stoker.datasets.LoaderDataset:
        len(), classes, class_to_idx; for a root, samples and targets too."""
        if self._dataset is None:
            root = self._options.root
            if isinstance(root, str):
                root = os.path.expanduser(root)
            self._dataset = datasets.LoaderDataset(
                self.num_samples, self._cursor.classes, root,
                self._options.transform)
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
        self._cursor.set_epoch(epoch)

    def __iter__(self) -> Iterator[Tuple[torch.Tensor, torch.Tensor]]:
        self._check_process()  # before the guard a parent's thread may hold
        with self._guard:
            epoch = self._sampler_epoch.changed()
            if epoch is not None:  # the sampler= given was set_epoch()ed
                self.set_epoch(epoch)
            self._cursor.begin()  # a shared stream goes on where it is
            # The iterator holds its loader, never the other way round: a
            # loader dropped with its iterators ends its job at once, not
            # when the cycle collector runs (maybe in a forked child).
            iterator = EpochIterator(self, self._cursor.next[0])
            self._iterating = weakref.ref(iterator)
            return iterator

    def state_dict(self) -> Dict[str, Any]:
        """Where to resume: the batch after the last one yielded (what was
        yielded counts as trained on; a loop left early resumes where it
        stopped), unless set_epoch() or load_state_dict() was called since
        the last iteration began; and the job spec."""
        epoch, batch = self._cursor.position()
        return {"version": 1, "epoch": epoch, "batch": batch,
                "batches_per_epoch": self._cursor.batches_per_epoch,
                "spec": dict(self._spec)}

    def load_state_dict(self, state: Dict[str, Any]) -> None:
        """Resumes at the saved position on the next iteration, with the same
        bytes an uninterrupted run would have had."""
        self._cursor.load_state(state)

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
        """Detaches and deletes the job; batches still held stay readable.
        In a process forked from the one that made the loader, forgets it
        (the parent's job goes on)."""
        self._held = None
        if self._batcher is not None and not _native.forked_from(self._pid):
            self._batcher.close()
        self._finalizer()

    def __enter__(self) -> "DataLoader":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # -- internals -------------------------------------------------------------

    def _set_batch_transform(self, batch_transform: Any) -> None:
        self._batch_transform = batch_transform
        self._with_generator = batch_transforms.accepts_generator(
            batch_transform) if batch_transform is not None else False
        self._check_batch_transform(0)

    def _check_process(self) -> None:
        """ForkedProcess in a process forked from the loader's (see
        docs/python.md, "Forked processes")."""
        if _native.forked_from(self._pid):
            raise _native.fork_error(self._pid, "this DataLoader")

    @property
    def _stream(self) -> Stream:
        return self._cursor.stream

    def _open_batcher(self) -> None:
        """The fields' batcher of the job's spec; closes the loader when
        it or the batch_transform is refused."""
        self._batcher: Optional[sample_fields.Batcher] = None
        o = self._options
        try:
            self._batcher = sample_fields.batcher_for(
                self._stream.job["spec"], o.field_transforms, o.field_workers,
                o.batch_transform)
            self._check_batch_transform(len(self._cursor.classes))
        except BaseException:
            self.close()
            raise

    def _check_batch_transform(self, classes: int) -> None:
        views = self._spec.get("views") or (
            hasattr(self, "_cursor") and self._stream.views)  # attached
        if self._batch_transform is not None and views:
            raise errors.InvalidArgument(
                "batch_transform takes one image tensor per batch; a job of "
                "views yields a list of them")
        if self._batch_transform is not None:
            batch_transforms.check_for_loader(
                self._batch_transform, self._spec["output"], classes)

    def _transformed(self, batch, epoch: int, index: int):
        """The batch through batch_transform, with its generator (or, for
        named fields, each field decoded, transformed and collated). On the
        CPU the batch under it stays held until the next one is taken, so
        that the next take confirms it (as a loop holding the batch would)."""
        if self._batcher is not None:
            return self._batcher(*batch)
        images, labels = batch
        if self._batch_transform is None:
            return images, labels
        if self._options.cuda_device is None:
            self._held = (images, labels)
        generator = None
        if self._with_generator:
            generator = batch_transforms.batch_generator(
                self._spec["seed"], self.rank, epoch, index)
        return batch_transforms.call_batch_transform(
            self._batch_transform, images, labels, generator,
            self._with_generator)
