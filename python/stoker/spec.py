"""A DataLoader's keyword arguments -> its job's spec (a stoker.v1.JobSpec
in its JSON form, proto/stoker/v1/loader.proto), with their checks.

build() makes the spec, without the start position (the cursor adds
start_epoch and start_batch to each job it creates), and what else the
arguments decide: the dataset root and transform (an ImageFolder's, when
one is given as root), the device, whether the job is shared.
check_resumable() tells whether a saved state (DataLoader.state_dict())
is of the same stream.
"""
from __future__ import annotations

import dataclasses
import importlib
import os
from typing import Any, Dict, Optional, Tuple

import torch

from stoker import datasets, errors, recipe, remote, transforms
from stoker import fields as sample_fields
from stoker.stream import VIEWS_ON_CPU

SHARING = {"exclusive": "CONSUMER_MODE_EXCLUSIVE",
           "broadcast": "CONSUMER_MODE_BROADCAST",
           "partition": "CONSUMER_MODE_PARTITION"}
_ON_LAG = {"detach": "LAG_POLICY_DETACH", "skip": "LAG_POLICY_SKIP"}
_ON_ERROR = {"replace": "ON_ERROR_REPLACE", "fail": "ON_ERROR_FAIL"}
# What a saved state must agree on to resume the same stream.
_STREAM_FIELDS = ("dataset", "batch_size", "output", "seed", "shuffle",
                  "drop_last", "pipeline", "rank", "world_size",
                  "shard_drop_last", "fields", "missing", "views")


@dataclasses.dataclass
class Plan:
    """What a DataLoader's arguments come to."""

    spec: Dict[str, Any]  # the JobSpec, without its start position
    root: Any  # the dataset root path as given, or None
    transform: Any  # the transform given, else the ImageFolder's
    folder: Any  # the torchvision ImageFolder given as root, or None
    sampler_epoch: recipe.SamplerEpoch
    device: torch.device
    cuda_device: Optional[int]  # the CUDA device's index; None on the CPU
    shared: bool  # broadcast, partition or attached: followed, not steered


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


def _dataset_spec(root, shards, manifest, label_field, streaming=None,
                  shuffle_window=0) -> Dict[str, Any]:
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
    names = remote.shard_names(shards) if shards is not None else []
    if (streaming is not None or shuffle_window) and not (
            names and remote.is_remote(names[0])):
        raise errors.InvalidArgument(
            "streaming and shuffle_window apply to remote shards only "
            "(s3:// or http(s)://)")
    if root is not None:
        return {"path": os.path.abspath(os.path.expanduser(os.fspath(root)))}
    if manifest is not None:
        return {"manifest": os.path.abspath(os.fspath(manifest))}
    # Remote shards (s3://, http(s)://) are URLs, not paths.
    spec = {"shards": [s if remote.is_remote(s) else os.path.abspath(os.fspath(s))
                       for s in names]}
    if label_field:
        spec["label_field"] = label_field
    if streaming is not None:
        spec["streaming"] = bool(streaming)
    if shuffle_window:
        spec["shuffle_window"] = int(shuffle_window)
    return spec


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
                               (on_lag, _ON_LAG, "on_lag"),
                               (on_error, _ON_ERROR, "on_error")):
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


def _lag_options(sharing: str, max_lag: int, on_lag: str,
                 min_consumers: int) -> Dict[str, Any]:
    """The sharing fields beyond the mode, for a job that needs them."""
    if (sharing == "broadcast" or max_lag != 0 or on_lag != "detach" or
            min_consumers != 1):  # the daemon refuses them otherwise
        return dict(max_lag=int(max_lag), on_lag=_ON_LAG[on_lag],
                    min_consumers=int(min_consumers))
    return {}


