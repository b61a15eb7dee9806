"""Where a stage's work items run: in this process (``local``) or as Ray tasks (``ray``).

A stage that fans work out (fixed-node searches of the label stage, successor searches
of the evaluator, agent calls of the cell runner) hands each item to a
:class:`concurrent.futures.Executor` and gets the item's result back. The executor only
computes: the driver alone writes records, keeps the logs and publishes, so what a stage
publishes cannot depend on the executor, on the number of workers or on interruptions.

* ``local`` — the stage's own workers in this process (threads feeding engine processes,
  or a thread pool of agent calls), exactly as without this module;
* ``ray`` — :class:`RayExecutor`, an Executor whose ``submit`` runs the call as a Ray task
  (``ObjectRef.future()``), inside :func:`ray_session`, which starts a local cluster or
  joins one at ``--ray-address``.

Ray is the optional extra ``rungbench[ray]`` and is imported only when asked for; without
it :func:`import_ray` raises :class:`ExtraMissing` naming ``pip install 'rungbench[ray]'``.

An exception raised by the call inside a worker comes back as that exception (its type,
message and attributes), not as Ray's wrapper, so a worker's refusal is the driver's refusal.
A worker that dies or a cluster that fails is a :class:`WorkerLost`.

Workers keep expensive resources (an engine process, an agent) between items with
:func:`worker_resource`: one per slot and thread, replaced when its key changes, closed at
exit. :class:`WorkerAgent` is the agent form: rebuilt in each worker from a recipe, so
that neither an HTTP client nor an API key travels.
"""

from __future__ import annotations

import atexit
import contextlib
import importlib
import importlib.util
import logging
import pickle
import threading
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import FIRST_COMPLETED, Executor, Future, InvalidStateError, wait
from contextlib import contextmanager
from dataclasses import dataclass
from types import ModuleType
from typing import Any, Literal, ParamSpec, TypeVar

from rungbench.agents.protocol import Agent, Request, Response, close_agent
from rungbench.errors import ExtraMissing, InputError, RungbenchError
from rungbench.evidence.canonical import digest

ExecutorKind = Literal["local", "ray"]
"""The registered executors."""
EXECUTOR_KINDS: tuple[ExecutorKind, ...] = ("local", "ray")
"""Every registered executor, default first."""
RAY_EXTRA = "pip install 'rungbench[ray]'"
"""How to install the Ray executor."""
RAY_OBJECT_STORE_BYTES = 128 * 2**20
"""Object store of a local cluster started here (items and results are small JSON)."""

P = ParamSpec("P")
T = TypeVar("T")
Item = TypeVar("Item")
Result = TypeVar("Result")


class WorkerLost(RungbenchError):
    """Raised when a worker or the cluster failed before a task returned."""


def ray_missing() -> str | None:
    """Why the Ray executor cannot be used here (None: it can)."""
    if importlib.util.find_spec("ray") is None:
        return f"the Ray executor needs the optional extra: {RAY_EXTRA}"
    return None


def import_ray() -> Any:
    """Return the ``ray`` module; raise :class:`ExtraMissing` without the extra."""
    problem = ray_missing()
    if problem is not None:
        raise ExtraMissing(problem, field="executor")
    module: ModuleType = importlib.import_module("ray")
    return module


# --------------------------------------------------------------------------- sessions


@dataclass(frozen=True)
class RaySession:
    """A Ray cluster this process is connected to."""

    address: str
    """The cluster's GCS address (``host:port``), for other drivers to join."""
    cpus: float
    """CPUs the cluster offers to tasks."""
    owned: bool
    """Whether this session started the connection (and so ends it)."""


@contextmanager
def ray_session(address: str | None = None, *, num_cpus: int | None = None
                ) -> Iterator[RaySession]:
    """Start a local Ray cluster (``address`` None) or join the one at ``address``.

    A connection this process already holds is reused and left open. A local cluster runs
    without a dashboard and is shut down on exit (Ray's own token authentication guards
    its ports).
    """
    ray = import_ray()
    if ray.is_initialized():
        yield _session(ray, owned=False)
        return
    options: dict[str, Any] = {"include_dashboard": False, "log_to_driver": False,
                               "logging_level": logging.ERROR, "configure_logging": True}
    if address is None:
        options.update(num_cpus=num_cpus, object_store_memory=RAY_OBJECT_STORE_BYTES)
    try:
        ray.init(address=address, **options)
    except Exception as exc:  # Ray's own error types vary by version and cause
        where = f"at {address}" if address else "locally"
        raise InputError(f"cannot start or join a Ray cluster {where}: {exc}",
                         field="ray_address") from exc
    try:
        yield _session(ray, owned=True)
    finally:
        ray.shutdown()


def _session(ray: Any, *, owned: bool) -> RaySession:
    return RaySession(address=str(ray.get_runtime_context().gcs_address),
                      cpus=float(ray.cluster_resources().get("CPU", 0.0)), owned=owned)


# --------------------------------------------------------------------------- portable errors


