"""LoaderOptions: a DataLoader's keywords, resolved and checked once.

    options = LoaderOptions(root="/data/train", batch_size=256,
                            transform=T.Compose([...]), shuffle=True)
    spec = stoker.spec.build(options)      # the job's spec

stoker.DataLoader makes one from its keywords (the same names, defaults and
order) and hands it on: stoker.spec builds the job's spec from it, the
cursor (stoker.cursor) opens and follows the job's stream with it, and the
loader keeps what runs in this process (batch_transform, field_transforms)
and where to connect (socket, remote). The keywords' values are checked
here, when the options are made, before anything connects; the transform
and the names in fields= as stoker.spec translates them (also before
connecting), batch_transform against what the transform yields, and what
only the daemon knows (the dataset's files, its limits) when the job is
created.

A field holds its keyword's value once resolved: root and transform from a
torchvision ImageFolder given as root (folder: the object), shuffle, seed,
rank, world_size and shard_drop_last from sampler=, generator= and
torch.distributed, device as a torch.device (cuda_device: its index),
shards as the list of names it stands for (a shard list file read).
Immutable once made.
"""
from __future__ import annotations

import dataclasses
import os
from typing import Any, Dict, List, Optional, Sequence, Tuple, Union

import torch

from stoker import datasets, errors, recipe, transforms
from stoker import fields as sample_fields
from stoker import remote as remote_shards
from stoker.stream import VIEWS_ON_CPU

# The keywords' words and their wire values (stoker.v1's enums).
SHARING = {"exclusive": "CONSUMER_MODE_EXCLUSIVE",
           "broadcast": "CONSUMER_MODE_BROADCAST",
           "partition": "CONSUMER_MODE_PARTITION"}
ON_LAG = {"detach": "LAG_POLICY_DETACH", "skip": "LAG_POLICY_SKIP"}
ON_ERROR = {"replace": "ON_ERROR_REPLACE", "fail": "ON_ERROR_FAIL"}


@dataclasses.dataclass(frozen=True, eq=False)
class LoaderOptions:
    """stoker.DataLoader's keywords (documented there) and **ignored."""

    root: Any = None
    batch_size: int = 1
    transform: Any = None
    shuffle: bool = False
    drop_last: bool = False
    seed: Optional[int] = None
    device: Any = "cpu"
    socket: Optional[str] = None
    rank: Optional[int] = None
    world_size: Optional[int] = None
    shard_drop_last: Optional[bool] = None
    slots: int = 8
    prefetch: int = 2
    weight: int = 1
    on_error: str = "replace"
    sharing: str = "exclusive"
    max_lag: int = 0
    on_lag: str = "detach"
    min_consumers: int = 1
    access_group: str = ""
    name: str = "python"
    reconnect_timeout: float = 60.0
    job_id: Optional[str] = None
    fast_resample: bool = False
    repeated_augmentations: int = 1
    shards: Union[str, Sequence[str], None] = None
    manifest: Optional[str] = None
    label_field: str = ""
    # Credentials: never in a repr (a log line, a test's failure output).
    remote: Optional[Dict[str, Any]] = dataclasses.field(default=None,
                                                         repr=False)
    fields: Optional[Sequence[str]] = None
    missing: str = "error"
    max_field_bytes: int = 0
    field_workers: int = 0
    field_transforms: Optional[Dict[str, Any]] = None
    batch_transform: Any = None
    sampler: Any = None
    generator: Optional[torch.Generator] = None
    collate_fn: Any = None
    masks: Sequence[str] = ()
    mask_fill: int = 255
    streaming: Optional[bool] = None
    shuffle_window: int = 0
    # torch's worker keywords (recipe.IGNORED), accepted and ignored.
    ignored: Dict[str, Any] = dataclasses.field(default_factory=dict)
    # Resolved from the keywords above.
    folder: Any = dataclasses.field(default=None, init=False)
    cuda_device: Optional[int] = dataclasses.field(default=None, init=False)

    @classmethod
    def from_call(cls, arguments: Dict[str, Any]) -> "LoaderOptions":
        """From a call's arguments by name (DataLoader.__init__'s locals():
        its keywords, and **ignored as `ignored`)."""
        names = {f.name for f in dataclasses.fields(cls) if f.init}
        return cls(**{k: v for k, v in arguments.items() if k in names})

    def __post_init__(self) -> None:
        """Checks the keywords and resolves them (see the module's
        docstring). The transform is translated after them (stoker.spec), so
        a call with both a bad keyword and a bad transform hears of the
        keyword first."""
        root, transform, folder = datasets.unpack_root(self.root,
                                                       self.transform)
        recipe.refuse_collate_fn(self.collate_fn)
        order = recipe.order_options(self.sampler, self.generator,
                                     self.shuffle, self.seed, self.rank,
                                     self.world_size, self.shard_drop_last)
        recipe.log_ignored(self.ignored)
        order["rank"], order["world_size"] = _rank(order)
        _check_choices(self.sharing, self.on_lag, self.on_error)
        device, cuda_device = _device(self.device)
        if self.job_id is None and transforms.is_views(transform) and \
                cuda_device is not None:
            raise errors.Unimplemented(VIEWS_ON_CPU)
        shards = _dataset_shards(root, self.shards, self.manifest,
                                 self.label_field, self.streaming,
                                 self.shuffle_window)
        self._check_fields(cuda_device)
        resolved = dict(order, root=root, transform=transform, folder=folder,
                        device=device, cuda_device=cuda_device, shards=shards,
                        prefetch=int(self.prefetch),
                        reconnect_timeout=float(self.reconnect_timeout))
        for key, value in resolved.items():
            object.__setattr__(self, key, value)  # frozen once made

    @property
    def shared(self) -> bool:
        """A broadcast, partition or attached job: followed, not steered."""
        return self.job_id is not None or self.sharing != "exclusive"

    @property
    def num_workers(self) -> int:
        """torch's num_workers as given (0: not given); ignored."""
        return int(self.ignored.get("num_workers") or 0)

    def _check_fields(self, cuda_device: Optional[int]) -> None:
        """fields=, masks= and the options that go with them."""
        if not self.masks and self.mask_fill != 255:
            raise errors.InvalidArgument("mask_fill applies with masks= only")
        if self.fields is None and (self.missing != "error" or
                                    self.max_field_bytes or self.masks):
            raise errors.InvalidArgument(
                "missing, max_field_bytes and masks apply with fields= only")
        if self.fields is not None and self.masks:
            _check_mask_fill(self.mask_fill, cuda_device)
        if self.job_id is None:  # an attached job's, once it is known
            sample_fields.check_options(self.fields is not None,
                                        self.field_transforms,
                                        self.batch_transform)


