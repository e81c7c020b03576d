"""loader.dataset, and torchvision ImageFolder objects given as root.

A recipe reads len(dataset), dataset.classes, and sometimes its samples and
targets. LoaderDataset answers len() and classes from what the daemon
reported when the job was created; for an ImageFolder root it lists
.samples and .targets as torchvision.datasets.ImageFolder does, scanning the
tree on the first read only.
"""
from __future__ import annotations

import os
from typing import Any, Dict, List, Optional, Sequence, Tuple

from stoker.errors import InvalidArgument

# torchvision.datasets.folder.IMG_EXTENSIONS
IMG_EXTENSIONS = (".jpg", ".jpeg", ".png", ".ppm", ".bmp", ".pgm", ".tif",
                  ".tiff", ".webp")
_DEFAULT_LOADERS = ("default_loader", "pil_loader")
_FOLDER_CLASSES = ("ImageFolder", "DatasetFolder")


def scan_image_folder(root: str, class_to_idx: Dict[str, int]
                      ) -> List[Tuple[str, int]]:
    """(path, class index) of every image under root/<class>/, in the order
    and with the paths of torchvision.datasets.folder.make_dataset."""
    samples = []
    for name in sorted(class_to_idx):
        directory = os.path.join(root, name)
        if not os.path.isdir(directory):
            continue
        for parent, _, files in sorted(os.walk(directory, followlinks=True)):
            for file in sorted(files):
                if file.lower().endswith(IMG_EXTENSIONS):
                    samples.append((os.path.join(parent, file),
                                    class_to_idx[name]))
    return samples


class LoaderDataset:
    """What a recipe reads of the dataset a loader serves: len(), classes,
    class_to_idx; for an ImageFolder root also root, samples (a list of
    (path, class index)), imgs (the same) and targets, scanned on first read
    as torchvision.datasets.ImageFolder lists them. transform is the
    loader's. Samples are not loaded here: iterate the loader."""

    def __init__(self, num_samples: int, classes: Sequence[str],
                 root: Optional[str] = None, transform: Any = None):
        self._num_samples = int(num_samples)
        self.classes = list(classes)
        self.class_to_idx = {name: i for i, name in enumerate(self.classes)}
        self.root = root
        self.transform = transform
        self._samples: Optional[List[Tuple[str, int]]] = None

    def __len__(self) -> int:
        return self._num_samples

    @property
    def samples(self) -> List[Tuple[str, int]]:
        if self.root is None:
            raise AttributeError(
                "samples: listed for an ImageFolder root only; this loader "
                "reads tar shards or a manifest")
        if self._samples is None:
            self._samples = scan_image_folder(self.root, self.class_to_idx)
        return self._samples

    @property
    def imgs(self) -> List[Tuple[str, int]]:
        return self.samples

    @property
    def targets(self) -> List[int]:
        return [label for _, label in self.samples]

    def __repr__(self) -> str:
        where = f"root={self.root!r}, " if self.root is not None else ""
        return (f"LoaderDataset({where}{len(self)} samples, "
                f"{len(self.classes)} classes)")


def _is_folder_dataset(value: Any) -> bool:
    return any(cls.__name__ in _FOLDER_CLASSES and
               cls.__module__.startswith("torchvision.")
               for cls in type(value).__mro__)


def _refuse_folder_options(folder: Any) -> None:
    """Refuses what the daemon would not do as the folder object does."""
    kind = type(folder)
    name = kind.__name__
    if kind.__name__ not in _FOLDER_CLASSES or not kind.__module__.startswith(
            "torchvision."):
        raise InvalidArgument(
            f"{kind.__module__}.{name}: a subclass of torchvision's "
            "ImageFolder may list or read its samples its own way; pass its "
            "root directory (and transform=) instead")
    if getattr(folder, "target_transform", None) is not None:
        raise InvalidArgument(
            f"{name} with target_transform={folder.target_transform!r}: "
            "stokerd serves the folder's class indices; map the labels in "
            "the training loop (or in batch_transform=)")
    loader = getattr(folder, "loader", None)
    if getattr(loader, "__name__", None) not in _DEFAULT_LOADERS or getattr(
            loader, "__module__", None) != "torchvision.datasets.folder":
        raise InvalidArgument(
            f"{name} with loader={loader!r}: stokerd decodes the files "
            "itself, as torchvision's default_loader (Pillow) does")
    extensions = getattr(folder, "extensions", None)
    if extensions is None:
        raise InvalidArgument(
            f"{name} built with is_valid_file=: stokerd lists the files "
            "ImageFolder lists by default (IMG_EXTENSIONS) and no others")
    if {e.lower() for e in extensions} != set(IMG_EXTENSIONS):
        raise InvalidArgument(
            f"{name} with extensions={extensions!r}: stokerd lists "
            f"ImageFolder's {IMG_EXTENSIONS}")


def unpack_root(root: Any, transform: Any) -> Tuple[Optional[str], Any, Any]:
    """(root path, transform, folder object or None) for `root`: a path, or
    a torchvision ImageFolder whose root is used and whose transform is
    used when `transform` is None."""
    if root is None or isinstance(root, (str, os.PathLike)):
        return root, transform, None
    if _is_folder_dataset(root):
        _refuse_folder_options(root)
        return (root.root, root.transform if transform is None else transform,
                root)
    kind = type(root)
    raise InvalidArgument(
        f"root: a directory path (root/<class>/<image>) or a torchvision "
        f"ImageFolder, not {kind.__module__}.{kind.__qualname__}; shards= "
        "and manifest= name the other datasets")