@dataclass(frozen=True)
class _Raised:
    """An exception raised in a worker, in a form every pickler carries across processes."""

    module: str
    qualname: str
    message: str
    state: dict[str, Any]
    pickled: bytes | None

    def rebuild(self) -> BaseException:
        """Return the exception as raised: its class, message and attributes."""
        if self.pickled is not None:
            exc: BaseException = pickle.loads(self.pickled)
            return exc
        try:
            cls: Any = importlib.import_module(self.module)
            for part in self.qualname.split("."):
                cls = getattr(cls, part)
            rebuilt = cls.__new__(cls)
            Exception.__init__(rebuilt, self.message)
            rebuilt.__dict__.update(self.state)
            if isinstance(rebuilt, BaseException):
                return rebuilt
        except Exception:  # any failure to rebuild falls back to the message
            pass
        return RungbenchError(f"{self.qualname} in a worker: {self.message}")


def _portable(exc: BaseException) -> _Raised:
    """Capture ``exc`` so that the driver can raise it again.

    An exception that survives a pickle round trip travels as it is; one whose
    constructor takes other arguments than its message (``Refusal``, ``InputError``) is
    rebuilt from its class, message and attributes.
    """
    cls = type(exc)
    pickled: bytes | None = None
    try:
        data = pickle.dumps(exc)
        clone = pickle.loads(data)
        if type(clone) is cls and str(clone) == str(exc):
            pickled = data
    except Exception:
        pickled = None
    state: dict[str, Any] = {}
    if pickled is None:
        for name, value in vars(exc).items():
            try:
                pickle.dumps(value)
            except Exception:
                continue
            state[name] = value
    return _Raised(cls.__module__, cls.__qualname__, str(exc), state, pickled)


def _call(fn: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]
          ) -> tuple[bool, Any]:
    """Run ``fn`` in a worker; return (True, result) or (False, the portable exception)."""
    try:
        return True, fn(*args, **kwargs)
    except Exception as exc:
        return False, _portable(exc)


# --------------------------------------------------------------------------- the executor


class RayExecutor(Executor):
    """A :class:`concurrent.futures.Executor` whose calls run as Ray tasks.

    Needs a connected session (:func:`ray_session`). Each ``submit`` is one task asking
    for ``num_cpus`` CPUs; the returned future settles when the task's result reaches the
    driver. Cancelling a future cancels its task.
    """

    def __init__(self, *, num_cpus: float = 1.0) -> None:
        self._ray = import_ray()
        if not self._ray.is_initialized():
            raise InputError("the Ray executor needs a connected Ray session (ray_session)",
                             field="executor")
        self._remote = self._ray.remote(_call).options(num_cpus=num_cpus)
        self._lock = threading.Lock()
        self._live: dict[Future[Any], Future[Any]] = {}
        self._closed = False

    def submit(self, fn: Callable[P, T], /, *args: P.args, **kwargs: P.kwargs) -> Future[T]:
        """Run ``fn(*args, **kwargs)`` as a Ray task; return its future."""
        with self._lock:
            if self._closed:
                raise RuntimeError("cannot submit to a shut-down RayExecutor")
            ref = self._remote.remote(fn, args, kwargs)
            outer: Future[T] = Future()
            inner: Future[Any] = ref.future()
            self._live[outer] = inner
        outer.add_done_callback(lambda f: self._cancelled(f, ref))
        inner.add_done_callback(lambda f: self._settle(outer, f))
        return outer

    def _cancelled(self, outer: Future[Any], ref: Any) -> None:
        with self._lock:
            self._live.pop(outer, None)
        if outer.cancelled():
            self._ray.cancel(ref)

    def _settle(self, outer: Future[Any], inner: Future[Any]) -> None:
        try:
            ok, value = inner.result()
        except BaseException as exc:
            ok, value = False, WorkerLost(f"Ray task failed outside the call: {exc}")
        try:
            if ok:
                outer.set_result(value)
            else:
                outer.set_exception(value.rebuild() if isinstance(value, _Raised) else value)
        except InvalidStateError:  # cancelled meanwhile
            pass

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        """Refuse new calls; optionally cancel pending ones and wait for the rest."""
        with self._lock:
            self._closed = True
            live = dict(self._live)
        if cancel_futures:
            for outer in live:
                outer.cancel()
        if wait:
            _wait_all(list(live))


def _wait_all(futures: list[Future[Any]]) -> None:
    if futures:
        wait(futures)


@contextmanager
def executor_for(kind: ExecutorKind, *, address: str | None = None, workers: int = 1
                 ) -> Iterator[Executor | None]:
    """Yield the executor of ``kind``: None for ``local`` (the stage's own workers), a
    :class:`RayExecutor` inside a :func:`ray_session` for ``ray``.

    A local cluster is started with ``workers`` CPUs; a joined one offers what it has.
    """
    if kind == "local":
        if address is not None:
            raise InputError("a Ray address needs the ray executor", field="ray_address")
        yield None
        return
    if kind != "ray":
        raise InputError(f"unknown executor {kind!r}; known: {', '.join(EXECUTOR_KINDS)}",
                         field="executor")
    with ray_session(address, num_cpus=workers):
        executor = RayExecutor()
        try:
            yield executor
        finally:
            executor.shutdown(wait=True, cancel_futures=True)