def _distributed_rank() -> Tuple[int, int]:
    """(rank, world_size): torch.distributed if initialised, else RANK and
    WORLD_SIZE from the environment, else (0, 1)."""
    dist = torch.distributed
    if dist.is_available() and dist.is_initialized():
        return dist.get_rank(), dist.get_world_size()
    return int(os.environ.get("RANK", 0)), int(os.environ.get("WORLD_SIZE", 1))


def _rank(order: Dict[str, Any]) -> Tuple[int, int]:
    """(rank, world_size): as given (or implied by a sampler), else as
    _distributed_rank() finds them."""
    dist_rank, dist_world = _distributed_rank()
    rank = dist_rank if order["rank"] is None else int(order["rank"])
    world_size = (dist_world if order["world_size"] is None
                  else int(order["world_size"]))
    return rank, world_size


def _check_choices(sharing: str, on_lag: str, on_error: str) -> None:
    for value, table, what in ((sharing, SHARING, "sharing"),
                               (on_lag, ON_LAG, "on_lag"),
                               (on_error, ON_ERROR, "on_error")):
        if value not in table:
            raise errors.InvalidArgument(
                f"{what}={value!r}: one of {', '.join(table)}")


def _device(device: Any) -> Tuple[torch.device, Optional[int]]:
    """The torch device, and its CUDA index (None: the CPU)."""
    parsed = torch.device(device)
    if parsed.type not in ("cpu", "cuda"):
        raise errors.InvalidArgument(f"device {device!r}: cpu or cuda")
    if parsed.type != "cuda":
        return parsed, None
    if not torch.cuda.is_available():
        raise errors.FailedPrecondition(
            f"device={device!r}, but torch sees no CUDA device")
    return parsed, (parsed.index if parsed.index is not None
                    else torch.cuda.current_device())


def _dataset_shards(root: Any, shards: Any, manifest: Any, label_field: str,
                    streaming: Optional[bool],
                    shuffle_window: int) -> Optional[List[str]]:
    """Checks that exactly one of root, shards and manifest names the
    dataset, with the options that go with it; the shard names (None for a
    root or a manifest)."""
    named = [name for name, value in (("root", root), ("shards", shards),
                                      ("manifest", manifest))
             if value is not None]
    if len(named) != 1:
        raise errors.InvalidArgument(
            "name one dataset: root (an ImageFolder), shards or manifest"
            + (f", not {' and '.join(named)}" if named else ""))
    if label_field and shards is None:
        raise errors.InvalidArgument("label_field applies to shards only")
    names = remote_shards.shard_names(shards) if shards is not None else None
    if (streaming is not None or shuffle_window) and not (
            names and remote_shards.is_remote(names[0])):
        raise errors.InvalidArgument(
            "streaming and shuffle_window apply to remote shards only "
            "(s3:// or http(s)://)")
    return names


def _check_mask_fill(value: Any, cuda_device: Optional[int]) -> None:
    if cuda_device is not None:
        raise errors.Unimplemented(
            "masks are served on the CPU: use device=\"cpu\" and move the "
            "image and the mask with .cuda(non_blocking=True)")
    if isinstance(value, bool) or not isinstance(value, int) or \
            not 0 <= value <= 255:
        raise errors.InvalidArgument(
            f"mask_fill={value!r}: an index in [0, 255]")
