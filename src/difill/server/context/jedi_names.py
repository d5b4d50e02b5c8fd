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
* **Never on the event loop, never long, never in the server's interpreter.**  jedi runs in a
  process of its own (jedi_process.py: a fill beside it on a thread waited for the interpreter
  at every step, and a module that made it grow or crash took the server along); one thread here
  sends it each completion, which is waited for ``DEADLINE_S``.  Past it the caller keeps
  today's rules, and the answer, when it comes, is cached for the next keystroke.  jedi's first
  completion in a process loads its stubs (about a second): ``warm`` starts it in the background
  when the first Python document opens, so that the first ``x.`` or import line typed finds it
  loaded.
* **Cached** per document text, cursor and project; the process holds parso's cache of parsed
  modules to ``MAX_PARSED_MODULES`` (a 10,000-module package does not grow it without bound).
* **No code runs**: jedi parses modules, it never imports a Python file (kept so: ``Script``,
  not ``Interpreter``).
* **No denied file reaches a candidate**: a name defined in a file the caller refuses (one the
  secrets policy denies, or one neither in the workspace nor in the environment's modules: a
  relative import that climbs above the workspace folder) is dropped.  Every file jedi opens in
  jedi's process goes through parso's ``FileIO.read``, wrapped there (``guard_reads``) to ask
  this side and read nothing from such a path.  One read is beyond that wrapper: jedi finds an
  imported module, and reads its source, in its environment subprocess (so that compiled modules
  are imported there); a denied module the document itself imports is read there, and its names
  dropped.  ``FileIO.read`` is one private name borrowed; a completion's ``_name`` (to tell a
  submodule without importing it) is the other.  tests/server/context/test_jedi_names.py pins both.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.util
import logging
import os
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout

from difill.server.context import files, jedi_process
from difill.server.context.jedi_process import JediProcess

log = logging.getLogger("difill.server")