# --------------------------------------------------------------------------- dispatch


def dispatch(executor: Executor, fn: Callable[[Item], Result], items: Iterable[Item], *,
             window: int, before_submit: Callable[[], object],
             on_result: Callable[[Item, Result], None]) -> None:
    """Run ``fn`` over ``items`` on ``executor``, at most ``window`` in flight.

    ``before_submit`` runs before each item is handed out (a gate: raising stops the
    hand-out). ``on_result`` runs in this thread for each result, in completion order.
    On the first failure nothing more is handed out, the items in flight are finished and
    their results still handed to ``on_result`` (kept work survives), then the failure is
    raised.
    """
    if window < 1:
        raise InputError(f"window must be >= 1, got {window!r}", field="window")
    source = iter(items)
    pending: dict[Future[Result], Item] = {}
    failure: BaseException | None = None

    def refill() -> None:
        while len(pending) < window:
            try:
                item = next(source)
            except StopIteration:
                return
            before_submit()
            pending[executor.submit(fn, item)] = item

    try:
        refill()
    except BaseException as exc:
        failure = exc
    while pending:
        done, _ = wait(list(pending), return_when=FIRST_COMPLETED)
        for future in done:
            item = pending.pop(future)
            if future.cancelled():
                continue
            error = future.exception()
            try:
                if error is None:
                    on_result(item, future.result())
            except BaseException as exc:
                error = exc
            failure = failure or error
        if failure is None:
            try:
                refill()
            except BaseException as exc:
                failure = exc
    if failure is not None:
        raise failure


# --------------------------------------------------------------------------- agents in workers


AGENT_SLOT = "rungbench.agent"
"""The worker-resource slot holding a worker's rebuilt agent."""


class WorkerAgent:
    """An agent that each worker rebuilds from a recipe instead of receiving it pickled.

    A provider's HTTP client cannot travel between processes, and its API key should not:
    the driver keeps the agent it built (its name and description go into the manifest and
    are checked there); a worker calls ``recipe()`` once per process and thread (a provider
    then reads its key from the worker's own environment) and reuses that agent. What
    travels is the recipe, the name and the digest of the description.
    """

    def __init__(self, agent: Agent, recipe: Callable[[], Agent]) -> None:
        self.name = agent.name
        self.recipe = recipe
        self._local: Agent | None = agent
        self._key = digest(self.describe())

    def describe(self) -> dict[str, Any]:
        """The driver's agent's description (as the runner records it)."""
        if self._local is None:
            raise RuntimeError("a WorkerAgent is described on the driver only")
        described = getattr(self._local, "describe", None)
        value = described() if callable(described) else None
        return value if isinstance(value, dict) else {"name": self.name}

    def respond(self, request: Request) -> Response:
        """Answer with this worker's agent (rebuilt on first use)."""
        return worker_resource(AGENT_SLOT, self._key, self.recipe, close_agent).respond(request)

    def close(self) -> None:
        """Close the driver's agent."""
        if self._local is not None:
            close_agent(self._local)

    def __getstate__(self) -> dict[str, Any]:
        return {"name": self.name, "recipe": self.recipe, "_key": self._key, "_local": None}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)


# --------------------------------------------------------------------------- worker resources


_resources = threading.local()
_every: list[tuple[Any, Callable[[Any], None]]] = []
_every_lock = threading.Lock()


def worker_resource(slot: str, key: str, make: Callable[[], T],
                    close: Callable[[T], None]) -> T:
    """Return this thread's resource in ``slot`` made for ``key``; make it when absent.

    A resource made for another key is closed first. Every resource is closed when the
    worker process exits.
    """
    held: dict[str, tuple[str, Any, Callable[[Any], None]]] = _held()
    current = held.get(slot)
    if current is not None and current[0] == key:
        value: T = current[1]
        return value
    discard_resource(slot)
    value = make()
    held[slot] = (key, value, close)
    with _every_lock:
        _every.append((value, close))
    return value


def discard_resource(slot: str) -> None:
    """Close and forget this thread's resource in ``slot`` (after it failed, say)."""
    current = _held().pop(slot, None)
    if current is None:
        return
    _, value, close = current
    with _every_lock:
        _every[:] = [(v, c) for v, c in _every if v is not value]
    _quiet_close(value, close)


def _held() -> dict[str, tuple[str, Any, Callable[[Any], None]]]:
    held: dict[str, tuple[str, Any, Callable[[Any], None]]] | None = getattr(
        _resources, "held", None)
    if held is None:
        held = {}
        _resources.held = held
    return held


def _quiet_close(value: Any, close: Callable[[Any], None]) -> None:
    with contextlib.suppress(Exception):  # closing must not mask the outcome being reported
        close(value)


@atexit.register
def _close_every() -> None:
    with _every_lock:
        every, _every[:] = list(_every), []
    for value, close in every:
        _quiet_close(value, close)
