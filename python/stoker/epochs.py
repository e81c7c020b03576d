"""The iterator iter(stoker.DataLoader) returns: one epoch of the loader's
stream, which it reads through the loader's cursor, one thread at a time."""
from __future__ import annotations

from typing import Any, Tuple

import torch


class EpochIterator:
    """One epoch of a DataLoader."""

    def __init__(self, loader: Any, epoch: int):
        self._loader = loader
        self.epoch = epoch
        self.yielded = 0

    def __iter__(self):
        return self

    def __len__(self) -> int:
        return len(self._loader)

    def __next__(self) -> Tuple[torch.Tensor, torch.Tensor]:
        loader = self._loader
        loader._check_process()
        with loader._guard:
            cursor = loader._cursor
            if not cursor.in_epoch(self):
                raise StopIteration
            if loader._iterating is None or self is not loader._iterating():
                raise RuntimeError("this iterator was replaced by a newer "
                                   "iter(loader); stoker serves one at a time")
            batch, epoch, index = cursor.take(self)
            self.yielded += 1
            return loader._transformed(batch, epoch, index)
