"""jedi in a process of its own: the server's side (``JediProcess``) and the process's (``serve``).

jedi is pure Python.  On a thread of the server it held the interpreter while it parsed and
inferred, and a fill running beside it waited for the interpreter at every denoising step (a
fill's p50 12 -> 117 ms); a module that made it grow or crash took the server with it.  In a
process of its own it runs on the other core, its memory is its own (it exits past
``MAX_RSS_MB`` and the next request starts a new one; while it works, it is killed past
jedi_bounds.py's bound), and a crash or a completion past ``TIMEOUT_S`` costs that one list.

Its parse cache is its own: jedi keeps parsed modules pickled in ``~/.cache/jedi``, shared with
every jedi on the machine (an editor's jedi-language-server too), and a guarded read parses as an
empty module that parso would save there under the real file's time, for every later reader; a
module pickled halfway when a process is killed fails every later load.  Each process gets a
fresh folder (``cache_dir``), removed when it ends (and, when the server was killed, by the next
server's first jedi process: engine/disk.py ``sweep``): its first completion parses the standard
library's stubs again (about 1.8 s in the background against 0.5 s from a warm cache).

The process reads no file the server would not let it read: every file jedi opens goes through
parso's ``FileIO.read`` (``guard_reads``), which asks the server (a ``read?`` frame, answered by
files.py ``readable``: the real path, allowed as named and as its target) and reads nothing from a
denied path, and a regular file only (files.py ``read_regular``).  What the process sends back is
names, with the file each is defined in, and the server drops those of a denied file (jedi_names.py).

Frames, both ways: a 4-byte big-endian length, then a pickle (the two ends are this module, one
process apart).  The server sends ``("complete", text, line, column, path, folder, added,
python)`` or ``("warm", python)``; the process answers ``("read?", path)`` (the server answers
``("denied", bool)``), ``("roots", folders)`` once it knows the environment's folders, and last
``("done", names | None, error | None, warning | None, parsed, leaving)``: each name as ``(name,
module path or None, is_module)``, ``warning`` for the server's log (an unusable
``projectPython``), ``parsed`` the parsed modules it keeps, ``leaving`` when it is over its memory
bound and ends after this answer.

    python -m difill.server.context.jedi_process   # the process; the server starts it
"""

from __future__ import annotations

import functools
import keyword
import logging
import os
import pickle
import re
import struct
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from typing import Any, BinaryIO

from difill.engine import disk
from difill.server.context import files, jedi_bounds

log = logging.getLogger("difill.server")

MAX_NAMES = 2000  # jedi lists every name of a module; the ranking reads this many (symbols.MAX_MODULE_NAMES)
# parso keeps every module jedi parsed in a process-wide cache, dropping only those unused for 10
# minutes once it holds 600: a star-import chain through a 10,000-module package would keep them
# all.  After each completion the least recently used go, down to this many.
MAX_PARSED_MODULES = 400
MAX_RSS_MB = 1024  # resident past this, the process exits after its answer; the next request starts another
TIMEOUT_S = 60.0  # a completion still running then is given up: the process is killed
WARM_UP = "import os\nos."  # a completion that reads the standard library's stubs
HEADER = struct.Struct(">I")
MAX_FRAME_BYTES = 256 * 1024 * 1024
CACHE_PREFIX = "difill-jedi-"  # jedi's parse cache folders, in the temporary folder


# ---------------------------------------------------------------------------- frames


def write_frame(stream: BinaryIO, message: Any) -> None:
    data = pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL)
    stream.write(HEADER.pack(len(data)) + data)
    stream.flush()


def read_frame(stream: BinaryIO) -> Any | None:
    """The next message; None at the end of the stream (the other end has gone)."""
    header = _read_exactly(stream, HEADER.size)
    if header is None:
        return None
    (size,) = HEADER.unpack(header)
    if size > MAX_FRAME_BYTES:
        return None
    data = _read_exactly(stream, size)
    return None if data is None else pickle.loads(data)  # noqa: S301 - our own process, over our own pipe


