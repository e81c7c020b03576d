"""Exceptions raised for the daemon's and the SDK's errors.

Every error is a StokerError carrying the gRPC status `code` (an int),
its `code_name` ("NOT_FOUND", ...) and the daemon's sentence. Where Python
has a matching built-in exception the class derives from it too, so
`except FileNotFoundError` catches a dataset path that does not exist and
`except ConnectionError` a daemon that is not running.
"""
from __future__ import annotations

CODE_NAMES = {
    1: "CANCELLED", 2: "UNKNOWN", 3: "INVALID_ARGUMENT", 4: "DEADLINE_EXCEEDED",
    5: "NOT_FOUND", 6: "ALREADY_EXISTS", 7: "PERMISSION_DENIED",
    8: "RESOURCE_EXHAUSTED", 9: "FAILED_PRECONDITION", 10: "ABORTED",
    11: "OUT_OF_RANGE", 12: "UNIMPLEMENTED", 13: "INTERNAL", 14: "UNAVAILABLE",
    15: "DATA_LOSS", 16: "UNAUTHENTICATED",
}


class StokerError(Exception):
    """An error from stokerd or libstoker."""

    code = 2

    def __init__(self, message: str, code: int = 0):
        super().__init__(message)
        if code:
            self.code = code
        self.message = message

    @property
    def code_name(self) -> str:
        return CODE_NAMES.get(self.code, str(self.code))

    def __str__(self) -> str:
        return f"{self.code_name}: {self.message}"


class LibraryNotFound(StokerError, ImportError):
    """libstoker.so.1 could not be loaded."""
    code = 9


class InvalidArgument(StokerError, ValueError):
    code = 3


class UnsupportedTransform(InvalidArgument):
    """A torchvision transform (or argument) the daemon cannot run."""


class DeadlineExceeded(StokerError, TimeoutError):
    code = 4


class NotFound(StokerError, FileNotFoundError):
    """A dataset path, a job or a socket that does not exist."""
    code = 5


class PermissionDenied(StokerError, PermissionError):
    code = 7


class ResourceExhausted(StokerError):
    """A limit was reached: shared memory (/dev/shm or the daemon's
    budget), leases, jobs per user."""
    code = 8


class FailedPrecondition(StokerError):
    code = 9


class ForkedProcess(FailedPrecondition, RuntimeError):
    """A stoker object, or gRPC itself, was started in the process this one
    was forked from: a forked child cannot use them (docs/python.md, "Forked
    processes")."""


class Aborted(StokerError):
    """The job was stopped from outside: its ring was deleted by another
    process (a cleanup of /dev/shm, systemd's RemoveIPC=)."""
    code = 10


class OutOfRange(StokerError):
    """The job's last batch was delivered."""
    code = 11


class Unimplemented(StokerError, NotImplementedError):
    code = 12


class Internal(StokerError):
    """The daemon or the SDK broke one of its own promises (a bug)."""
    code = 13


class Unavailable(StokerError, ConnectionError):
    """The daemon is not running, not reachable, or stopping."""
    code = 14


class DataLoss(StokerError):
    """A file could not be decoded (on_error="fail"), a batch's slot was
    refilled after it had been confirmed, or a named field's value does not
    decode in the trainer (a caption that is not UTF-8)."""
    code = 15


_BY_CODE = {cls.code: cls for cls in (
    InvalidArgument, DeadlineExceeded, NotFound, PermissionDenied,
    ResourceExhausted, FailedPrecondition, Aborted, OutOfRange, Unimplemented,
    Internal, Unavailable, DataLoss)}


def from_code(code: int, message: str) -> StokerError:
    return _BY_CODE.get(code, StokerError)(message, code)
