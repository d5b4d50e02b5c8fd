"""Python names as an IDE knows them: jedi's completions at the cursor (issue 46, part 2).

The workspace index resolves ``module.`` only to the workspace's own files, by path.  jedi (MIT,
the completion library of jedi-language-server and IPython) resolves what an IDE does: re-exports
and ``__all__``, star imports, absolute imports in a ``src/`` layout, the standard library and
installed packages (this server's environment), and the attributes of classes and instances.
symbol_lookup.py asks it after ``x.`` where its own rules find no workspace module, and at a
typed word (once per word, ``names(..., wait_s=0)``), and ranks its names as it ranks the
workspace's; the model then orders the names no evidence tells apart.

* **The project's interpreter.**  ``projectPython`` names it (a virtual environment's
  ``bin/python``): its standard library and packages are the ones named.  Unset, or unusable
  (logged once), this server's own.
* **Never on the event loop, never long.**  Completion runs on one thread of its own and is
  waited for ``DEADLINE_S``; past it the caller keeps today's rules, and the answer, when it
  comes, is cached for the next keystroke.  jedi's first completion in a process loads its stubs
  (about a second): ``warm`` starts it in the background when the first Python document opens,
  so that the first ``x.`` or import line typed finds it loaded.
* **Cached** per document text, cursor and project; parso's own cache of parsed modules is held
  to ``MAX_PARSED_MODULES`` (a 10,000-module package does not grow it without bound).
* **No code runs**: jedi parses modules, it never imports a Python file (kept so: ``Script``,
  not ``Interpreter``).
* **No denied file reaches a candidate**: a name defined in a file the caller refuses (one the
  secrets policy denies, or one neither in the workspace nor in the environment's modules: a
  relative import that climbs above the workspace folder) is dropped.  Every file jedi opens in
  this process goes through parso's ``FileIO.read``, wrapped once (``guard_reads``) to read
  nothing from such a path.  One read is beyond that wrapper: jedi finds an imported module, and
  reads its source, in its environment subprocess (so that compiled modules are imported there,
  not here); a denied module the document itself imports is read there, and its names dropped.
  ``FileIO.read`` is one private name borrowed here; a completion's ``_name`` (to tell a
  submodule without importing it) is the other.  tests/server/context/test_jedi_names.py pins both.
"""

from __future__ import annotations

import functools
import hashlib
import keyword
import logging
import os
import sys
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout

log = logging.getLogger("difill.server")

DEADLINE_S = 0.05  # a keystroke's share: past it, today's rules answer
# A document whose completions take longer gets none at a typed word (``slow``).  Chosen on the
# tuning projects: at 0.05 s the gate closed on ordinary files of a busy 2-core machine and took
# back most of what jedi at a typed word saves (typing 20.1% -> 17.3% net); at this bound it
# closes on none of them and only a huge module (seconds a completion) goes without.
SLOW_S = 0.25
MAX_YIELD_S = 0.5  # a completion nobody waits for waits this long at most for the model's job
YIELD_POLL_S = 0.005
MAX_NAMES = 2000  # jedi lists every name of a module; the ranking reads this many (symbols.MAX_MODULE_NAMES)
CACHE_ENTRIES = 64
# jedi and parso keep process-wide state (inference caches, parsed modules) that is not made for
# two threads: a closed index's completion or warm-up may still run beside a new index's.
JEDI_LOCK = threading.Lock()
DENIED_ENTRIES = 4096  # paths whose policy answer is remembered (JediNames.denies)
# parso keeps every module jedi parsed in a process-wide cache, dropping only those unused for 10
# minutes once it holds 600: a star-import chain through a 10,000-module package would keep them
# all.  After each completion the least recently used go, down to this many.
MAX_PARSED_MODULES = 400
WARM_UP = "import os\nos."  # a completion that reads the standard library's stubs
MAX_TEXT_CHARS = 1024 * 1024  # as the syntax trees' cap (server/trees.py): no completion above it