def _read_exactly(stream: BinaryIO, size: int) -> bytes | None:
    chunks, left = [], size
    while left:
        chunk = stream.read(left)
        if not chunk:
            return None
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


# ---------------------------------------------------------------------------- the server's side


class JediProcess:
    """The process, started at the first request and again after it ended; one request at a time
    (jedi_names.py calls it from its one thread)."""

    def __init__(self) -> None:
        self._proc: subprocess.Popen | None = None
        self._lock = threading.Lock()
        self._closed = False
        self.roots: tuple[str, ...] | None = None  # the environment's folders, as the process found them
        self.parsed = 0  # the parsed modules the process keeps (parso's cache), after its last answer
        self.pid: int | None = None
        self.cache_dir: str | None = None  # jedi's parse cache, the process's own (module docstring)
        self._cache: disk.OwnedDir | None = None  # that folder, locked while this server lives

    def request(self, message: tuple, denies: Callable[[str], bool]) -> tuple[list | None, str | None]:
        """Send ``message``, answer the process's ``read?`` with ``denies``, and return the
        names and the error of its ``done``; (None, why) when the process died or took longer
        than ``TIMEOUT_S`` (it is killed; the next request starts a new one)."""
        with self._lock:
            if self._closed:
                return None, "closed"
            deadline = time.monotonic() + TIMEOUT_S
            try:
                proc = self._started()
                write_frame(proc.stdin, message)
                while True:
                    why = jedi_bounds.wait_for_frame(proc, deadline, TIMEOUT_S)
                    if why is not None:
                        self._kill()
                        jedi_bounds.log_kill_once(why)
                        return None, why
                    reply = read_frame(proc.stdout)
                    if reply is None:
                        code = proc.wait()
                        self._proc = None
                        self._remove_cache()
                        return None, f"jedi's process ended (exit code {code})"
                    if reply[0] == "read?":
                        write_frame(proc.stdin, ("denied", bool(denies(reply[1]))))
                    elif reply[0] == "roots":
                        self.roots = reply[1]
                    else:  # done
                        _, names, error, warning, self.parsed, leaving = reply
                        if warning:
                            log.warning("%s", warning)
                        if leaving:  # over its memory bound: the next request starts another
                            proc.wait()
                            self._proc = None
                            self._remove_cache()
                        return names, error
            except (BrokenPipeError, OSError, pickle.UnpicklingError, ValueError) as err:
                self._kill()
                return None, f"jedi's process failed: {type(err).__name__}"

    def _started(self) -> subprocess.Popen:
        if self._proc is not None and self._proc.poll() is None:
            return self._proc
        # This package's folder on the path: the server may run from a source tree (PYTHONPATH).
        package_root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (package_root, os.environ.get("PYTHONPATH")) if p)}
        self._remove_cache()
        sweep_killed_servers()
        self._cache = disk.OwnedDir(CACHE_PREFIX)
        self.cache_dir = self._cache.path
        self._proc = subprocess.Popen(
            [sys.executable, "-m", "difill.server.context.jedi_process", self.cache_dir],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            # Nothing of a document may reach a log the secrets policy does not see: its errors
            # come back in ``done``, and a crash shows as the end of its output.
            stderr=subprocess.DEVNULL,
            env=env,
        )
        self.pid = self._proc.pid
        return self._proc

    def _kill(self) -> None:
        if self._proc is not None:
            self._proc.kill()
            self._proc.wait()
            self._proc = None
        self._remove_cache()

    def _remove_cache(self) -> None:
        # ``close`` runs beside a request (it must not wait for its lock): take the folder once.
        cache, self._cache = self._cache, None
        if cache is not None:
            self.cache_dir = None
            cache.remove()

    def close(self) -> None:
        """Stop the process now (a completion in progress answers None)."""
        self._closed = True
        proc = self._proc
        if proc is not None and proc.poll() is None:
            proc.kill()  # its request, if any, reads the end of its output and returns
            proc.wait()
        self._remove_cache()


@functools.cache
def sweep_killed_servers() -> None:
    """Once per server: remove the cache folders that servers killed (SIGKILL) left behind."""
    for path in disk.sweep(CACHE_PREFIX):
        log.info("removed jedi's cache %s: its server was killed", path)


