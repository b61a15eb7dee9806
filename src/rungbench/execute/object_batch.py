"""Response objects made durable once per log batch, not once per response.

The runner's event-loop path (:mod:`rungbench.execute.cell_loop`) must not wait for the
disk on its one thread, and on both of the runner's paths two fsyncs per response (the
file, then its folder) were most of the system time of a cell. :class:`BatchedObjects`
splits a durable put in two:

* :meth:`BatchedObjects.put` (the caller's thread) writes the bytes to a fresh temp file
  in the object's shard folder and queues it; nothing waits for the disk;
* :meth:`BatchedObjects.flush` (the log writer, through ``GroupLog.submit(before=...)``,
  before it writes the batch holding the records that name these objects) makes every
  queued temp file durable, renames each into place and makes the renames durable.

So no durable record names an object a crash lost (the runner's rule), and a
crash before a flush leaves only temp files, which no reader takes for objects
(:meth:`~rungbench.evidence.store.ObjectStore.temp_files` lists them). A name in the
store is never a half-written object: files are renamed only after their bytes are on
disk.

Durable means ``syncfs(2)`` of the store's file system, one call for every file of the
batch, where the C library has it (Linux); elsewhere each temp file is fsynced and each
folder fsynced once. Any OS error of a flush fails the log (the writer's sticky error),
so the records are never written.
"""

from __future__ import annotations

import contextlib
import ctypes
import itertools
import os
import threading
from collections.abc import Callable

from rungbench.evidence.canonical import bytes_digest
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
        self._queued: list[tuple[str, str, str]] = []
        """``(temp path, final path, folder)`` written but not yet durable."""
        self._numbers = itertools.count(1)
        """Numbers the temp files (``next`` on it is atomic under the interpreter lock)."""
        self.flushes = 0
        """Flushes that made at least one object durable."""

    def put(self, data: bytes) -> str:
        """Write ``data`` to a temp file and queue it for :meth:`flush`; return its digest.

        Falls back to :meth:`ObjectStore.put_bytes` (durable at once, and naming what is
        wrong) on any OS error.
        """
        name = bytes_digest(data)
        hexpart = name[len("sha256:"):]
        folder = f"{self.store.objects}/{hexpart[:2]}"
        temp = f"{folder}/{TEMP_PREFIX}{hexpart[2:18]}-{os.getpid()}-{next(self._numbers)}"
        try:
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
        except OSError:
            with contextlib.suppress(OSError):
                os.unlink(temp)
            return self.store.put_bytes(data)
        with self._lock:
            self._queued.append((temp, f"{folder}/{hexpart[2:]}", folder))
        return name

    def flush(self) -> None:
        """Make every queued object durable under its name (raises the first OS error)."""
        with self._lock:
            batch, self._queued = self._queued, []
        if not batch:
            return
        root = str(self.store.objects)
        if self.use_syncfs:
            sync_file_system(root)
        else:
            for temp, _, _ in batch:
                fd = os.open(temp, os.O_RDONLY)
                try:
                    os.fsync(fd)
                finally:
                    os.close(fd)
        for temp, final, _ in batch:
            os.replace(temp, final)
        if self.use_syncfs:
            sync_file_system(root)
        else:
            for folder in sorted({folder for _, _, folder in batch}):
                fsync_dir(folder)
        self.flushes += 1