DEADLINE_S = 0.05  # a keystroke's share: past it, today's rules answer
# A document whose completions take longer gets none at a typed word (``slow``).  Chosen on the
# tuning projects: at 0.05 s the gate closed on ordinary files of a busy 2-core machine and took
# back most of what jedi at a typed word saves (typing 20.1% -> 17.3% net); at this bound it
# closes on none of them and only a huge module (seconds a completion) goes without.
SLOW_S = 0.25
CACHE_ENTRIES = 64
# A completion nobody waits for yet (a typed word's list) waits this long at most for the model's
# job: jedi's process runs on the other core, and on a 2-core machine beside a fill and the editor
# it took the fill's CPU (typing at 6 keys a second: 11 keystrokes answered late without this
# wait, 1 with it; docs/drafts.md "Round 4").
MAX_YIELD_S = 0.5
YIELD_POLL_S = 0.005
DENIED_ENTRIES = 4096  # paths whose policy answer is remembered (JediNames.denies)
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
        self._model_busy = model_busy or (lambda: False)  # whether a model job runs (the engine host's)
        self._denied: dict[tuple, bool] = {}  # its and ``secret``'s answers, per workspace folders
        self.folders = folders
        self.python = python  # the project's interpreter (``projectPython``); None: this server's
        self.process = JediProcess()
        self._executor = ThreadPoolExecutor(1, thread_name_prefix="difill-jedi")
        self._lock = threading.Lock()
        self._cache: OrderedDict[tuple, list[str]] = OrderedDict()
        self._running: dict[tuple, Future] = {}
        self._latest: tuple | None = None
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
            return None  # it finishes in jedi's process and is cached for the next keystroke

    def pending(self, text: str, offset: int, path: str | None) -> bool:
        """Whether jedi is still completing at ``offset`` for an earlier ``names`` that did not wait
        for it: an answer made meanwhile lacks its list, and is not cached (Retrieval.waiting).
        Asked at every keystroke: the text is hashed only when a completion runs at this place."""
        place = (path, *_position(text, offset))
        with self._lock:
            here = [k for k in self._running if isinstance(k, tuple) and (k[0], *k[2:]) == place]
        if not here:
            return False
        key = _key(path, text, offset)
        with self._lock:
            return key in here and key not in self._cache

    def slow(self, path: str | None) -> bool:
        """Whether jedi's last two completions of this document each took over ``SLOW_S``: then a
        typed word does not ask (symbol_lookup.py).  100-200 ms a completion on a 2,000-line
        module, seconds on a generated one.  ``x.`` still asks, and so measures again."""
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
        """Start jedi's process and load its standard-library stubs there, once, answering no
        one: the first completion in a process takes about a second, the later ones milliseconds."""
        with self._lock:
            if self._warmed:
                return
            self._warmed = True
            # Kept with the completions: close() waits for it too.
            self._running[jedi_process.WARM_UP] = self._executor.submit(self._warm_up)

    def _warm_up(self) -> None:
        try:
            self._after_the_model()
            _, error = self.process.request(("warm", self.python), self.denies)
            if error:
                log.debug("jedi warm-up failed: %s", error)
        finally:
            with self._lock:
                self._running.pop(jedi_process.WARM_UP, None)

    def _after_the_model(self) -> None:
        """Wait (``MAX_YIELD_S`` at most) while a model job runs (``MAX_YIELD_S``'s comment)."""
        started = time.monotonic()
        while self._model_busy() and time.monotonic() - started < MAX_YIELD_S:
            time.sleep(YIELD_POLL_S)

    def _complete(
        self, key: tuple, text: str, line: int, column: int, path: str | None, waited: bool = True
    ) -> list[str] | None:
        try:
            if not waited:
                self._after_the_model()  # nobody waits for this list yet
            with self._lock:
                if key != self._latest and key not in self._cache:
                    return None  # a newer keystroke asked since: skip this one
            started = time.perf_counter()
            found = self._jedi_names(text, line, column, path)
            self._note_cost(key[0], time.perf_counter() - started)
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
        """jedi's names at (line, column), from its process, less those defined in a denied file."""
        folder = next((f for f in self.folders() if path and files.inside(path, f)), None)
        # A src layout's absolute imports resolve from its ``src/``, as an installed package's would.
        added = (os.path.join(folder, "src"),) if folder and os.path.isdir(os.path.join(folder, "src")) else ()
        found, error = self.process.request(
            ("complete", text, line, column, path, folder, added, self.python), self.denies
        )
        if found is None:
            log.debug("jedi failed at %s:%d:%d: %s", path, line, column, error)
            return None
        return [
            name
            for name, module_path, is_module in found
            if is_module or not (module_path and self.denies(module_path))
        ]

    def environment_roots(self) -> tuple[str, ...]:
        """The folders of the environment names come from (``projectPython``'s once jedi's process
        has made it, else this server's; jedi's stubs included): jedi reads modules there."""
        return (*(self.process.roots or _environment_roots()), _jedi_folder())

    def environment_module(self, path: str) -> bool:
        """Whether ``path`` is really (symlinks resolved) a module of ``environment_roots``."""
        real = os.path.realpath(path)
        return any(files.inside(real, root) for root in self.environment_roots())

    def close(self, wait_s: float = 0.0) -> None:
        """Stop: jedi's process is stopped (a completion in progress answers None, never waited
        for on the event loop); ``wait_s``: wait that long for the thread's work to end (tests)."""
        self._executor.shutdown(wait=False, cancel_futures=True)
        self.process.close()
        with self._lock:
            running = list(self._running.values())
        for future in running:
            try:
                future.result(timeout=wait_s or 0)
            except Exception:  # noqa: BLE001 - a timeout, a cancellation
                pass


def _position(text: str, offset: int) -> tuple[int, int]:
    """jedi's (1-based line, column) of ``offset``."""
    return text.count("\n", 0, offset) + 1, offset - (text.rfind("\n", 0, offset) + 1)


def _key(path: str | None, text: str, offset: int) -> tuple:
    """A completion's cache key: the document, its text and jedi's position."""
    digest = hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).digest()
    return (path, digest, *_position(text, offset))


@functools.lru_cache(maxsize=1)
def _environment_roots() -> tuple[str, ...]:
    """This interpreter's folders (jedi's process runs the same one, from the same folder)."""
    return jedi_process.environment_roots()


@functools.lru_cache(maxsize=1)
def _jedi_folder() -> str:
    """jedi's own folder: its bundled typeshed stubs are read for the standard library."""
    spec = importlib.util.find_spec("jedi")
    return os.path.dirname(os.path.realpath(spec.origin)) if spec and spec.origin else os.sep + "nonexistent"
