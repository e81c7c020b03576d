"""Where a DataLoader is in its job's stream: one cursor per way of following
the job, as torch's DataLoader has one iterator class per mode.

ExclusiveCursor  the loader's own job, steered. The job is consumed as a
                 stream that runs on from epoch to epoch; a new iteration
                 after a loop left early, set_epoch() to another epoch, or
                 load_state_dict() starts a new job at the wanted (epoch,
                 batch) (same seed, same bytes). When the daemon restarts or
                 the connection drops, it reconnects and re-creates the job
                 at the batch after the last one yielded: the one place that
                 reconnects (the SDK's own reconnecting is off, see
                 stream.Stream).
SharedCursor     a broadcast or partition job, or one attached by job_id:
                 followed, not steered. Each iteration yields the batches of
                 the epoch the stream is in, as the consumer receives them;
                 the stream is never moved nor re-created, and a daemon gone
                 away is raised (stoker.Unavailable).

A cursor opens the stream the loader's Resources hold, as the loader's
options (stoker.options) say, and knows the place of the next batch the
loader would yield. The loader calls it under its guard.
"""
from __future__ import annotations

import time
from typing import Any, Dict, Optional, Tuple

from stoker import errors, spec as job_spec
from stoker.options import SHARING, LoaderOptions
from stoker.resources import Resources
from stoker.stream import Stream

Place = Tuple[int, int]  # (epoch, batch index)


class Cursor:
    """The stream of one job (spec: stoker.spec.build(options)'s) and the
    loader's place in it; options give the consumer's name, prefetch, CUDA
    device and the job_id attached to."""

    def __init__(self, resources: Resources, spec: Dict[str, Any],
                 options: LoaderOptions):
        self._resources = resources
        self._spec = spec
        self._options = options
        # The next batch the loader would yield.
        self.next: Place = (0, 0)
        self._open((0, 0))  # checks everything now; gives len()

    @property
    def stream(self) -> Stream:
        if self._resources.stream is None:
            raise ValueError("the DataLoader is closed")
        return self._resources.stream

    def _open(self, start: Place) -> None:
        """A stream (a new job, or the one attached to) from `start` on."""
        spec = dict(self._spec, start_epoch=start[0], start_batch=start[1])
        o = self._options
        job = self._resources.open_stream(lambda client: Stream(
            client, spec, o.name, o.prefetch, o.cuda_device, o.job_id,
            self._resources.remote)).job
        self.batches_per_epoch = int(job["batches_per_epoch"])
        self.num_samples = int(job["num_samples"])
        self.classes = job.get("class_names", [])
        self.next = start

    def after(self, epoch: int, index: int) -> Place:
        """The place of the batch that follows batch `index` of `epoch`."""
        if index + 1 < self.batches_per_epoch:
            return epoch, index + 1
        return epoch + 1, 0

    def in_epoch(self, iterator: Any) -> bool:
        """Whether `iterator` (an epoch's iterator: its epoch, the batches
        it yielded) goes on."""
        return self.next[0] == iterator.epoch

    def position(self) -> Place:
        """Where state_dict() says the loader resumes."""
        return self.next

    def set_epoch(self, epoch: int) -> None:
        raise NotImplementedError

    def begin(self) -> None:
        """An iteration begins (at self.next once this returns)."""
        raise NotImplementedError

    def load_state(self, state: Dict[str, Any]) -> None:
        raise NotImplementedError

    def take(self, iterator: Any):
        """The next batch of `iterator`'s epoch, as (batch, epoch, index)
        (batch: stream.Stream.next's); StopIteration when the epoch is over
        for it."""
        raise NotImplementedError


