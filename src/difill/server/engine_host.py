"""The model in the server: loaded in the background, run on one worker thread.

Nothing here runs the model on the event loop, so document sync is never blocked.  One worker
thread does the loading and every fill, one at a time (the engine locks anyway).  Ghost text is
*urgent*: it never waits behind a long job (an edit of a large selection); the long job runs the
waiting ghost-text fills between two of its denoising steps, then goes on.  A ``Job`` is
one request's claim on the model; cancelling it sets a flag that the engine checks between
denoising steps (``should_stop``), and that the worker checks before it starts, so a request
that was superseded while queued never touches the model.

The engine modules (torch, transformers) are imported by the worker while loading, not when the
server starts: ``initialize`` is answered at once and the editor sees ``$/progress``.  A remote
backend never imports them at all.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections import deque
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from enum import StrEnum
from typing import TYPE_CHECKING, TypeVar

from difill.engine.api import (
    BackendError,
    Cancelled,
    FillOptions,
    InfillBackend,
    ModelLoadError,
    ShouldStop,
    about,
    runs_jobs_between_steps,
)
from difill.engine.names import ENGINE_LABELS
from difill.server.lifecycle import Feature

if TYPE_CHECKING:
    from difill.engine.backends import BackendSpec

log = logging.getLogger("difill.server.model")
T = TypeVar("T")

WARM_UP = ("def area(width, height):\n    return width", " * height\n")  # ends in a word: healing


class ModelState(StrEnum):
    LOADING = "loading"
    READY = "ready"
    ERROR = "error"


class Superseded(Exception):
    """A load that a newer load replaced before this step ran."""


class JobCancelled(Exception):
    """A job was cancelled (superseded, its document changed, or $/cancelRequest)."""


@dataclass(eq=False)
class Job:
    uri: str | None
    stop: threading.Event = field(default_factory=threading.Event)
    checks: int = 0  # times the engine reached a step (``before_step``): before the encoder, then once a step
    # Run by ``before_step`` on the worker, between two steps: the host serves urgent jobs there.
    between_steps: Callable[[], None] | None = None

    def cancel(self) -> None:
        self.stop.set()

    @property
    def cancelled(self) -> bool:
        return self.stop.is_set()

    def should_stop(self) -> bool:
        """Whether the job was cancelled: a question, nothing else."""
        return self.stop.is_set()

    def before_step(self) -> bool:
        """The engine's hook between two denoising steps: it is handed this as its ``should_stop``
        (asked before the prefix encoder, and before each step when nothing previews the fill),
        and a preview callback ends with it (``PreviewCallback``: then it is the step's one call
        into the server).  Count the step, serve the urgent jobs waiting for the worker
        (``between_steps``), then say whether to stop."""
        self.checks += 1
        if self.between_steps is not None and not self.should_stop():
            self.between_steps()
        return self.should_stop()

    @property
    def steps_done(self) -> int:
        return max(0, self.checks - 1)


@dataclass(eq=False)
class _Urgent:
    """An urgent job waiting for the worker: whichever takes it first runs it (the executor, or
    a long job between two steps); ``future`` lives on the event loop."""

    engine: InfillBackend
    job: Job
    work: Callable[..., object]  # work(engine, *args)
    args: tuple[object, ...]
    future: asyncio.Future
    loop: asyncio.AbstractEventLoop


class Jobs:
    """At most one job per document: a new one cancels the one in flight."""

    def __init__(self) -> None:
        self._by_uri: dict[str, Job] = {}

    def start(self, uri: str) -> Job:
        self.cancel(uri)
        job = Job(uri)
        self._by_uri[uri] = job
        return job

    def cancel(self, uri: str) -> None:
        job = self._by_uri.pop(uri, None)
        if job is not None:
            job.cancel()

    def cancel_all(self) -> None:
        for uri in list(self._by_uri):
            self.cancel(uri)

    def finish(self, job: Job) -> None:
        if job.uri is not None and self._by_uri.get(job.uri) is job:
            del self._by_uri[job.uri]


class OneJobPerDocument(Feature):
    """A feature that runs at most one model job per document (``self.jobs``): a change or a close
    makes that job useless, so it is cancelled; shutdown cancels them all."""

    jobs: Jobs

    def document_changed(self, uri: str) -> None:
        self.jobs.cancel(uri)

    def document_closed(self, uri: str) -> None:
        self.jobs.cancel(uri)

    def shutdown(self) -> None:
        self.jobs.cancel_all()


# Called on the event loop with (state, message, latency in ms).
StatusCallback = Callable[[str, str | None, float | None], None]


class LoadProgress:
    """What loading reports; the server maps it to $/progress (no-op by default)."""

    async def begin(self, title: str, message: str) -> None: ...

    def report(self, message: str, percentage: int) -> None: ...

    def end(self, message: str) -> None: ...


class EngineHost(Feature):
    def __init__(self, on_status: StatusCallback) -> None:
        self.on_status = on_status
        self.state = ModelState.LOADING
        self.error: str | None = None
        self.engine: InfillBackend | None = None  # once loaded
        self.model_path: str | None = None
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="difill-model")
        self._ready: asyncio.Event | None = None
        self._generation = 0  # which load is the latest: an older one that finishes late is dropped
        self._active = 0
        self._urgent: deque[_Urgent] = deque()  # urgent jobs not yet taken by the worker
        self._urgent_lock = threading.Lock()

    @property
    def busy(self) -> bool:
        """Whether a model job is running or waiting (the workspace index's build pauses meanwhile)."""
        return self._active > 0

    def _ready_event(self) -> asyncio.Event:
        if self._ready is None:
            self._ready = asyncio.Event()
        return self._ready

    async def load(self, spec: BackendSpec, progress: LoadProgress) -> None:
        """Load (or reload) the backend ``spec`` names; reports progress and status, never raises.

        Reloads coalesce: a newer ``load`` supersedes this one, whose remaining steps are skipped
        and whose warm-up fill stops at its next step or poll (a remote that never answers cannot
        hold the worker).  The backend loaded before is closed first, so nothing it holds (a
        remote's thread and event loop) outlives it.
        """
        model_path, remote = spec.model, spec.remote
        self._generation += 1
        generation = self._generation
        old, self.engine = self.engine, None
        self.state, self.error = ModelState.LOADING, None
        self._ready_event().clear()
        self.on_status("loading", f"loading the model from {model_path or 'the default directory'}", None)
        loop = asyncio.get_running_loop()
        started = time.perf_counter()

        def superseded() -> bool:
            return generation != self._generation

        def step(work: Callable[..., T], *args) -> asyncio.Future[T]:
            """``work(*args)`` on the worker, unless this load is superseded by the time it runs."""

            def run() -> T:
                if superseded():
                    raise Superseded()
                return work(*args)

            return loop.run_in_executor(self._executor, run)

        await loop.run_in_executor(self._executor, _close, old)
        await progress.begin("difill", "loading the engine")
        engine: InfillBackend | None = None
        try:
            if not remote:
                await step(_import_engine)
            progress.report("reading the model", 30)
            engine = await step(_load_engine, spec)
            progress.report("warming up", 80)
            await step(_warm_up, engine, superseded)
        except Exception as err:  # ModelLoadError, or anything a broken checkpoint raises
            await loop.run_in_executor(self._executor, _close, engine)  # a half-made backend too
            if superseded():
                progress.end("superseded")
                return
            self._failed(err, progress)
            return
        if superseded():
            await loop.run_in_executor(self._executor, _close, engine)
            progress.end("superseded")
            return
        self._loaded(engine, model_path, started, progress)

    def _failed(self, err: Exception, progress: LoadProgress) -> None:
        """The latest load failed: say why, and let waiting requests go."""
        clear = isinstance(err, ModelLoadError | BackendError)  # messages that say how to fix it
        message = str(err) if clear else f"{type(err).__name__}: {err}"
        self.state, self.error = ModelState.ERROR, message
        self._ready_event().set()  # waiting requests give up at once: there is nothing to wait for
        progress.end("failed")
        log.error("difill could not load its model: %s", message, exc_info=err)  # where it failed
        self.on_status("error", message, None)

    def _loaded(
        self, engine: InfillBackend, model_path: str | None, started: float, progress: LoadProgress
    ) -> None:
        """The latest load is ready: ``engine`` serves from now on, and the status says where it runs."""
        elapsed = (time.perf_counter() - started) * 1000
        self.engine, self.state, self.model_path = engine, ModelState.READY, model_path
        self._ready_event().set()
        # The backend says where it runs: a remote's URL without credentials (never the URL as
        # given) and the path its warm-up fill found; a local engine's checkpoint and its name,
        # so that :DifillStatus says which engine runs the model.
        said = about(engine)
        where = (
            said.where
            if said.engine == "remote"
            else f"{said.where} ({ENGINE_LABELS.get(said.engine, said.engine)})"
        )
        progress.end(f"ready ({elapsed / 1000:.1f} s)")
        log.info("model ready at %s in %.0f ms", where, elapsed)
        # The load time goes in the message: `latencyMs` is a suggestion's latency, which clients
        # show next to "ready" and use to pace their requests.
        self.on_status("ready", f"model loaded from {where} in {elapsed / 1000:.1f} s", None)

    async def wait_ready(self, timeout_s: float) -> InfillBackend | None:
        """The engine, waiting up to ``timeout_s`` while it loads; None if it is not there."""
        if self.state is ModelState.LOADING:
            try:
                await asyncio.wait_for(self._ready_event().wait(), timeout_s)
            except TimeoutError:
                return None
        return self.engine if self.state is ModelState.READY else None

    async def run(
        self,
        job: Job,
        work: Callable[..., T],
        *args: object,
        urgent: bool = False,
        background: bool = False,
    ) -> T:
        """``work(engine, *args)`` on the worker thread; raises JobCancelled if the job is cancelled.

        A BackendError (a remote server failed) is raised too, after the status says what the
        server said; the status stays so until a job succeeds ("ready").

        An ``urgent`` job (ghost text) does not queue behind a running job: that job runs it
        between two of its steps.  Urgent jobs never run inside each other.  A ``background``
        job (a speculative fill: nobody asked yet) is not reported in the status."""
        loop = asyncio.get_running_loop()
        engine = self.engine
        if engine is None:  # unloaded by a reload since the caller waited for it
            raise JobCancelled()
        counted = not background
        if counted:
            self._active += 1
            if self._active == 1:
                self.on_status("busy", None, None)
        started = time.perf_counter()
        failed = False
        try:
            if urgent:  # it runs on the worker unless a long job takes it first (_serve_urgent)
                item = _Urgent(engine, job, work, args, loop.create_future(), loop)
                with self._urgent_lock:
                    self._urgent.append(item)
                try:
                    self._executor.submit(self._take, item)
                except RuntimeError:  # the executor is shut down
                    raise JobCancelled() from None
                return await item.future
            # Ghost text waits behind a long job where the engine cannot run it in between.
            job.between_steps = self._serve_urgent if runs_jobs_between_steps(engine) else None
            return await loop.run_in_executor(self._executor, _run_job, engine, job, work, args)
        except BackendError as err:  # a remote server's failure: the status says what it said
            failed = True
            log.warning("the model server failed: %s", err)
            self.on_status("error", f"the model server failed: {err}", None)
            raise
        finally:
            job.cancel()  # a no-op when done; when the await was cancelled it stops the denoising
            if counted:
                self._active -= 1
                if self._active == 0 and self.state is ModelState.READY and not failed:
                    self.on_status("ready", None, (time.perf_counter() - started) * 1000)

    async def run_for(self, jobs: Jobs, uri: str, work: Callable[[Job], Callable[[InfillBackend], T]]) -> T:
        """The one way a feature runs model work for a document: a job that replaces the
        document's job in flight, the work ``work(job)`` makes (handing the engine
        ``job.before_step``) run on the worker, the job finished however it ends.  JobCancelled
        (a newer change or request took it), BackendError and TooLarge reach the caller, which
        answers each as its LSP method must (an error for an edit the user asked for, no edits
        for a next edit nobody asked for).  Ghost text keeps its job across requests (a fill in
        flight serves the next keystroke: inflight.py) and runs ``run`` itself."""
        job = jobs.start(uri)
        try:
            return await self.run(job, work(job))
        finally:
            jobs.finish(job)

    def _take(self, item: _Urgent) -> None:
        """On the worker: run ``item`` unless a long job already did, and hand its outcome to the
        event loop (dropped if nobody waits now)."""
        with self._urgent_lock:
            if item not in self._urgent:
                return
            self._urgent.remove(item)
        try:
            outcome: tuple[object, BaseException | None] = (
                _run_job(item.engine, item.job, item.work, item.args),
                None,
            )
        except Exception as err:  # noqa: BLE001 - the awaiting request gets it, as from run_in_executor
            outcome = (None, err)

        def settle() -> None:
            if item.future.done():  # the request was cancelled meanwhile
                return
            result, error = outcome
            if error is not None:
                item.future.set_exception(error)
            else:
                item.future.set_result(result)

        try:
            item.loop.call_soon_threadsafe(settle)
        except RuntimeError:  # the loop is closed: the server is gone
            pass

    def _serve_urgent(self) -> None:
        """On the worker, between two steps of a long job: run every urgent job waiting."""
        with self._urgent_lock:
            waiting = list(self._urgent)
        for item in waiting:
            self._take(item)

    def shutdown(self) -> None:
        self._generation += 1  # a load in flight is superseded: its warm-up stops at its next check
        self._executor.shutdown(wait=False, cancel_futures=True)


# ---------------------------------------------------------------------------- on the worker thread


def _import_engine() -> None:
    try:
        import difill.engine.infill  # noqa: F401  (torch and transformers: seconds)
    except ModuleNotFoundError:  # a base install without torch: the load says what to install
        pass


def _load_engine(spec: BackendSpec) -> InfillBackend:
    from difill.engine.backends import make_backend

    return make_backend(spec)


def _close(engine: InfillBackend | None) -> None:
    """Release what a backend holds (a remote's connection, thread and loop); on the worker, so
    it never closes under a running job."""
    close = getattr(engine, "close", None)
    if close is not None:
        try:
            close()
        except Exception as err:  # noqa: BLE001 - a backend that fails to close must not stop a reload
            log.warning("closing the previous backend failed: %s", err, exc_info=err)


def _warm_up(engine: InfillBackend, superseded: ShouldStop) -> None:
    """One tiny fill, so the first real request does not pay for first-call setup; it stops as
    soon as a newer load supersedes it."""
    engine.fill(*WARM_UP, FillOptions(max_hole_tokens=4, max_steps=2), should_stop=superseded)


def _run_job(engine: InfillBackend, job: Job, work: Callable[..., T], args: tuple[object, ...] = ()) -> T:
    """``work(engine, *args)``: the caller names the function it runs (suggestion_path.suggest, a
    feature's ``work(engine)``) and its arguments."""
    if job.cancelled:  # superseded while queued: not even the prefix encoder runs
        raise JobCancelled()
    try:
        return work(engine, *args)
    except Cancelled as err:
        raise JobCancelled() from err
