"""jedi's process is bounded while it works, not only after an answer (issue 62 row 4: a
repository with ``buildout.cfg`` and ``bin/x -> /dev/zero`` grew it 250 MB/s for a minute at
every ``os.``; a generated 12 MB module cost 1.3-2 GB and a core for a minute at every
``tables.``).

* The server's side (``wait_for_frame``) watches the process while a request waits: past the
  wall clock or ``MAX_WORKING_RSS_MB`` resident it is killed, and each kind of kill is logged
  once (``log_kill_once``), however often a repository causes it.
* The process's side reads no file it cannot parse in bounds: a module past
  ``MAX_MODULE_BYTES``, a device or a FIFO reads as empty (``not_parsed``, asked by
  jedi_process.guard_reads; ``bound_known_content`` for the sources jedi's environment
  subprocess read), and jedi's buildout search, which opens files outside that guard, is off
  (``no_buildout_search``).
"""

from __future__ import annotations

import logging
import os
import select
import subprocess
import time
from stat import S_ISREG

log = logging.getLogger("difill.server")

MAX_MODULE_BYTES = 4 * 1024 * 1024  # a bigger module is parsed as empty (``not_parsed``)
# While it works the process is killed past this (jedi_process.MAX_RSS_MB is its bound between
# answers: one completion may pass that and answer); its memory is read every WATCH_S.
MAX_WORKING_RSS_MB = 1536
WATCH_S = 0.05
_killed_for: set[str] = set()  # the kinds of kill logged (each once)


def wait_for_frame(proc: subprocess.Popen, deadline: float, timeout_s: float) -> str | None:
    """Wait until the process writes, watching it meanwhile: why it must be killed (past the
    wall clock, or resident past ``MAX_WORKING_RSS_MB``), or None once a frame is there.
    Bounded while it works, not only after an answer (issue 62 row 4: a read of
    ``/dev/zero`` grew it 250 MB/s for a minute).  Its resident memory is watched from here,
    not capped with RLIMIT_AS there: jedi's environment subprocess would inherit the cap,
    and it imports compiled modules (torch maps gigabytes of address space it never uses)."""
    while True:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return f"no answer within {timeout_s:.0f} s: jedi's process was stopped"
        if select.select([proc.stdout], [], [], min(remaining, WATCH_S))[0]:
            return None
        if process_resident_mb(proc.pid) > MAX_WORKING_RSS_MB:
            return f"jedi's process passed {MAX_WORKING_RSS_MB} MB while it worked: it was stopped"


def log_kill_once(why: str) -> None:
    """A kill's reason at warning level the first time, then at debug level."""
    kind = why.split(":", 1)[0]
    log.log(logging.DEBUG if kind in _killed_for else logging.WARNING, "%s", why)
    _killed_for.add(kind)


def process_resident_mb(pid: int) -> float:
    """A process's resident memory now, from ``/proc/<pid>/statm`` (Linux; 0 elsewhere or gone)."""
    try:
        with open(f"/proc/{pid}/statm") as statm:
            return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / (1024 * 1024)
    except (OSError, ValueError, IndexError):
        return 0.0


def not_parsed(path: str) -> bool:
    """A file read as an empty module: one past ``MAX_MODULE_BYTES`` (a generated 12 MB module
    cost 1.3-2 GB and a core for a minute at every ``tables.``), or no regular file (a device,
    a FIFO: a read that never ends).  A missing one is read, and fails, as jedi expects."""
    try:
        stat = os.stat(path)
    except OSError:
        return False
    return not S_ISREG(stat.st_mode) or stat.st_size > MAX_MODULE_BYTES


def bound_known_content() -> None:
    """A module whose source jedi's environment subprocess read (every ``import x`` it finds
    there: jedi_names.py) comes back as ``KnownContentFileIO``, past jedi_process.guard_reads:
    past ``MAX_MODULE_BYTES`` it is parsed as an empty module too.  Wrapped once per process."""
    import parso.file_io

    read = parso.file_io.KnownContentFileIO.read
    if getattr(read, "difill_bounded", False):
        return

    def bounded(self) -> bytes | str:
        content = read(self)
        return content[:0] if len(content) > MAX_MODULE_BYTES else content

    bounded.difill_bounded = True  # type: ignore[attr-defined]
    parso.file_io.KnownContentFileIO.read = bounded  # type: ignore[method-assign]


def no_buildout_search() -> None:
    """Turn off jedi's buildout search for every project.  With a ``buildout.cfg`` above the
    document, jedi opens every file of its ``bin/`` with ``open`` and reads a first line, outside
    parso's ``FileIO`` and so outside ``guard_reads`` (a ``bin/x -> /dev/zero`` grew the
    process 250 MB/s, issue 62 row 4).  Turned off rather than routed through the guard: what it
    finds is the ``sys.path`` lines of zc.buildout's generated scripts, a tool few projects use
    now, whose eggs ``projectPython`` names as an environment; and a search that reads every
    executable a repository ships is a read of the repository's choosing, whatever guards it."""
    import jedi.api.project

    jedi.api.project.discover_buildout_paths = lambda inference_state, script_path: set()