# ---------------------------------------------------------------------------- the process's side


class Worker:
    """jedi's state in the process: its environments and projects, kept across requests."""

    def __init__(self, send: Callable[[Any], None]) -> None:
        self.send = send
        # projectPython -> (jedi's environment, or None when it cannot be used; its folders)
        self.environments: dict[str, tuple[Any, tuple[str, ...]]] = {}
        self.projects: dict[tuple, Any] = {}
        self.sent_roots: tuple | None = None  # (projectPython, its folders) last sent to the server
        self.warning: str | None = None  # for the server's log, with the next answer

    def complete(self, text: str, line: int, column: int, path: str | None, folder: str | None,
                 added: tuple[str, ...], python: str | None) -> list[tuple[str, str | None, bool]]:  # fmt: skip
        import jedi
        from jedi.inference.names import ImportName, SubModuleName

        environment = self.environment(python)
        script = jedi.Script(text, path=path, project=self.project(folder, added), environment=environment)
        found: list[tuple[str, str | None, bool]] = []
        paths: dict[str, str] = {}  # one string per module path: pickled once, not once a name
        try:
            for c in script.complete(line, column):
                if len(found) == MAX_NAMES:
                    break
                # A module's name is a file name: nothing of it is read, and asking its ``type``
                # or ``module_path`` imports it (50 ms each in a package of 10,000 modules,
                # which then took two minutes; after ``import `` its path is a guess in a zip
                # file).  A private name borrowed (tests/server/context/test_jedi_names.py pins
                # it).  A builtin's, a keyword's or a compiled module's name has no path.
                if isinstance(c._name, (ImportName, SubModuleName)):
                    found.append((c.name, None, True))
                elif not keyword.iskeyword(c.name):
                    path = os.fspath(c.module_path) if c.module_path else None
                    found.append((c.name, path and paths.setdefault(path, path), False))
        finally:
            bound_parsed_modules(MAX_PARSED_MODULES)
        return found

    def environment(self, python: str | None):
        """jedi's environment of ``projectPython``; None: this interpreter's own, also when that
        one cannot be used (``warning`` says why, once).  Its folders go to the server first."""
        if python is not None and python not in self.environments:
            self.environments[python] = self._created(python)
        environment, roots = self.environments[python] if python is not None else (None, environment_roots())
        if self.sent_roots != (python, roots):
            self.send(("roots", roots))
            self.sent_roots = (python, roots)
        return environment

    def _created(self, python: str) -> tuple[Any, tuple[str, ...]]:
        import jedi

        own = " names come from the server's own Python"
        if problem := not_an_interpreter(python):
            self.warning = f"projectPython {python} is not run ({problem}):{own}"
            return None, environment_roots()
        try:
            # safe=False: jedi's own check passes any root-owned program (/bin/sh) for a user and
            # refuses a user's venv for root; ``not_an_interpreter`` is the check.
            environment = jedi.create_environment(python, safe=False)
            roots = {os.path.realpath(p) for p in environment.get_sys_path() if p and os.path.isdir(p)}
            return environment, tuple(sorted(roots))
        except Exception as err:  # noqa: BLE001 - not a Python, a broken one: this one stands
            self.warning = f"projectPython {python} cannot be used ({err}):{own}"
            return None, environment_roots()

    def project(self, folder: str | None, added: tuple[str, ...]):
        """jedi's project of a workspace folder with ``added`` on its path; with no folder (a
        document outside them), one that puts no folder around the document on the path."""
        import jedi

        key = (folder, added)
        if key not in self.projects:
            self.projects[key] = (
                jedi.Project(os.getcwd(), smart_sys_path=False)
                if folder is None
                else jedi.Project(folder, added_sys_path=list(added))
            )
        return self.projects[key]


