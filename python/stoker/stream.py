"""The loader's connection to its job: one consumer's stream of batches
as torch tensors (views of the daemon's shared memory, or copies on a CUDA
device), and the leases that keep a viewed batch's slot until its tensors
are gone.
"""
from __future__ import annotations

import ctypes
import os
import threading
import weakref
from typing import Any, Dict, List, Optional

import torch

from stoker import _native, errors
from stoker.client import Client

_POLL_MS = 100  # how often a wait for a batch returns to check for Ctrl-C
_TORCH_DTYPES = {_native.DTYPE_UINT8: torch.uint8,
                 _native.DTYPE_FLOAT32: torch.float32,
                 _native.DTYPE_FLOAT16: torch.float16,
                 _native.DTYPE_INT64: torch.int64}
# device="cuda": copy each batch on the loader's own stream, which the
# trainer's current stream then waits for, so that the copy of batch i+1
# runs while the trainer's step i still computes (on the trainer's stream
# it would queue behind that step). False: on the trainer's stream, for
# bench/gpu/overlap.py's comparison.
SIDE_STREAM_COPIES = True


class _Lease:
    """One batch's slot, held while any tensor viewing it lives."""

    __slots__ = ("_handle", "_owner", "__weakref__")

    def __init__(self, handle: ctypes.c_void_p, owner: "_Leases"):
        self._handle = handle
        self._owner = owner
        owner.taken()

    def __del__(self):
        handle, self._handle = self._handle, None
        # In a forked child the handle (and the count's lock) are the
        # parent's: left alone.
        if (handle is not None and _native is not None
                and not _native.forked_from(self._owner.pid)):
            self._owner.given_back()
            _native.library().stoker_batch_release(handle)


class _Leases:
    """Counts a consumer's batches still held by tensors, and remembers the
    ones handed out and not yet confirmed."""

    def __init__(self):
        self._lock = threading.Lock()
        self.pid = os.getpid()  # the process whose consumer took them
        self.held = 0
        self._unconfirmed: List["weakref.ref[_Lease]"] = []

    def taken(self):
        with self._lock:
            self.held += 1

    def given_back(self):
        with self._lock:
            self.held -= 1

    def handed_out(self, lease: _Lease):
        with self._lock:
            self._unconfirmed.append(weakref.ref(lease))

    def take_unconfirmed(self) -> List[_Lease]:
        """The leases handed out since the last call and still alive (held
        here, so that they cannot be released while confirmed)."""
        with self._lock:
            refs, self._unconfirmed = self._unconfirmed, []
        return [lease for lease in (ref() for ref in refs) if lease is not None]


_buffer_types: Dict[int, type] = {}


def _view(address: int, nbytes: int, lease: _Lease, dtype, shape):
    """A tensor over `nbytes` at `address` that keeps `lease` alive."""
    buffer_type = _buffer_types.get(nbytes)
    if buffer_type is None:
        # A subclass of a ctypes array can carry the lease as an attribute.
        buffer_type = type("_LeasedBytes", (ctypes.c_uint8 * nbytes,), {})
        _buffer_types[nbytes] = buffer_type
    buffer = buffer_type.from_address(address)
    buffer.lease = lease
    # frombuffer keeps `buffer` (and so the lease) alive with the storage.
    return torch.frombuffer(buffer, dtype=dtype).view(shape)


def _fields(handle, count: int, n: int, lease: Optional[_Lease]) -> List[Any]:
    """Per field of the batch: a bytes field's values, each copied out of
    the ring (a length never read past its row, as in
    Batch::Field::value); a tensor field as a view of the ring that keeps
    `lease`, or None without one (the CUDA path copies the image field)."""
    lib = _native.library()
    values: List[Any] = []
    for i in range(count):
        info = _native.FieldInfo()
        _native.check(lib.stoker_batch_field(handle, i, ctypes.byref(info)))
        if info.kind == _native.FIELD_BYTES:
            stride = int(info.row_stride)
            lengths = (ctypes.c_int64 * n).from_address(info.lengths)
            base = int(info.data or 0)
            sizes = [min(max(lengths[j], 0), stride) for j in range(n)]
            values.append([ctypes.string_at(base + j * stride, size) if size
                           else b"" for j, size in enumerate(sizes)])
        elif lease is None:
            values.append(None)
        else:
            values.append(_view(info.data, int(info.bytes), lease,
                                _TORCH_DTYPES[info.dtype],
                                tuple(info.shape[:info.rank])))
    if lease is None and values.count(None) > 1:
        raise errors.Unimplemented(
            "a batch of several tensor fields cannot be copied to the GPU "
            "yet; use device=\"cpu\"")
    return values


