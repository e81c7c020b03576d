"""A DataLoader's options (stoker.options.LoaderOptions, checked as they
were made) -> its job's spec (a stoker.v1.JobSpec in its JSON form,
proto/stoker/v1/loader.proto).

build() makes the spec, its transform translated (stoker.transforms),
without the start position (the cursor adds start_epoch and start_batch to
each job it creates). check_resumable() tells whether a saved state
(DataLoader.state_dict()) is of the same stream.
"""
from __future__ import annotations

import importlib
import os
from typing import Any, Dict

from stoker import errors, remote, transforms
from stoker import fields as sample_fields
from stoker.options import ON_ERROR, ON_LAG, SHARING, LoaderOptions
# What a saved state must agree on to resume the same stream.
_STREAM_FIELDS = ("dataset", "batch_size", "output", "seed", "shuffle",
                  "drop_last", "pipeline", "rank", "world_size",
                  "shard_drop_last", "fields", "missing", "views")


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


def _dataset_spec(o: LoaderOptions) -> Dict[str, Any]:
    """The job spec's dataset, with paths made absolute from this process's
    directory."""
    if o.root is not None:
        return {"path": os.path.abspath(os.path.expanduser(os.fspath(o.root)))}
    if o.manifest is not None:
        return {"manifest": os.path.abspath(os.fspath(o.manifest))}
    # Remote shards (s3://, http(s)://) are URLs, not paths.
    spec = {"shards": [s if remote.is_remote(s) else os.path.abspath(s)
                       for s in o.shards]}
    if o.label_field:
        spec["label_field"] = o.label_field
    if o.streaming is not None:
        spec["streaming"] = bool(o.streaming)
    if o.shuffle_window:
        spec["shuffle_window"] = int(o.shuffle_window)
    return spec


def _lag_options(o: LoaderOptions) -> Dict[str, Any]:
    """The sharing fields beyond the mode, for a job that needs them."""
    if (o.sharing == "broadcast" or o.max_lag != 0 or o.on_lag != "detach"
            or o.min_consumers != 1):  # the daemon refuses them otherwise
        return dict(max_lag=int(o.max_lag), on_lag=ON_LAG[o.on_lag],
                    min_consumers=int(o.min_consumers))
    return {}


def build(options: LoaderOptions) -> Dict[str, Any]:
    """The JobSpec of a loader's options (checked as they were made), its
    transform translated; without the start position."""
    o = options
    # Attached to another's job, its pipeline applies.
    views = transforms.views(o.transform) if o.job_id is None else None
    pipeline, output = (transforms.translate(o.transform)
                        if o.job_id is None and views is None else ([], {}))
    spec = {
        "dataset": _dataset_spec(o), "batch_size": int(o.batch_size),
        "slots": int(o.slots), "output": output, "seed": int(o.seed),
        "shuffle": o.shuffle, "drop_last": bool(o.drop_last), "epochs": 0,
        "on_error": ON_ERROR[o.on_error], "name": o.name,
        "pipeline": pipeline, "rank": o.rank, "world_size": o.world_size,
        "shard_drop_last": o.shard_drop_last,
        "sharing": {"mode": SHARING[o.sharing], **_lag_options(o)},
        "weight": int(o.weight), "access_group": o.access_group,
        "fast_resample": bool(o.fast_resample),
        "repeated_augmentations": int(o.repeated_augmentations),
        "reference": _reference_versions(),
    }
    if views is not None:  # in place of the pipeline and output
        del spec["pipeline"], spec["output"]
        spec["views"] = views
    spec.update(_fields_spec(o))
    return spec


def _fields_spec(o: LoaderOptions) -> Dict[str, Any]:
    """The spec's fields, missing, max_field_bytes and a mask's options."""
    if o.fields is None:
        return {}
    planned = sample_fields.plan(o.fields, o.shards, o.manifest, o.masks)
    out = {"fields": sample_fields.spec_entries(planned),
           "missing": sample_fields.missing_value(o.missing),
           "max_field_bytes": int(o.max_field_bytes)}
    if o.masks:
        out["mask_fill"] = o.mask_fill
        out["mask_tensor_nearest"] = transforms.uses_v2(o.transform)
    return out


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
