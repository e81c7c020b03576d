"""ctypes bindings of libstoker's C ABI (stoker/stoker_c.h).

The library is looked up, in order: the file named by $STOKER_LIBRARY; a
copy next to this package (stoker/_lib/libstoker.so.1, as a build tree or a
wheel built from one has it); the system's libstoker.so.1 (the libstoker1
Debian package). ctypes releases the GIL around every call, so a trainer's
other threads run while one waits for a batch.
"""
from __future__ import annotations

import ctypes
import json
import os
import threading
from typing import Any, Optional

from stoker import errors

ABI_VERSION = 3
_SONAME = "libstoker.so.1"

# The header's stoker_status codes this package names (the rest are the
# gRPC codes of errors.CODE_NAMES), stoker_dtype and stoker_layout. A test
# (tests/python/test_abi_layout.py) compares them, and the structures
# below, with what a C compiler makes of stoker_c.h.
STATUS_OK = 0
STATUS_NEXT_TIMED_OUT = 100
DTYPE_UINT8 = 0
DTYPE_FLOAT32 = 1
DTYPE_FLOAT16 = 2
DTYPE_INT64 = 3
FIELD_IMAGE = 0
FIELD_INT64 = 1
FIELD_BYTES = 2
LAYOUT_NHWC = 0
LAYOUT_NCHW = 1


class _Sized(ctypes.Structure):
    """A structure whose first field, struct_size, is set to its size."""

    def __init__(self, **fields):
        super().__init__(struct_size=ctypes.sizeof(self), **fields)


class ConsumerOptions(_Sized):
    _fields_ = [
        ("struct_size", ctypes.c_uint32),
        ("prefetch", ctypes.c_uint32),
        ("name", ctypes.c_char_p),
        ("reconnect_timeout_ms", ctypes.c_int64),
        ("copy_on_write", ctypes.c_int),
    ]


class InputStats(_Sized):
    _fields_ = [
        ("struct_size", ctypes.c_uint32),
        ("batches", ctypes.c_uint64),
        ("wait_seconds", ctypes.c_double),
        ("step_seconds", ctypes.c_double),
        ("input_bound_percent", ctypes.c_double),
        ("recent_input_bound_percent", ctypes.c_double),
    ]


class BatchInfo(_Sized):
    _fields_ = [
        ("struct_size", ctypes.c_uint32),
        ("images", ctypes.c_void_p),
        ("dtype", ctypes.c_int32),
        ("layout", ctypes.c_int32),
        ("shape", ctypes.c_int64 * 4),
        ("image_bytes", ctypes.c_uint64),
        ("labels", ctypes.c_void_p),
        ("indices", ctypes.c_void_p),
        ("size", ctypes.c_uint32),
        ("slot", ctypes.c_uint32),
        ("epoch", ctypes.c_uint64),
        ("index", ctypes.c_uint64),
        ("field_count", ctypes.c_uint32),
    ]


class FieldInfo(_Sized):
    _fields_ = [
        ("struct_size", ctypes.c_uint32),
        ("name", ctypes.c_char_p),
        ("kind", ctypes.c_int32),
        ("dtype", ctypes.c_int32),
        ("layout", ctypes.c_int32),
        ("rank", ctypes.c_int32),
        ("shape", ctypes.c_int64 * 4),
        ("data", ctypes.c_void_p),
        ("bytes", ctypes.c_uint64),
        ("lengths", ctypes.c_void_p),
        ("row_stride", ctypes.c_uint64),
    ]


_P = ctypes.c_void_p
_SIGNATURES = {
    "stoker_abi_version": (ctypes.c_int, []),
    "stoker_version": (ctypes.c_char_p, []),
    "stoker_last_error": (ctypes.c_char_p, []),
    "stoker_free": (None, [_P]),
    "stoker_connect": (ctypes.c_int, [ctypes.c_char_p, ctypes.c_int64, ctypes.POINTER(_P)]),
    "stoker_client_close": (None, [_P]),
    "stoker_create_job": (ctypes.c_int, [_P, ctypes.c_char_p, ctypes.POINTER(_P)]),
    "stoker_create_remote_job": (ctypes.c_int, [_P, ctypes.c_char_p, ctypes.c_char_p,
                                                ctypes.POINTER(_P)]),
    "stoker_get_job": (ctypes.c_int, [_P, ctypes.c_char_p, ctypes.POINTER(_P)]),
    "stoker_list_jobs": (ctypes.c_int, [_P, ctypes.POINTER(_P)]),
    "stoker_delete_job": (ctypes.c_int, [_P, ctypes.c_char_p]),
    "stoker_get_stats": (ctypes.c_int, [_P, ctypes.POINTER(_P)]),
    "stoker_attach": (ctypes.c_int, [_P, ctypes.c_char_p,
                                     ctypes.POINTER(ConsumerOptions),
                                     ctypes.POINTER(_P)]),
    "stoker_consumer_close": (None, [_P]),
    "stoker_consumer_job": (ctypes.c_int, [_P, ctypes.POINTER(_P)]),
    "stoker_consumer_position": (ctypes.c_int, [
        _P, ctypes.POINTER(ctypes.c_uint64), ctypes.POINTER(ctypes.c_uint64)]),
    "stoker_consumer_input_stats": (ctypes.c_int, [_P, ctypes.POINTER(InputStats)]),
    "stoker_next": (ctypes.c_int, [_P, ctypes.c_int64, ctypes.POINTER(_P),
                                   ctypes.POINTER(BatchInfo)]),
    "stoker_batch_check_intact": (ctypes.c_int, [_P]),
    "stoker_batch_release": (None, [_P]),
    "stoker_batch_field": (ctypes.c_int, [_P, ctypes.c_uint32,
                                          ctypes.POINTER(FieldInfo)]),
    "stoker_cuda_available": (ctypes.c_int, []),
    "stoker_cuda_copier_create": (ctypes.c_int, [_P, ctypes.c_int, ctypes.POINTER(_P)]),
    "stoker_cuda_copier_pinned": (ctypes.c_int, [_P]),
    "stoker_cuda_copy_async": (ctypes.c_int, [_P, _P, _P, _P, _P]),
    "stoker_cuda_drain": (ctypes.c_int, [_P]),
    "stoker_cuda_copier_destroy": (None, [_P]),
}

