"""Client: the daemon's management API (jobs, stats) from Python.

    with stoker.Client() as client:
        for job in client.list_jobs():
            print(job["id"], job["spec"]["dataset"]["path"])
        print(client.stats()["workers"])

Jobs, specs and stats are dicts in the JSON form of the stoker.v1 messages
(proto/stoker/v1/loader.proto), with 64-bit integers as Python ints.
"""
from __future__ import annotations

import ctypes
import json
import os
from typing import Any, Dict, List, Optional

from stoker import _native, errors

SYSTEM_SOCKET = "/run/stoker/stoker.sock"

# The stoker.v1 fields that are 64-bit integers, which the protobuf JSON
# mapping writes as strings.
_INT64_FIELDS = frozenset((
    "batch batches batches_delivered batches_per_epoch batches_released "
    "batches_skipped bytes dataset_index_bytes dataset_indexes decode_errors "
    "epoch generation id index_bytes lag num_samples num_shards "
    "offset position_batch position_epoch recent_step_us recent_wait_us "
    "ring_bytes rss_bytes samples_decoded samples_skipped seed shape "
    "shm_budget_bytes "
    "shm_bytes shm_free_bytes slot_bytes start_batch start_epoch step_us "
    "uptime_ms wait_us worker_busy_us").split())


def _ints(value: Any, key: str = "") -> Any:
    if isinstance(value, dict):
        return {k: _ints(v, k) for k, v in value.items()}
    if isinstance(value, list):
        return [_ints(v, key) for v in value]
    if key in _INT64_FIELDS and isinstance(value, str) and value.isdigit():
        return int(value)
    return value


def default_socket() -> str:
    """$STOKER_SOCKET if set, else the system daemon's socket."""
    return os.environ.get("STOKER_SOCKET") or SYSTEM_SOCKET


def _socket_path(target: str) -> str:
    """The absolute path of a socket target (a path, unix:path or
    unix:///path), as the library reports it."""
    for scheme in ("unix://", "unix:"):
        if target.startswith(scheme):
            target = target[len(scheme):]
            break
    return os.path.abspath(target)


def _unreachable(error: errors.StokerError,
                 socket: Optional[str]) -> errors.StokerError:
    """The library's refusal to connect, saying which socket was tried and
    how to name another: with no daemon there (no socket file, or no
    answer) in one short sentence; else (permissions, not a socket) its
    own explanation, with the way to name another."""
    path = _socket_path(socket or default_socket())
    if socket:
        tried = "named by socket="
    elif os.environ.get("STOKER_SOCKET"):
        tried = "named by STOKER_SOCKET"
    else:
        tried = "the default socket"
    try:
        os.lstat(path)
        missing = False
    except FileNotFoundError:
        missing = True
    except OSError:  # a directory on the way that may not be entered
        missing = False
    if missing or error.message.endswith(": it does not answer"):
        start = ("start it (systemctl start stokerd)" if path == SYSTEM_SOCKET
                 else f"start stokerd --socket={path}")
        message = (f"no stokerd answers at {path} ({tried}): {start}, or "
                   "point STOKER_SOCKET or socket= at the socket it listens on")
    else:
        message = (f"{error.message} ({tried}; STOKER_SOCKET or socket= "
                   "names another)")
    return type(error)(message, error.code)


class Client:
    """A connection to stokerd. Thread-safe."""

    def __init__(self, socket: Optional[str] = None, timeout: float = 5.0):
        self.socket = socket or default_socket()
        self._handle = None
        self._pid = os.getpid()
        _native.check_may_connect()
        lib = _native.library()
        handle = ctypes.c_void_p()
        _native.connected()  # gRPC starts in this process, even on failure
        try:
            _native.check(lib.stoker_connect(self.socket.encode(),
                                             int(timeout * 1000),
                                             ctypes.byref(handle)))
        except (errors.Unavailable, errors.NotFound) as error:
            raise _unreachable(error, socket) from None
        self._handle = handle

    @property
    def handle(self) -> ctypes.c_void_p:
        if _native.forked_from(self._pid):
            raise _native.fork_error(self._pid, "this stoker.Client")
        if self._handle is None:
            raise ValueError("the client is closed")
        return self._handle

    def _json(self, function, *args) -> Any:
        out = ctypes.c_void_p()
        _native.check(function(self.handle, *args, ctypes.byref(out)))
        return _ints(_native.take_json(out))

    def create_job(self, spec: Dict[str, Any],
                   remote: Optional[Dict[str, Any]] = None) -> Dict[str, Any]:
        """Creates a job from a stoker.v1.JobSpec dict; returns the Job.

        remote: a stoker.v1.RemoteAccess dict for remote shards (see
        stoker.remote.access); the daemon uses it while the
        job is created and then drops it.
        """
        if remote is None:
            return self._json(_native.library().stoker_create_job,
                              json.dumps(spec).encode())
        return self._json(_native.library().stoker_create_remote_job,
                          json.dumps(spec).encode(), json.dumps(remote).encode())

    def get_job(self, job_id: str) -> Dict[str, Any]:
        return self._json(_native.library().stoker_get_job, job_id.encode())

    def list_jobs(self) -> List[Dict[str, Any]]:
        """The jobs this user may see."""
        return self._json(_native.library().stoker_list_jobs).get("jobs", [])

    def delete_job(self, job_id: str) -> None:
        _native.check(_native.library().stoker_delete_job(
            self.handle, job_id.encode()))

    def stats(self) -> Dict[str, Any]:
        """The daemon's stats (stoker.v1.Stats): workers, shared memory,
        and per job its rates, errors and consumers."""
        return self._json(_native.library().stoker_get_stats)

    def close(self) -> None:
        """Closes the connection (in a forked child, only forgets the
        parent's)."""
        handle, self._handle = self._handle, None
        if handle is not None and not _native.forked_from(self._pid):
            _native.library().stoker_client_close(handle)

    def __enter__(self) -> "Client":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:
            pass
