"""Samples of named fields (DataLoader(fields=...)): which member or column
each field reads, how its bytes become a Python value in the trainer, and
how a batch's values are collated.

    loader = stoker.DataLoader(shards=..., transform=preprocess,
                               fields=("jpg;png;jpeg;webp", "txt", "json"),
                               field_transforms={"txt": tokenize})
    for images, tokens, metadata in loader:
        ...

A field names tar-shard member suffixes as webdataset's to_tuple does
("jpg;png": the first the sample has), or a manifest column. The daemon
decodes an image field through `transform` and passes every other field's
bytes through unparsed; here they are decoded as webdataset's default
decoders decode them, by the last dot part of the suffix:

    txt text transcript        str (UTF-8)
    cls cls2 index inx id      int
    json jsn                   the parsed JSON value
    npy                        a numpy array (object arrays refused)
    pyd pickle pkl pth         refused: nothing is ever unpickled
    anything else              bytes

A manifest's "path" column is its image; a CSV's other columns are str, a
JSON-lines file's the JSON values. Then each field's field_transforms
callable runs per sample, and the batch is collated as torch's
default_collate does: numbers and same-shape arrays or tensors stacked,
strings, bytes, JSON objects and lists kept as lists.
"""
from __future__ import annotations

import concurrent.futures
import dataclasses
import io
import json
import os
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

import torch

from stoker.errors import DataLoss, InvalidArgument, UnsupportedTransform

IMAGE_SUFFIXES = ("jpg", "jpeg", "png", "webp", "ppm", "pgm", "bmp", "tif",
                  "tiff")
_PICKLED = ("pyd", "pickle", "pkl", "pth")
_MISSING = {"error": "MISSING_FIELD_ERROR", "skip": "MISSING_FIELD_SKIP"}


def _text(data: bytes) -> str:
    return data.decode("utf-8")


def _int(data: bytes) -> int:
    return int(data)


def _json(data: bytes) -> Any:
    return json.loads(data)


def _npy(data: bytes) -> Any:
    import numpy.lib.format
    return numpy.lib.format.read_array(io.BytesIO(data), allow_pickle=False)


def _bytes(data: bytes) -> bytes:
    return data


_DECODERS: Dict[str, Callable[[bytes], Any]] = {
    "txt": _text, "text": _text, "transcript": _text,
    "cls": _int, "cls2": _int, "index": _int, "inx": _int, "id": _int,
    "json": _json, "jsn": _json, "npy": _npy}


@dataclasses.dataclass(frozen=True)
class Field:
    """One field of every sample, as the loader asked for it."""

    name: str  # as given: "jpg;png", "txt", a manifest column
    source: Tuple[str, ...]  # suffixes, or one column
    image: bool  # decoded through `transform` by the daemon
    decode: Callable[[bytes], Any]  # bytes fields: the value in the trainer
    mask: bool = False  # the image's label mask, through its geometry


def _last_part(suffix: str) -> str:
    return suffix.rsplit(".", 1)[-1]


def _shard_field(name: str) -> Field:
    source = tuple(name.split(";"))
    if any(s == "" or s != s.lower() for s in source):
        raise InvalidArgument(
            f"fields: {name!r}: suffixes are lower-case and not empty "
            "(members' suffixes are lower-cased, as webdataset does)")
    pickled = [s for s in source if _last_part(s) in _PICKLED]
    if pickled:
        raise UnsupportedTransform(
            f"fields: {name!r}: {pickled[0]} members hold pickles, and "
            "stoker never unpickles (a pickle runs code when loaded); store "
            "such values as .npy, .json or .txt")
    images = [_last_part(s) in IMAGE_SUFFIXES for s in source]
    if any(images) != all(images):
        raise InvalidArgument(
            f"fields: {name!r} mixes image suffixes and others; one field is "
            "an image or a value")
    decoders = {_DECODERS.get(_last_part(s), _bytes) for s in source}
    if not images[0] and len(decoders) > 1:
        raise InvalidArgument(
            f"fields: {name!r}: its suffixes decode differently; give "
            "alternatives that decode alike (\"txt;text\", \"json;jsn\")")
    return Field(name, source, images[0], decoders.pop())


def _manifest_field(name: str, manifest: str) -> Field:
    if ";" in name:
        raise InvalidArgument(
            f"fields: {name!r}: a manifest field names one column")
    csv = manifest.lower().endswith(".csv")
    return Field(name, (name,), name == "path", _text if csv else _json)