class JediNames:
    """Completions at a cursor of a Python document, within a deadline; None when jedi is not
    installed, did not answer in time, or failed (the caller keeps its own rules)."""

    def __init__(
        self,
        denies: Callable[[str], bool],
        folders: Callable[[], list[str]],
        python: str | None = None,
        secret: Callable[[str], bool] | None = None,
        model_busy: Callable[[], bool] | None = None,
    ) -> None:
        self._denies = denies  # path -> whether jedi may not read it (``denies``)
        # path -> whether the secrets policy denies a document (its text is never completed); a
        # document outside every workspace folder that it allows is completed on its own text.
        self._secret = secret or denies
        # Whether a model job runs (the engine host's): a completion nobody waits for starts after
        # it (``_complete``).  jedi is pure Python: a fill that runs beside it waits for the
        # interpreter at every step (a fill's p50 12 -> 117 ms with jedi busy on another thread).
        self._model_busy = model_busy or (lambda: False)
        self._denied: dict[tuple, bool] = {}  # its and ``secret``'s answers, per workspace folders
        self.folders = folders
        self.python = python  # the project's interpreter (``projectPython``); None: this server's
        self._environment: object | None = None  # jedi's environment of ``python``, made on jedi's thread
        self._roots: tuple[str, ...] | None = None  # the folders that environment imports from
        self._executor = ThreadPoolExecutor(1, thread_name_prefix="difill-jedi")
        self._lock = threading.Lock()
        self._cache: OrderedDict[tuple, list[str]] = OrderedDict()
        self._running: dict[tuple, Future] = {}
        self._latest: tuple | None = None
        self._projects: dict[str | None, object] = {}
        self._costs: dict[str | None, tuple[float, ...]] = {}  # a document's last two completions, s
        self._warmed = False

    def names(self, text: str, offset: int, path: str | None, wait_s: float | None = None) -> list[str] | None:
        """jedi's names at ``offset``, waited for ``wait_s`` (``DEADLINE_S`` when None; 0 starts
        the completion and answers only from the cache: a word's first character asks for the
        list its next keystrokes read)."""
        if len(text) > MAX_TEXT_CHARS or (path is not None and self._remembered(self._secret, path)):
            return None
        document = path
        if path is not None and self.denies(path):
            # Outside the workspace (a lone file, no folder open): its own names, the builtins and
            # the environment's, nothing read around it (``_project``: no folder of its own).
            path = None
        key = _key(document, text, offset)
        _, _, line, column = key
        with self._lock:
            if key in self._cache:
                self._cache.move_to_end(key)
                return self._cache[key]
            self._latest = key
            future = self._running.get(key)
            if future is None:
                waited = wait_s != 0  # a keystroke waits for it: no yielding to the model
                future = self._executor.submit(self._complete, key, text, line, column, path, waited)
                self._running[key] = future
        try:
            # DEADLINE_S is read at each call: tests wait longer.
            return future.result(timeout=DEADLINE_S if wait_s is None else wait_s)
        except FutureTimeout:
            return None  # it finishes on its thread and is cached for the next keystroke

    def pending(self, text: str, offset: int, path: str | None) -> bool:
        """Whether jedi is still completing at ``offset`` for an earlier ``names`` that did not wait
        for it: an answer made meanwhile lacks its list, and is not cached (Retrieval.waiting)."""
        key = _key(path, text, offset)
        with self._lock:
            return key in self._running and key not in self._cache

    def slow(self, path: str | None) -> bool:
        """Whether jedi's last two completions of this document each took over ``SLOW_S``: then a
        typed word does not ask (symbol_lookup.py).  jedi's work is pure Python on a thread of
        this process, and the request path waits for the interpreter meanwhile: 100-200 ms a
        completion on a 2,000-line module, seconds on a generated one.  ``x.`` still asks, and
        so measures again."""
        with self._lock:
            return min(self._costs.get(path, (0.0,))) > SLOW_S

    def _note_cost(self, path: str | None, seconds: float) -> None:
        with self._lock:
            if len(self._costs) >= DENIED_ENTRIES:
                self._costs.clear()
            self._costs[path] = (self._costs.get(path, (seconds,))[-1], seconds)

    def denies(self, path: str) -> bool:
        """The secrets policy's answer for ``path``, remembered while the workspace folders stay
        the same: jedi's stub search reads the same modules on every completion, and the policy's
        patterns cost more than the completion itself (a fresh ``JediNames`` comes with a changed
        ``contextExclude``: the index restarts)."""
        return self._remembered(self._denies, path)

    def _remembered(self, asked: Callable[[str], bool], path: str) -> bool:
        key = (asked, path, tuple(self.folders()))
        answer = self._denied.get(key)
        if answer is None:
            if len(self._denied) >= DENIED_ENTRIES:
                self._denied.clear()
            answer = self._denied[key] = asked(path)
        return answer

    def warm(self) -> None:
        """Load jedi and its standard-library stubs on its thread, once, answering no one: the
        first completion in a process takes about a second, the later ones milliseconds."""
        with self._lock:
            if self._warmed:
                return
            self._warmed = True
            # Kept with the completions: close() waits for it too (jedi's state is the process's).
            self._running[WARM_UP] = self._executor.submit(self._warm_up)

    def _after_the_model(self) -> None:
        """Wait (``MAX_YIELD_S`` at most) while a model job runs: jedi beside it would slow it."""
        started = time.monotonic()
        while self._model_busy() and time.monotonic() - started < MAX_YIELD_S:
            time.sleep(YIELD_POLL_S)

    def _warm_up(self) -> None:
        try:
            self._after_the_model()
            import jedi

            with JEDI_LOCK:
                jedi.Script(WARM_UP, environment=self._environment_of()).complete(2, 3)
        except Exception as err:  # noqa: BLE001 - no jedi, a broken environment: the first request pays
            log.debug("jedi warm-up failed: %s", err)
        finally:
            with self._lock:
                self._running.pop(WARM_UP, None)

    def _complete(
        self, key: tuple, text: str, line: int, column: int, path: str | None, waited: bool = True
    ) -> list[str] | None:
        try:
            if not waited:
                self._after_the_model()  # nobody waits for this list yet
            with self._lock:
                if key != self._latest and key not in self._cache:
                    return None  # a newer keystroke asked since: skip this one
            with JEDI_LOCK:
                started = time.perf_counter()
                found = self._jedi_names(text, line, column, path)
                self._note_cost(key[0], time.perf_counter() - started)
        except Exception as err:  # noqa: BLE001 - jedi on hostile code must never reach the request
            log.debug("jedi failed at %s:%d:%d: %s", path, line, column, err)
            found = None
        finally:
            with self._lock:
                self._running.pop(key, None)
        if found is not None:
            with self._lock:
                self._cache[key] = found
                while len(self._cache) > CACHE_ENTRIES:
                    self._cache.popitem(last=False)
        return found

    def _jedi_names(self, text: str, line: int, column: int, path: str | None) -> list[str] | None:
        """jedi's names at (line, column): under ``JEDI_LOCK``."""
        try:
            import jedi
        except ImportError:
            return None
        from jedi.inference.names import ImportName, SubModuleName

        MODULE_NAMES = (ImportName, SubModuleName)
        guard_reads(self.denies)
        script = jedi.Script(text, path=path, project=self._project(path), environment=self._environment_of())
        found = []
        try:
            for c in script.complete(line, column):
                if len(found) == MAX_NAMES:
                    break
                # A module's name is a file name: nothing of it is read, and asking its ``type``
                # or ``module_path`` imports it (50 ms each in a package of 10,000 modules,
                # which then took two minutes; after ``import `` its path is a guess in a zip
                # file).  The second private name borrowed.  A builtin's, a keyword's or a
                # compiled module's name has no path.
                if isinstance(c._name, MODULE_NAMES) or (
                    not keyword.iskeyword(c.name) and not (c.module_path and self.denies(os.fspath(c.module_path)))
                ):
                    found.append(c.name)
        finally:
            bound_parsed_modules(MAX_PARSED_MODULES)
        return found

    def _environment_of(self):
        """jedi's environment of ``projectPython`` (made once, on jedi's thread: it starts the
        interpreter); None for this server's own, or when that one cannot be used (logged once,
        and this server's environment is used instead)."""
        if self.python is None or self._environment is False:
            return None
        if self._environment is None:
            import jedi

            try:
                environment = jedi.create_environment(self.python, safe=False)
                roots = {os.path.realpath(p) for p in environment.get_sys_path() if p and os.path.isdir(p)}
            except Exception as err:  # noqa: BLE001 - not a Python, a broken one: the server's own stands
                log.warning("projectPython %s cannot be used (%s): names come from the server's own Python", self.python, err)
                self._environment = False
                return None
            self._roots = tuple(sorted(roots))
            self._environment = environment
        return self._environment

    def environment_module(self, path: str) -> bool:
        """Whether ``path`` is a module of the environment names come from (``projectPython``'s
        once it is in use, else this server's; jedi's stubs included)."""
        real = os.path.realpath(path)
        import jedi  # its bundled typeshed stubs are read for the standard library

        roots = (*(self._roots or _environment_roots()), os.path.dirname(os.path.realpath(jedi.__file__)))
        return any(real.startswith(root.rstrip(os.sep) + os.sep) for root in roots)

    def _project(self, path: str | None):
        """jedi's project of the workspace folder holding ``path``, with its ``src/`` on the path
        (a src layout's absolute imports resolve there, as an installed package's would)."""
        import jedi

        folder = next(
            (f for f in self.folders() if path and path.startswith(f.rstrip(os.sep) + os.sep)), None
        )
        if folder is None:  # no module of a folder around it on the path (jedi's default adds one)
            if None not in self._projects:
                self._projects[None] = jedi.Project(os.getcwd(), smart_sys_path=False)
            return self._projects[None]
        if folder not in self._projects:
            src = os.path.join(folder, "src")
            added = [src] if os.path.isdir(src) else []
            self._projects[folder] = jedi.Project(folder, added_sys_path=added)
        return self._projects[folder]

    def close(self, wait_s: float = 0.0) -> None:
        """Stop: a completion in progress ends on its own (never waited for on the event loop);
        ``wait_s``: wait that long for it (tests, so that it runs into no later test)."""
        self._executor.shutdown(wait=False, cancel_futures=True)
        with self._lock:
            running = list(self._running.values())
        for future in running:
            try:
                future.result(timeout=wait_s or 0)
            except Exception:  # noqa: BLE001 - a timeout, a cancellation or jedi's own failure
                pass


