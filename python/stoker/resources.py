"""What a DataLoader holds on the daemon (its connection, its stream, the
remote access its jobs are created with) and how it lets go of them: at
close(), when the loader is dropped, at exit, and in a forked child (where
they are the parent's: see docs/python.md, "Forked processes").
"""
from __future__ import annotations

import os
import threading
from typing import Any, Dict, Optional

from stoker import _native
from stoker.client import Client
from stoker.stream import Stream


class Resources:
    """What a DataLoader holds on the daemon; closed by its finalizer, so a
    loader dropped without close() (or at exit) still deletes its job. Once
    closed, no stream opens again (a thread still iterating gets "closed"),
    so no job outlives close(). In a process forked from the one that made
    it, close() only forgets what it holds (the parent's, still in use
    there)."""

    def __init__(self, client: Client,
                 remote: Optional[Dict[str, Any]] = None):
        self.client = client
        # Remote shards' access (stoker.remote.access), sent with each job
        # this loader creates, resumed ones included.
        self.remote = remote
        self.stream: Optional[Stream] = None
        self._pid = os.getpid()
        self._lock = threading.RLock()
        self._closed = False
        self._making = 0  # open_stream calls making a stream now

    def open_stream(self, make) -> Stream:
        """Replaces the stream with make(client) (a new job, or one attached
        to); ValueError once closed. The stream is made outside the lock (a
        job over remote shards may take minutes to create): a close()
        meanwhile leaves the client to this call, which closes the new
        stream (deleting its job) and then the client."""
        if _native.forked_from(self._pid):
            raise _native.fork_error(self._pid, "this DataLoader")
        with self._lock:
            if self._closed:
                raise ValueError("the DataLoader is closed")
            self.close_stream()
            self._making += 1
            client = self.client
        stream = None
        try:
            stream = make(client)
        finally:
            with self._lock:
                self._making -= 1
                closed, last = self._closed, self._making == 0
                if stream is not None and not closed:
                    self.stream = stream
            if closed:
                if stream is not None:
                    stream.close()
                if last:
                    client.close()
        if closed:
            raise ValueError("the DataLoader is closed")
        return stream

    def close_stream(self) -> None:
        with self._lock:
            if self.stream is not None:
                stream, self.stream = self.stream, None
                stream.close()

    def close(self) -> None:
        if _native.forked_from(self._pid):
            # The parent's, in use there; no lock (one a parent's thread
            # held at fork stays held here).
            if self.stream is not None:
                self.stream.close()
            self.client.close()
            return
        with self._lock:
            self._closed = True
            self.close_stream()
            if self._making == 0:  # else the last open_stream closes it
                self.client.close()

    def reconnect(self, timeout: float) -> None:
        """A new connection, made as soon as the daemon answers (for
        ExclusiveCursor's reconnect loop). (Calls on the old one would
        notice a restarted daemon only when gRPC next polls its idle
        connection, up to 5 s later.)"""
        with self._lock:
            if self._closed:
                raise ValueError("the DataLoader is closed")
            self.close_stream()
            fresh = Client(self.client.socket, timeout=timeout)
            self.client.close()
            self.client = fresh