def not_an_interpreter(python: str) -> str | None:
    """Why ``python`` is not run as the project's interpreter, if it is not: it must resolve to an
    executable regular file named like one (python, python3, python3.12; ``.exe`` on Windows).
    jedi runs it to learn its paths: a workspace that named ``/bin/sh`` or a script of its own
    would run it (issue 62; the server also refuses a value a workspace's settings file sets)."""
    real = os.path.realpath(python)
    if not os.path.isfile(real) or not os.access(real, os.X_OK):
        return "not an executable file"
    name = os.path.basename(real)
    if not re.fullmatch(r"python[0-9.]*(\.exe)?", name, re.IGNORECASE if os.name == "nt" else 0):
        return f"{name} is not named like a Python interpreter"
    return None


def environment_roots() -> tuple[str, ...]:
    """The folders this interpreter imports from (the standard library, site-packages), never
    the working directory: jedi completes from them as the server's environment."""
    roots = {os.path.realpath(p) for p in sys.path if p and os.path.isabs(p) and os.path.isdir(p)}
    return tuple(sorted(roots - {os.path.realpath(os.getcwd())}))


def bound_parsed_modules(limit: int) -> None:
    """Drop parso's least recently used parsed modules down to ``limit``."""
    from parso.cache import parser_cache

    items = [(item.last_used, grammar, path) for grammar, cached in parser_cache.items() for path, item in cached.items()]
    if len(items) <= limit:
        return
    items.sort()
    for _, grammar, path in items[: len(items) - limit]:
        parser_cache[grammar].pop(path, None)


def parsed_modules() -> int:
    from parso.cache import parser_cache

    return sum(len(cached) for cached in parser_cache.values())


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
        if not _guard or not os.path.lexists(path):
            return read(self)
        if _guard[0](path):
            return b""
        # Allowed (the server's files.readable: its real path, as named and as its target): read
        # as the one read of a user file does, a regular file only and never waited on (a FIFO
        # or a link to /dev/stdin reads as an empty module), and none past jedi_bounds'
        # MAX_MODULE_BYTES (a generated 12 MB module cost jedi gigabytes).
        data = files.read_regular(os.path.realpath(path), jedi_bounds.MAX_MODULE_BYTES)
        return b"" if data is None else data

    guarded.difill_guarded = True  # type: ignore[attr-defined]
    parso.file_io.FileIO.read = guarded  # type: ignore[method-assign]


def serve(stdin: BinaryIO, stdout: BinaryIO) -> None:
    """The process's loop: one request at a time, until the server closes the pipe."""

    def send(message: Any) -> None:
        write_frame(stdout, message)

    def denied(path: str) -> bool:
        answer = asked.get(path)
        if answer is None:
            send(("read?", path))
            reply = read_frame(stdin)
            if reply is None:
                raise SystemExit(0)  # the server has gone
            answer = asked[path] = reply[1]  # ("denied", bool)
        return answer

    asked: dict[str, bool] = {}  # this request's answers (the policy may change between requests)
    worker = Worker(send)
    guard_reads(denied)
    jedi_bounds.bound_known_content()
    jedi_bounds.no_buildout_search()
    while (message := read_frame(stdin)) is not None:
        asked.clear()
        names, error = None, None
        try:
            if message[0] == "warm":
                worker.complete(WARM_UP, 2, 3, None, None, (), message[1])
            else:
                names = worker.complete(*message[1:])
        except Exception as err:  # noqa: BLE001 - jedi on hostile code: the server keeps its rules
            error = f"{type(err).__name__}: {err}"[:500]
        leaving = resident_mb() > MAX_RSS_MB  # the server starts a new process for its next request
        send(("done", names, error, worker.warning, parsed_modules(), leaving))
        worker.warning = None
        if leaving:
            return


def resident_mb() -> float:
    """This process's resident memory now (Linux; 0 elsewhere).  Not ``ru_maxrss``: across the
    server's fork and exec it starts at the server's own peak."""
    try:
        with open("/proc/self/status") as status:
            for line in status:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


if __name__ == "__main__":
    out = sys.stdout.buffer
    sys.stdout = sys.stderr  # frames alone on the pipe, whatever prints
    if len(sys.argv) > 1:  # the server's folder for jedi's parse cache (module docstring)
        import jedi

        jedi.settings.cache_directory = sys.argv[1]
    serve(sys.stdin.buffer, out)
