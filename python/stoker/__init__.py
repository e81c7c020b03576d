"""stoker: batches from the stokerd data-loading daemon as torch tensors.

    import stoker
    loader = stoker.DataLoader("/data/imagenet/train", batch_size=256,
                               transform=transform, shuffle=True,
                               device="cuda")

See DataLoader, Client, and the README of the project.
"""
from stoker.errors import (Aborted, DataLoss, DeadlineExceeded,
                           FailedPrecondition,
                           InvalidArgument, LibraryNotFound, NotFound,
                           OutOfRange, PermissionDenied, ResourceExhausted,
                           StokerError, Unavailable, Unimplemented,
                           UnsupportedTransform)
from stoker.client import Client, default_socket
from stoker.transforms import translate as translate_transform

__version__ = "0.1.0"


def library_version() -> str:
    """The version of the libstoker this package loaded."""
    from stoker import _native
    return _native.library().stoker_version().decode()


def __getattr__(name):
    # DataLoader needs torch; the management Client does not.
    if name == "DataLoader":
        from stoker.loader import DataLoader
        return DataLoader
    raise AttributeError(f"module 'stoker' has no attribute {name!r}")


__all__ = ["DataLoader", "Client", "default_socket", "translate_transform",
           "library_version", "StokerError", "Aborted", "DataLoss",
           "DeadlineExceeded", "FailedPrecondition", "InvalidArgument",
           "LibraryNotFound", "NotFound", "OutOfRange", "PermissionDenied",
           "ResourceExhausted", "Unavailable", "Unimplemented",
           "UnsupportedTransform"]