def _as_mask(field: Field, manifest: Optional[str]) -> Field:
    if manifest is None and any(_last_part(s) != "png" for s in field.source):
        raise InvalidArgument(
            f"masks: {field.name!r}: a mask is a PNG (mode P or L) member, "
            "such as \"png\" or \"seg.png\"")
    return dataclasses.replace(field, image=False, mask=True)


def plan(fields: Sequence[str], shards: Any, manifest: Optional[str],
         masks: Sequence[str] = ()) -> List[Field]:
    """The fields asked for, checked: tar shards' member suffixes or a
    manifest's columns, exactly one image among them (the daemon says so
    too), each name once; those named in `masks` the image's label
    mask."""
    if isinstance(fields, str):
        raise InvalidArgument(
            "fields is a tuple of names, such as (\"jpg;png\", \"txt\")")
    if shards is None and manifest is None:
        raise InvalidArgument(
            "fields apply to shards and manifests; an ImageFolder's samples "
            "are (image, class)")
    names = [str(name) for name in fields]
    if len(set(names)) != len(names):
        raise InvalidArgument(f"fields {names!r} name a field twice")
    made = [_shard_field(n) if manifest is None else _manifest_field(n, manifest)
            for n in names]
    masks = [masks] if isinstance(masks, str) else [str(m) for m in masks]
    unknown = [m for m in masks if m not in names]
    if unknown or len(masks) > 1:
        raise InvalidArgument(
            f"masks={masks!r}: name one of fields {names!r}" if unknown else
            f"masks={masks!r}: a sample has one label mask")
    made = [_as_mask(f, manifest) if f.name in masks else f for f in made]
    images = [f.name for f in made if f.image]
    if len(images) != 1:
        raise InvalidArgument(
            f"fields {names!r} hold {len(images)} image fields; a sample has "
            "exactly one (" + ("\"path\" in a manifest" if manifest else
                               "suffixes such as \"jpg;png\"") + ")" +
            ("; a second image per sample is not supported (a label mask "
             "is masks=(name,); several views of the image are "
             "transform=[t1, t2, ...])" if images else ""))
    return made


def from_job(spec: Dict[str, Any]) -> Optional[List[Field]]:
    """The fields of a job, from its spec as the daemon applies it (kinds
    chosen); None for a classic job. Decoders as plan() chooses them, but
    that a pickle stays bytes (a job another program made)."""
    entries = spec.get("fields")
    if not entries:
        return None
    manifest = spec.get("dataset", {}).get("manifest")
    made = []
    for entry in entries:
        source = tuple(entry.get("source", ()))
        if manifest:
            decode = _text if manifest.lower().endswith(".csv") else _json
        else:
            decode = _DECODERS.get(_last_part(source[0]), _bytes)
        made.append(Field(entry["name"], source,
                          entry.get("kind") == "FIELD_KIND_IMAGE", decode,
                          entry.get("kind") == "FIELD_KIND_MASK"))
    return made


def spec_entries(fields: List[Field]) -> List[Dict[str, Any]]:
    """The job spec's fields (stoker.v1.SampleField: a mask's kind set,
    the others' left to the daemon, which chooses them by the same
    rules)."""
    return [{"name": f.name, "source": list(f.source),
             **({"kind": "FIELD_KIND_MASK"} if f.mask else {})}
            for f in fields]


def missing_value(missing: str) -> str:
    if missing not in _MISSING:
        raise InvalidArgument(f"missing={missing!r}: one of error, skip")
    return _MISSING[missing]


def collate(values: List[Any]) -> Any:
    """One field's values of a batch, as torch's default_collate collates
    them, but that strings, bytes, dicts and lists stay lists (not
    transposed) and values of unlike shapes or types stay a list."""
    first = values[0]
    kind = type(first)
    if any(type(v) is not kind for v in values):
        return list(values)
    if isinstance(first, torch.Tensor):
        if all(v.shape == first.shape and v.dtype == first.dtype
               for v in values):
            return torch.stack(values)
        return list(values)
    if kind.__module__ == "numpy":
        import numpy
        if (getattr(first, "dtype", None) is not None
                and first.dtype.kind in "biufc"
                and all(v.shape == first.shape and v.dtype == first.dtype
                        for v in values)):
            return _tensor_or_list(lambda: torch.as_tensor(numpy.stack(values)),
                                   values)
        return list(values)
    if kind is float:
        return torch.tensor(values, dtype=torch.float64)
    if kind in (int, bool):
        return _tensor_or_list(lambda: torch.tensor(values), values)
    return list(values)


