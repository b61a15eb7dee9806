"""Response objects made durable once per log batch, not once per response.

The runner's event-loop path (:mod:`rungbench.execute.cell_loop`) must not wait for the
disk on its one thread, and on both of the runner's paths two fsyncs per response (the
file, then its folder) were most of the system time of a cell. :class:`BatchedObjects`
splits a durable put in two:

* :meth:`BatchedObjects.put` (the caller's thread) takes the object's digest and queues
  its bytes in memory; nothing touches the disk;
* :meth:`BatchedObjects.flush` (the log writer, through ``GroupLog.submit(before=...)``,
  before it writes the batch holding the records that name these objects) writes each
  queued object to a fresh temp file in its shard folder, makes them all durable, renames
  each into place and makes the renames durable.

So no durable record names an object a crash lost (the runner's rule), the caller's
thread (the runner's event loop) makes no system call for an object, and a crash during
a flush leaves only temp files, which no reader takes for objects
(:meth:`~rungbench.evidence.store.ObjectStore.temp_files` lists them). A name in the
store is never a half-written object: files are renamed only after their bytes are on
disk. What is queued is held until the next batch (the records naming it are in that
batch), so memory is bounded by what one batch names.

Durable means ``syncfs(2)`` of the store's file system, one call for every file of the
batch, where the C library has it (Linux); elsewhere each temp file is fsynced and each
folder fsynced once. Any OS error of a flush fails the log (the writer's sticky error),
so the records are never written.
"""

from __future__ import annotations

import ctypes
import itertools
import os
import threading
from collections.abc import Callable

from rungbench.evidence.canonical import DIGEST_PREFIX, bytes_digest
from rungbench.evidence.store import TEMP_PREFIX, ObjectStore, fsync_dir


def _load_syncfs() -> Callable[[int], int] | None:
    try:
        function = ctypes.CDLL(None, use_errno=True).syncfs
    except (OSError, AttributeError):  # pragma: no cover - a C library without syncfs
        return None
    function.argtypes = [ctypes.c_int]
    function.restype = ctypes.c_int
    return function


SYNCFS = _load_syncfs()
"""The C library's ``syncfs``, or None where it has none."""


def sync_file_system(path: str) -> None:
    """Flush every dirty file and folder of the file system holding ``path`` (``syncfs``)."""
    if SYNCFS is None:  # pragma: no cover - guarded by the callers
        raise OSError(f"{path}: syncfs is not available here")
    fd = os.open(path, os.O_RDONLY)
    try:
        if SYNCFS(fd) != 0:
            code = ctypes.get_errno()
            raise OSError(code, f"syncfs failed: {os.strerror(code)}", path)
    finally:
        os.close(fd)


class BatchedObjects:
    """Puts into a run's object store, made durable by :meth:`flush` (module docstring).

    The same files as :meth:`ObjectStore.put_bytes` (``objects/sha256/<2>/<62>``, mode
    0444). Thread-safe: :meth:`put` may run on one thread while :meth:`flush` runs on
    another.
    """

    def __init__(self, store: ObjectStore, *, use_syncfs: bool | None = None) -> None:
        self.store = store
        self.use_syncfs = SYNCFS is not None if use_syncfs is None else use_syncfs
        if self.use_syncfs and SYNCFS is None:
            raise ValueError("syncfs is not available on this system")
        self._made: set[str] = set()
        self._lock = threading.Lock()
        self._queued: dict[str, bytes] = {}
        """Digest -> bytes, put but not yet written (one entry however often it is put)."""
        self._numbers = itertools.count(1)
        """Numbers the temp files."""
        self.flushes = 0
        """Flushes that made at least one object durable."""

    def put(self, data: bytes) -> str:
        """Queue ``data`` for :meth:`flush` and return its digest (no system call)."""
        name = bytes_digest(data)
        with self._lock:
            self._queued[name] = data
        return name

    def flush(self) -> None:
        """Make every queued object durable under its name (raises the first OS error)."""
        with self._lock:
            batch, self._queued = self._queued, {}
        if not batch:
            return
        written = [self._write(name, data) for name, data in batch.items()]
        root = str(self.store.objects)
        if self.use_syncfs:
            sync_file_system(root)
        else:
            for temp, _, _ in written:
                fd = os.open(temp, os.O_RDONLY)
                try:
                    os.fsync(fd)
                finally:
                    os.close(fd)
        for temp, final, _ in written:
            os.replace(temp, final)
        if self.use_syncfs:
            sync_file_system(root)
        else:
            for folder in sorted({folder for _, _, folder in written}):
                fsync_dir(folder)
        self.flushes += 1

    def _write(self, name: str, data: bytes) -> tuple[str, str, str]:
        """Write ``data`` to a fresh temp file beside its final place (not yet durable);
        return ``(temp path, final path, folder)``."""
        hexpart = name[len(DIGEST_PREFIX):]
        folder = f"{self.store.objects}/{hexpart[:2]}"
        temp = f"{folder}/{TEMP_PREFIX}{hexpart[2:18]}-{os.getpid()}-{next(self._numbers)}"
        if folder not in self._made:
            os.makedirs(folder, exist_ok=True)
            self._made.add(folder)
        fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o444)
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view):]
        finally:
            os.close(fd)
        return temp, f"{folder}/{hexpart[2:]}", folder