def build(*, root: Any, transform: Any, shards: Any, manifest: Any,
          label_field: str, batch_size: int, shuffle: bool, drop_last: bool,
          seed: Optional[int], rank: Optional[int],
          world_size: Optional[int], shard_drop_last: Optional[bool],
          device: Any, slots: int, weight: int, on_error: str, sharing: str,
          max_lag: int, on_lag: str, min_consumers: int, access_group: str,
          name: str, job_id: Optional[str], fast_resample: bool,
          repeated_augmentations: int, sampler: Any, generator: Any,
          collate_fn: Any, fields: Any, missing: str, max_field_bytes: int,
          masks: Any, mask_fill: int, streaming: Optional[bool] = None,
          shuffle_window: int = 0, ignored: Dict[str, Any]) -> Plan:
    """The Plan for DataLoader's arguments of these names (`ignored`: its
    **ignored), checked in the order the loader always checked them."""
    root, transform, folder = datasets.unpack_root(root, transform)
    recipe.refuse_collate_fn(collate_fn)
    order = recipe.order_options(sampler, generator, shuffle, seed, rank,
                                 world_size, shard_drop_last)
    recipe.log_ignored(ignored)
    sampler_epoch = recipe.SamplerEpoch(sampler)
    # Attached to another's job, its pipeline applies.
    views = transforms.views(transform) if job_id is None else None
    pipeline, output = (transforms.translate(transform)
                        if job_id is None and views is None else ([], {}))
    rank, world_size = _rank(order)
    _check_choices(sharing, on_lag, on_error)
    torch_device, cuda_device = _device(device)
    if views is not None and cuda_device is not None:  # before any job
        raise errors.Unimplemented(VIEWS_ON_CPU)
    spec = {
        "dataset": _dataset_spec(root, shards, manifest, label_field,
                                 streaming, shuffle_window),
        "batch_size": int(batch_size), "slots": int(slots),
        "output": output, "seed": int(order["seed"]),
        "shuffle": order["shuffle"],
        "drop_last": bool(drop_last), "epochs": 0,
        "on_error": _ON_ERROR[on_error], "name": name,
        "pipeline": pipeline, "rank": rank, "world_size": world_size,
        "shard_drop_last": order["shard_drop_last"],
        "sharing": {"mode": SHARING[sharing]},
        "weight": int(weight), "access_group": access_group,
        "fast_resample": bool(fast_resample),
        "repeated_augmentations": int(repeated_augmentations),
        "reference": _reference_versions(),
    }
    if views is not None:  # in place of the pipeline and output
        del spec["pipeline"], spec["output"]
        spec["views"] = views
    spec["sharing"].update(_lag_options(sharing, max_lag, on_lag,
                                        min_consumers))
    spec.update(_fields_spec(fields, shards, manifest, missing,
                             max_field_bytes, masks, mask_fill, transform,
                             cuda_device))
    return Plan(spec, root, transform, folder, sampler_epoch, torch_device,
                cuda_device, job_id is not None or sharing != "exclusive")


def _fields_spec(fields: Any, shards: Any, manifest: Any, missing: str,
                 max_field_bytes: int, masks: Any, mask_fill: Any,
                 transform: Any, cuda_device: Optional[int]) -> Dict[str, Any]:
    """The spec's fields, missing, max_field_bytes and a mask's options."""
    if not masks and mask_fill != 255:
        raise errors.InvalidArgument("mask_fill applies with masks= only")
    if fields is None:
        if missing != "error" or max_field_bytes or masks:
            raise errors.InvalidArgument(
                "missing, max_field_bytes and masks apply with fields= only")
        return {}
    planned = sample_fields.plan(fields, shards, manifest, masks)
    out = {"fields": sample_fields.spec_entries(planned),
           "missing": sample_fields.missing_value(missing),
           "max_field_bytes": int(max_field_bytes)}
    if masks:
        out["mask_fill"] = _mask_fill(mask_fill, cuda_device)
        out["mask_tensor_nearest"] = transforms.uses_v2(transform)
    return out


def _mask_fill(value: Any, cuda_device: Optional[int]) -> int:
    if cuda_device is not None:
        raise errors.Unimplemented(
            "masks are served on the CPU: use device=\"cpu\" and move the "
            "image and the mask with .cuda(non_blocking=True)")
    if isinstance(value, bool) or not isinstance(value, int) or \
            not 0 <= value <= 255:
        raise errors.InvalidArgument(
            f"mask_fill={value!r}: an index in [0, 255]")
    return value


def check_resumable(state: Dict[str, Any], spec: Dict[str, Any],
                    batches_per_epoch: int) -> None:
    """Refuses a saved state that is not a DataLoader's, or is of another
    stream than `spec`'s (naming the fields that differ)."""
    if state.get("version") != 1:
        raise errors.InvalidArgument(
            f"not a stoker DataLoader state (version {state.get('version')!r})")
    saved = state["spec"]
    differ = [f for f in _STREAM_FIELDS if saved.get(f) != spec.get(f)]
    if state.get("batches_per_epoch") != batches_per_epoch:
        differ.append("batches_per_epoch (the dataset changed: saved "
                      f"{state.get('batches_per_epoch')}, now "
                      f"{batches_per_epoch})")
    if differ:
        raise errors.InvalidArgument(
            "the saved state is of another stream; these differ: " +
            ", ".join(f if f.startswith("batches_per_epoch") else
                      f"{f} (saved {saved.get(f)!r}, now "
                      f"{spec.get(f)!r})" for f in differ))