def _tensor_or_list(make: Callable[[], torch.Tensor], values: List[Any]) -> Any:
    """A tensor of the values, or the list where torch has no tensor for
    them (an int past int64, a big-endian or unsigned array torch lacks)."""
    try:
        return make()
    except (TypeError, ValueError, RuntimeError, OverflowError):
        return list(values)


def check_transforms(fields: List[Field],
                     transforms: Optional[Dict[str, Callable]]) -> None:
    for name, function in (transforms or {}).items():
        field = next((f for f in fields if f.name == name), None)
        if field is None:
            raise InvalidArgument(
                f"field_transforms[{name!r}]: no such field in fields "
                f"{[f.name for f in fields]!r}")
        if field.image or field.mask:
            raise InvalidArgument(
                f"field_transforms[{name!r}]: an image or mask field goes "
                "through transform= in the daemon; run batch-level code in "
                "the loop")
        if not callable(function):
            raise InvalidArgument(f"field_transforms[{name!r}] is not callable")


class Batcher:
    """Turns a batch's fields as the stream gives them (an image tensor, or
    one bytes object per sample) into the tuple the loader yields."""

    def __init__(self, fields: List[Field],
                 transforms: Optional[Dict[str, Callable]], workers: int):
        check_transforms(fields, transforms)
        self._fields = fields
        self._transforms = dict(transforms or {})
        self._workers = int(workers)
        self._pool: Optional[concurrent.futures.ThreadPoolExecutor] = None
        self._pid = os.getpid()

    def _map(self, function: Callable, values: List[Any]) -> List[Any]:
        if self._workers <= 0 or len(values) < 2:
            return [function(v) for v in values]
        if self._pool is None or self._pid != os.getpid():
            # A pool of the parent's is no use in a forked child.
            self._pool = concurrent.futures.ThreadPoolExecutor(
                self._workers, thread_name_prefix="stoker-fields")
            self._pid = os.getpid()
        return list(self._pool.map(function, values))

    def _values(self, field: Field, raw: List[bytes],
                indices: Sequence[int]) -> Any:
        transform = self._transforms.get(field.name)
        decode = field.decode

        def one(row: int) -> Any:
            try:
                value = decode(raw[row])
            except Exception as error:
                raise DataLoss(
                    f"field {field.name!r} of sample {indices[row]} does not "
                    f"decode as {field.source[0]!r}: {error!r}") from error
            return value if transform is None else transform(value)

        return collate(self._map(one, list(range(len(raw)))))

    def __call__(self, raw: Sequence[Any],
                 indices: Sequence[int]) -> Tuple[Any, ...]:
        """The batch's values, field by field; `indices`, each row's
        dataset index, names a sample whose value does not decode
        (stoker.DataLoss; a field_transforms callable's own errors pass
        through as they are)."""
        return tuple(value if field.image else
                     value.to(torch.int64) if field.mask else
                     self._values(field, value, indices)
                     for field, value in zip(self._fields, raw))

    def close(self) -> None:
        pool, self._pool = self._pool, None
        if pool is not None and self._pid == os.getpid():
            pool.shutdown(wait=False)


def check_options(named_fields: bool, field_transforms: Any,
                  batch_transform: Any) -> None:
    """The loader's options that go with named fields, or without them."""
    if not named_fields and field_transforms:
        raise InvalidArgument("field_transforms applies with fields=")
    if named_fields and batch_transform is not None:
        raise InvalidArgument(
            "batch_transform takes (images, labels) batches; with fields=, "
            "run batch-level code on the yielded tuple in the loop")


def batcher_for(spec: Dict[str, Any], field_transforms: Any, workers: int,
                batch_transform: Any) -> Optional[Batcher]:
    """What turns a batch of the job's named fields into the tuple yielded;
    None for a classic job (images, labels)."""
    fields = from_job(spec)
    check_options(fields is not None, field_transforms, batch_transform)
    if fields is None:
        return None
    return Batcher(fields, field_transforms, workers)