def _key(path: str | None, text: str, offset: int) -> tuple:
    """A completion's cache key: the document, its text and jedi's (1-based line, column)."""
    line = text.count("\n", 0, offset) + 1
    column = offset - (text.rfind("\n", 0, offset) + 1)
    return (path, hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).digest(), line, column)


@functools.lru_cache(maxsize=1)
def _environment_roots() -> tuple[str, ...]:
    """The folders this interpreter imports from (the standard library, site-packages), never
    the working directory: jedi completes from them as the server's environment."""
    roots = {os.path.realpath(p) for p in sys.path if p and os.path.isabs(p) and os.path.isdir(p)}
    return tuple(sorted(roots - {os.path.realpath(os.getcwd())}))


def bound_parsed_modules(limit: int) -> None:
    """Drop parso's least recently used parsed modules down to ``limit`` (jedi's thread only:
    the one user of parso in the server)."""
    try:
        from parso.cache import parser_cache
    except ImportError:
        return
    items = [(item.last_used, grammar, path) for grammar, cached in parser_cache.items() for path, item in cached.items()]
    if len(items) <= limit:
        return
    items.sort()
    for _, grammar, path in items[: len(items) - limit]:
        parser_cache[grammar].pop(path, None)


_guard: list[Callable[[str], bool]] = []  # the policy the wrapped read asks (the last one set)


def guard_reads(denies: Callable[[str], bool]) -> None:
    """Make every file jedi reads pass the secrets policy: parso's ``FileIO.read`` (which jedi's
    module loading goes through) returns nothing for a denied file.  Wrapped once per process."""
    import parso.file_io

    _guard[:] = [denies]
    read = parso.file_io.FileIO.read
    if getattr(read, "difill_guarded", False):
        return

    def guarded(self) -> bytes:
        path = os.fspath(self.path)
        # No file, nothing to deny: read as jedi would, failing as a missing file (its stub
        # search probes many such paths; an empty text there would be an empty module, and an
        # empty ``decimal-stubs`` in the standard library's zip hid typeshed's stub).
        if _guard and os.path.isfile(path) and _guard[0](path):
            log.debug("jedi: %s is denied by the secrets policy, not read", path)
            return b""
        return read(self)

    guarded.difill_guarded = True  # type: ignore[attr-defined]
    parso.file_io.FileIO.read = guarded  # type: ignore[method-assign]