# Views come as views of the ring; CudaCopier copies one image tensor.
VIEWS_ON_CPU = ("views are served on the CPU: use device=\"cpu\" and move "
                "each view with .cuda(non_blocking=True), as DINO's loop does")


def _group_views(values: List[Any], views: int,
                 fields: Optional[List[Dict[str, Any]]]) -> List[Any]:
    """The batch's tensors with the image field's `views` tensors (one per
    view, in order) as one list in its place."""
    image = 0
    for i, field in enumerate(fields or []):
        if field.get("kind") == "FIELD_KIND_IMAGE":
            image = i
    return (values[:image] + [list(values[image:image + views])] +
            values[image + views:])


class Stream:
    """One job and the consumer attached to it."""

    def __init__(self, client: Client, spec: Optional[Dict[str, Any]],
                 name: str, prefetch: int, cuda_device: Optional[int],
                 job_id: Optional[str] = None,
                 remote: Optional[Dict[str, Any]] = None):
        lib = _native.library()
        self._pid = os.getpid()
        # A job of its own (deleted on close), or another's to attach to.
        self.owned = job_id is None
        self.job = (client.create_job(spec, remote) if self.owned
                    else client.get_job(job_id))
        # A job of named fields (JobSpec.fields) yields them, not labels.
        self.named_fields = bool(self.job["spec"].get("fields"))
        # A job of views (JobSpec.views) yields a list of view tensors.
        self.views = len(self.job["spec"].get("views") or [])
        self._client = client
        self.cuda_device = cuda_device
        self.leases = _Leases()
        self._consumer = None
        self._copier = None
        self._copy_stream = None
        # next() and close() may come from different threads (close() at
        # exit while a thread waits): the handle is freed only between polls.
        self._lock = threading.Lock()
        try:
            if self.views and cuda_device is not None:
                raise errors.Unimplemented(VIEWS_ON_CPU)
            options = _native.ConsumerOptions(
                prefetch=prefetch, name=name.encode(),
                # The SDK's Reconnector is off: stoker.cursor's
                # ExclusiveCursor reconnects (the only place that does).
                reconnect_timeout_ms=0,
                copy_on_write=int(cuda_device is None))
            consumer = ctypes.c_void_p()
            _native.check(lib.stoker_attach(client.handle,
                                            self.job["id"].encode(),
                                            ctypes.byref(options),
                                            ctypes.byref(consumer)))
            self._consumer = consumer
            if cuda_device is not None:
                copier = ctypes.c_void_p()
                _native.check(lib.stoker_cuda_copier_create(
                    consumer, cuda_device, ctypes.byref(copier)))
                self._copier = copier
                self._copy_stream = torch.cuda.Stream(
                    torch.device("cuda", cuda_device))
        except BaseException:
            self.close()
            raise

    def confirm(self, drain: bool = False) -> None:
        """Confirms the batches handed out so far: each is this consumer's
        for good, or raises the daemon's reason for taking it back. With a
        CUDA copier, copies confirm their batch once done; `drain` waits for
        them."""
        self._check_process()
        lib = _native.library()
        if self._copier is not None:
            if drain:
                with self._lock:
                    if self._copier is not None:
                        _native.check(lib.stoker_cuda_drain(self._copier))
            return
        for lease in self.leases.take_unconfirmed():
            handle = lease._handle
            if handle is not None:
                _native.check(lib.stoker_batch_check_intact(handle))

    def next(self):
        """The next batch as ((images, labels), epoch, index); in a job of
        named fields, ((fields, indices), epoch, index): per field an image
        tensor, or the bytes of each sample's value; each row's dataset
        index."""
        lib = _native.library()
        # The batches yielded before were trained on: if the daemon took one
        # back (this process was stopped past the keepalive or the lease
        # timeout), the trainer hears it here rather than never.
        self.confirm()
        handle = ctypes.c_void_p()
        info = _native.BatchInfo()
        slots = int(self.job["spec"]["slots"])
        while True:
            if self._copier is None and self.leases.held >= slots:
                raise errors.ResourceExhausted(
                    f"all {slots} slots of the ring are held by batch tensors "
                    "still alive; keep copies (tensor.clone()) of what you "
                    "keep across steps, or raise slots=")
            with self._lock:
                if self._consumer is None:
                    raise ValueError("the DataLoader is closed")
                code = lib.stoker_next(self._consumer, _POLL_MS,
                                       ctypes.byref(handle), ctypes.byref(info))
            if code != _native.STATUS_NEXT_TIMED_OUT:  # none within _POLL_MS
                break  # back in Python between waits: Ctrl-C is seen here
        _native.check(code)
        owned = False  # until a lease or the copier owns the handle
        try:
            n = int(info.size)
            shape = tuple(info.shape)
            dtype = _TORCH_DTYPES[info.dtype]
            values, indices, images, labels = None, None, None, None
            count = int(info.field_count)
            if self.named_fields:
                indices = list((ctypes.c_int64 * n).from_address(info.indices))
            if self._copier is None:
                lease = _Lease(handle, self.leases)
                owned = True
                self.leases.handed_out(lease)
                if self.named_fields or self.views:
                    values = _fields(handle, count, n, lease)
                else:
                    images = _view(info.images, int(info.image_bytes), lease,
                                   dtype, shape)
                    labels = _view(info.labels, n * 8, lease, torch.int64,
                                   (n,))
            else:
                if self.named_fields:  # first: the copier releases the batch
                    values = _fields(handle, count, n, None)
                images, labels, streams = self._allocate(shape, dtype, n)
                owned = True  # taken by the copy, released once it completed
                self._copy(handle, images, labels, *streams)
        except BaseException:
            if not owned:
                lib.stoker_batch_release(handle)
            raise
        return (self._batch(values, images, labels, indices), int(info.epoch),
                int(info.index))

    def _batch(self, values, images, labels, indices):
        """(images, labels), ([views], labels), or (fields, indices)."""
        if values is None:
            return images, labels
        if self.views:
            values = _group_views(values, self.views,
                                  self.job["spec"].get("fields"))
        if not self.named_fields:
            return values[0], values[1]
        return tuple(images if v is None else v for v in values), indices

    def _allocate(self, shape, dtype, n):
        """GPU tensors for a batch (no labels in a job of named fields),
        from the copy stream's pool, and the (copy, current) streams."""
        device = torch.device("cuda", self.cuda_device)
        current = torch.cuda.current_stream(device)
        copy = self._copy_stream if SIDE_STREAM_COPIES else current
        with torch.cuda.stream(copy):
            images = torch.empty(shape, dtype=dtype, device=device)
            labels = (None if self.named_fields else
                      torch.empty((n,), dtype=torch.int64, device=device))
        return images, labels, (copy, current)

    def _copy(self, handle, images, labels, copy, current):
        """Copies the batch on the copy stream; the current stream waits for
        it. The tensors are marked used on the current stream, so that the
        caching allocator reuses their memory only once the trainer's work
        on them is done."""
        _native.check(_native.library().stoker_cuda_copy_async(
            self._copier, handle, images.data_ptr(),
            None if labels is None else labels.data_ptr(),
            ctypes.c_void_p(copy.cuda_stream)))
        if copy is not current:
            current.wait_stream(copy)
            for tensor in (images, labels):
                if tensor is not None:
                    tensor.record_stream(current)

    def _check_process(self) -> None:
        if _native.forked_from(self._pid):
            raise _native.fork_error(self._pid, "this DataLoader's stream")

    def input_stats(self) -> Dict[str, float]:
        self._check_process()
        stats = _native.InputStats()
        _native.check(_native.library().stoker_consumer_input_stats(
            self._consumer, ctypes.byref(stats)))
        return {"batches": int(stats.batches),
                "wait_seconds": stats.wait_seconds,
                "step_seconds": stats.step_seconds,
                "input_bound_percent": stats.input_bound_percent,
                "recent_input_bound_percent": stats.recent_input_bound_percent}

    def close(self) -> None:
        """Detaches (and deletes an owned job); in a forked child, only
        forgets the parent's consumer and job."""
        if _native.forked_from(self._pid):
            self._copier = self._consumer = self.job = None
            return
        lib = _native.library()
        with self._lock:  # waits for a poll in flight on another thread
            if self._copier is not None:
                lib.stoker_cuda_copier_destroy(self._copier)  # waits for copies
                self._copier = None
            if self._consumer is not None:
                lib.stoker_consumer_close(self._consumer)
                self._consumer = None
        if self.job is not None and self.owned:
            try:
                self._client.delete_job(self.job["id"])
            except errors.StokerError:
                pass  # gone already (finished, or the daemon restarted)
        self.job = None