class ExclusiveCursor(Cursor):
    """The loader's own job, moved by re-creating it at a position."""

    def __init__(self, resources: Resources, spec: Dict[str, Any],
                 options: LoaderOptions):
        # The stream's next batch is self.next while this is True.
        self._in_step = False
        self._epoch_set: Optional[int] = None
        self._resume: Optional[Place] = None
        super().__init__(resources, spec, options)

    def _open(self, start: Place) -> None:
        self._in_step = False  # until the new one is open
        super()._open(start)
        self._in_step = True

    def set_epoch(self, epoch: int) -> None:
        self._epoch_set = int(epoch)

    def _start(self) -> Place:
        """Where the next iteration begins."""
        if self._resume is not None and self._epoch_set in (None, self._resume[0]):
            start = self._resume
        elif self._epoch_set is not None:
            start = (self._epoch_set, 0)
        elif self.next[1] == 0:
            start = self.next
        else:  # the last iteration stopped early: a new epoch begins
            start = (self.next[0] + 1, 0)
        if start[1] >= self.batches_per_epoch:
            start = (start[0] + 1, 0)
        return start

    def begin(self) -> None:
        start = self._start()
        if not self._in_step or start != self.next:
            self._open(start)
        self._resume = None
        self._epoch_set = None

    def position(self) -> Place:
        if self._resume is not None or self._epoch_set is not None:
            return self._start()
        return self.next

    def load_state(self, state: Dict[str, Any]) -> None:
        job_spec.check_resumable(state, self._spec, self.batches_per_epoch)
        self._resume = (int(state["epoch"]), int(state["batch"]))
        self._epoch_set = None

    def take(self, iterator: Any):
        try:
            batch, epoch, index = self._next_batch()
        except BaseException:
            self._in_step = False  # the next iteration opens afresh
            raise
        if (epoch, index) != self.next:
            self._in_step = False
            raise errors.Internal(
                f"expected batch {self.next[1]} of epoch {self.next[0]}, "
                f"the daemon sent batch {index} of epoch {epoch}")
        self.next = self.after(epoch, index)
        return batch, epoch, index

    def _next_batch(self):
        """The stream's next batch; when the daemon went away (restart, lost
        connection), a new job at the batch after the last one yielded, on
        a fresh connection, for up to reconnect_timeout seconds."""
        deadline = None
        while True:
            try:
                if not self._in_step:
                    self._open(self.next)
                return self.stream.next()
            except errors.Unavailable:
                now = time.monotonic()
                if deadline is None:
                    deadline = now + self._options.reconnect_timeout
                if now >= deadline:
                    raise
                self._in_step = False
                try:
                    # Returns as soon as the daemon listens again; in
                    # slices, so that Ctrl-C is seen.
                    self._resources.reconnect(min(0.5, deadline - now))
                except errors.Unavailable:
                    time.sleep(0.05)  # not listening yet


class SharedCursor(Cursor):
    """A shared job's one stream, followed epoch by epoch."""

    def __init__(self, resources: Resources, spec: Dict[str, Any],
                 options: LoaderOptions):
        self._stash = None  # a batch of the next epoch, taken early
        super().__init__(resources, spec, options)

    @property
    def partition(self) -> bool:
        """A partition job: its epochs end when the daemon says so (a batch
        taken back from another consumer may come after the last one)."""
        sharing = self.stream.job.get("spec", {}).get("sharing", {})
        return sharing.get("mode") == SHARING["partition"]

    def set_epoch(self, epoch: int) -> None:
        """Only the epoch the stream is at."""
        if int(epoch) != self.next[0]:
            raise errors.FailedPrecondition(
                f"set_epoch({epoch}): a shared job's stream is at epoch "
                f"{self.next[0]} and cannot be moved")

    def begin(self) -> None:
        """A shared stream goes on where it is."""

    def load_state(self, state: Dict[str, Any]) -> None:
        raise errors.FailedPrecondition(
            "a shared job's stream cannot be moved: load_state_dict is "
            "for exclusive jobs")

    def in_epoch(self, iterator: Any) -> bool:
        """Also before its first batch (the stream may be an epoch on), and
        in a partition job until the daemon ends the epoch."""
        return (super().in_epoch(iterator) or iterator.yielded == 0
                or self.partition)

    def take(self, iterator: Any):
        if self._stash is not None:
            batch, self._stash = self._stash, None
        else:
            batch = self.stream.next()
        _, epoch, index = batch
        # A partition job sends a batch taken back from another consumer
        # (it went away, or was stopped past the lease timeout) again, after
        # later ones: it belongs to the epoch being iterated.
        if self.partition and epoch <= iterator.epoch:
            self.next = max(self.next, self.after(epoch, index))
            return batch
        if (epoch, index) < self.next:
            raise errors.Internal(
                f"the daemon sent batch {index} of epoch {epoch} after batch "
                f"{self.next[1]} of epoch {self.next[0]}")
        if epoch > iterator.epoch:
            if iterator.yielded == 0:  # joined later: this is its epoch
                iterator.epoch = epoch
            else:  # this epoch is over for this consumer
                self._stash = batch
                self.next = (epoch, 0)
                raise StopIteration
        self.next = self.after(epoch, index)
        return batch
