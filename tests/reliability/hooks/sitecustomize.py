"""Test hooks loaded into a ``difill serve`` / ``serve-http`` subprocess (its PYTHONPATH holds this
folder, so Python imports this module at start-up).  Nothing happens unless a DIFILL_HOOK_*
variable asks for it; events go to DIFILL_HOOK_LOG as JSON lines.

* DIFILL_HOOK_INSPECT=1: a ``difillTest/inspect`` request answering a document's text as the
  server holds it, and the server's tasks, threads, jobs and memory.
* DIFILL_HOOK_FAULT: faults injected into the engine's decoder after the warm-up fill,
  ``error:N`` (the N-th fill raises RuntimeError at its second denoising step), ``oom`` (every pass
  over more than one candidate raises torch.OutOfMemoryError) or ``oom-always`` (every pass does).
* DIFILL_HOOK_AUDIT=1: an audit hook recording network use (connect, bind, DNS lookups; the
  server then runs asyncio's own event loop instead of uvloop, whose sockets are not audited),
  unpickling (``pickle.find_class``, which every pickle that names a class or function raises)
  and, with DIFILL_HOOK_WATCH=DIR, every file under DIR that Python opens.
"""

from __future__ import annotations

import json
import os
import sys
import threading

LOG = os.environ.get("DIFILL_HOOK_LOG")
_lock = threading.Lock()


def record(event: str, **fields) -> None:
    if not LOG:
        return
    line = json.dumps({"event": event, **fields}, default=repr)
    with _lock, open(LOG, "a", encoding="utf-8") as out:
        out.write(line + "\n")


# ---------------------------------------------------------------------------- audit

AUDITED = {
    "socket.connect",
    "socket.bind",
    "socket.getaddrinfo",
    "socket.gethostbyname",
    "pickle.find_class",
    "open",
}
WATCH = os.environ.get("DIFILL_HOOK_WATCH")


def _audit(event: str, args: tuple) -> None:
    if event not in AUDITED:  # called for every audited event in the process: stay cheap
        return
    if event == "open":
        path = os.fsdecode(args[0]) if isinstance(args[0], str | bytes | os.PathLike) else ""
        if WATCH and path.startswith(WATCH):
            record("open", path=path)
    elif event == "pickle.find_class":
        record("pickle", module=args[0], name=args[1])
    elif event in ("socket.connect", "socket.bind"):
        record(event.split(".")[1], address=args[1])
    else:
        record("dns", host=args[0])


# ---------------------------------------------------------------------------- inspection


def _install_inspect() -> None:
    import asyncio

    import difill.server.server as server_module

    original = server_module.create_server

    def create_server(*args, **kwargs):
        server = original(*args, **kwargs)

        @server.feature("difillTest/inspect")
        def inspect(ls, params) -> dict:
            uri = getattr(params, "uri", None)
            document = ls.documents.get(uri) if uri else None
            return {
                "text": document.text if document else None,
                "version": document.version if document else None,
                "tasks": len(asyncio.all_tasks()),
                "spawned": len(ls._tasks),
                "commandTasks": len(ls.command_tasks),
                "jobs": len(ls.suggestions.jobs._by_uri) + len(ls.edits.jobs._by_uri),
                "requestFutures": len(ls.protocol._request_futures),  # requests in flight, both ways
                "documents": len(ls.documents.snapshot()),
                "threads": threading.active_count(),
                "threadNames": sorted(t.name for t in threading.enumerate()),
                "rssKb": _rss_kb(),
            }

        return server

    server_module.create_server = create_server


def _rss_kb() -> int:
    with open("/proc/self/status") as status:
        return next(int(line.split()[1]) for line in status if line.startswith("VmRSS:"))


# ---------------------------------------------------------------------------- faults


def _install_faults(spec: str) -> None:
    import difill.server.engine_host as host

    original_warm_up = host._warm_up

    def warm_up_then_inject(engine, superseded) -> None:
        original_warm_up(engine, superseded)  # the warm-up fill runs untouched: the model loads as usual
        _inject(engine, spec)

    host._warm_up = warm_up_then_inject


def _inject(engine, spec: str) -> None:
    import torch

    from difill.engine.decoder import CanvasDecoder

    mode, _, arg = spec.partition(":")
    failing_fill = int(arg) if arg else 0
    original_decoder = engine._decoder
    fills = [0]

    def decoder(cache, request, config):
        fills[0] += 1
        return FaultyDecoder(original_decoder(cache, request, config), fills[0])

    class FaultyDecoder:
        def __init__(self, inner, fill: int) -> None:
            self.inner, self.fill, self.passes = inner, fill, 0

        def __getattr__(self, name):
            return getattr(self.inner, name)

        # Its forward is this class's hidden: open_logits (NumPy) calls pass_logits on the device,
        # which must be CanvasDecoder's, not the inner decoder's (that one calls its own hidden).
        open_logits = CanvasDecoder.open_logits
        pass_logits = CanvasDecoder.pass_logits

        def hidden(self, canvas, soft):
            self.passes += 1
            batch, length = canvas.shape
            if self.passes == 1:
                record("fill", fill=self.fill, batch=batch, length=length)
            if mode == "error" and self.fill == failing_fill and self.passes == 2:
                record("fault", kind="error", fill=self.fill, step=self.passes)
                raise RuntimeError("injected fault in the middle of denoising")
            if (mode == "oom" and batch > 1) or mode == "oom-always":
                record("fault", kind="oom", fill=self.fill, batch=batch, length=length)
                raise torch.OutOfMemoryError(f"injected: no memory for a {batch}x{length} canvas")
            return self.inner.hidden(canvas, soft)

    engine._decoder = decoder


if os.environ.get("DIFILL_HOOK_AUDIT"):
    sys.addaudithook(_audit)
    # uvloop connects and resolves names in libuv, where no audit event is raised: keep asyncio's
    # own loop, whose sockets are Python's, so the remote backend's connections are seen too.
    import difill.server.server

    difill.server.server._install_uvloop = lambda: None
if os.environ.get("DIFILL_HOOK_INSPECT"):
    _install_inspect()
if os.environ.get("DIFILL_HOOK_FAULT"):
    _install_faults(os.environ["DIFILL_HOOK_FAULT"])
