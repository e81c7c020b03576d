"""stoker: batches from the stokerd data-loading daemon as torch tensors.

    import stoker
    loader = stoker.DataLoader("/data/imagenet/train", batch_size=256,
                               transform=transform, shuffle=True,
                               device="cuda")

See DataLoader, MixUp, CutMix, RandomChoice (batch_transform=), Client,
PILGaussianBlur and Solarization (self-supervised recipes' Pillow ops),
RandomResize and SegmentationRandomCrop (the segmentation reference's), and
the project's docs/python.md.
"""
from stoker.errors import (Aborted, DataLoss, DeadlineExceeded,
                           FailedPrecondition, ForkedProcess, Internal,
                           InvalidArgument, LibraryNotFound, NotFound,
                           OutOfRange, PermissionDenied, ResourceExhausted,
                           StokerError, Unavailable, Unimplemented,
                           UnsupportedTransform)
from stoker.client import Client, default_socket
from stoker.transforms import translate as translate_transform
from stoker.pil_ops import PILGaussianBlur, Solarization
from stoker.segmentation import RandomResize, SegmentationRandomCrop

__version__ = "0.2.0"


def library_version() -> str:
    """The version of the libstoker this package loaded."""
    from stoker import _native
    return _native.library().stoker_version().decode()


# What needs torch, imported on first use: the management Client does not.
_WITH_TORCH = {"DataLoader": "stoker.loader",
               "MixUp": "stoker.batch_transforms",
               "CutMix": "stoker.batch_transforms",
               "RandomChoice": "stoker.batch_transforms"}


def __getattr__(name):
    if name in _WITH_TORCH:
        import importlib
        return getattr(importlib.import_module(_WITH_TORCH[name]), name)
    raise AttributeError(f"module 'stoker' has no attribute {name!r}")


__all__ = ["DataLoader", "MixUp", "CutMix", "RandomChoice", "Client",
           "default_socket", "translate_transform", "library_version",
           "PILGaussianBlur", "Solarization", "RandomResize",
           "SegmentationRandomCrop",
           "StokerError", "Aborted", "DataLoss",
           "DeadlineExceeded", "FailedPrecondition", "ForkedProcess",
           "Internal",
           "InvalidArgument",
           "LibraryNotFound", "NotFound", "OutOfRange", "PermissionDenied",
           "ResourceExhausted", "Unavailable", "Unimplemented",
           "UnsupportedTransform"]