_lock = threading.Lock()
_lib: Optional[ctypes.CDLL] = None
# The process that first connected to a daemon: gRPC's threads run in it
# alone. A process forked from it cannot start gRPC again.
_grpc_pid: Optional[int] = None


def forked_from(pid: int) -> bool:
    """Whether this process is not `pid` (an object made there was
    inherited through fork(): its threads, connection and consumer are the
    parent's; the child must leave them alone)."""
    return pid != os.getpid()


def fork_error(made_in: int, what: str) -> errors.ForkedProcess:
    return errors.ForkedProcess(
        f"{what} was made in process {made_in}; this process "
        f"({os.getpid()}), forked from it, cannot use it nor connect once "
        "its parent has (gRPC does not survive fork): make stoker objects in "
        "the child, or start it with 'spawn' or 'forkserver' (docs/python.md,"
        " \"Forked processes\")", 9)


def check_may_connect() -> None:
    """Raises ForkedProcess in a child forked after its parent connected."""
    if _grpc_pid is not None and forked_from(_grpc_pid):
        raise fork_error(_grpc_pid, "stoker's gRPC connection")


def connected() -> None:
    """Notes that this process connected (gRPC runs in it from now on)."""
    global _grpc_pid
    if _grpc_pid is None:
        _grpc_pid = os.getpid()


def _candidates() -> list:
    found = []
    explicit = os.environ.get("STOKER_LIBRARY")
    if explicit:
        return [explicit]
    here = os.path.dirname(os.path.abspath(__file__))
    found.append(os.path.join(here, "_lib", _SONAME))
    found.append(_SONAME)
    return found


def library() -> ctypes.CDLL:
    """libstoker, loaded once, with every function's signature declared."""
    global _lib
    with _lock:
        if _lib is not None:
            return _lib
        tried = []
        for candidate in _candidates():
            if os.sep in candidate and not os.path.exists(candidate):
                tried.append(f"{candidate}: no such file")
                continue
            try:
                lib = ctypes.CDLL(candidate)
                break
            except OSError as error:
                tried.append(str(error))
        else:
            raise errors.LibraryNotFound(
                "cannot load libstoker (" + "; ".join(tried) + "): install the "
                "libstoker1 package, build the project (scripts/build.sh), or "
                "set STOKER_LIBRARY to the path of libstoker.so.1")
        try:
            lib.stoker_abi_version.restype = ctypes.c_int
            version = lib.stoker_abi_version()
        except AttributeError:
            version = 0  # a libstoker from before the C ABI
        # One SONAME's versions only add (an incompatible change takes a
        # new SONAME): a newer library serves this package.
        if version < ABI_VERSION:
            raise errors.LibraryNotFound(
                f"libstoker at {lib._name} has C ABI version {version}; this "
                f"package needs {ABI_VERSION} or later: install the "
                "libstoker1 that matches it, or set STOKER_LIBRARY")
        for name, (restype, argtypes) in _SIGNATURES.items():
            function = getattr(lib, name)
            function.restype = restype
            function.argtypes = argtypes
        _lib = lib
        return lib


def check(code: int) -> None:
    """Raises the StokerError subclass for a nonzero status code."""
    if code != STATUS_OK:
        message = library().stoker_last_error().decode("utf-8", "replace")
        raise errors.from_code(code, message)


def take_json(pointer: ctypes.c_void_p) -> Any:
    """Parses and frees a JSON string the library returned."""
    lib = library()
    try:
        return json.loads(ctypes.string_at(pointer.value).decode("utf-8"))
    finally:
        lib.stoker_free(pointer)
