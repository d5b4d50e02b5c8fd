"""The lab's one LSP client of `difill serve`: started over stdio as an editor starts it, ready when
the server says so (``difill/status``), stopped as an editor stops it.  The benchmark
(bench_server.py, bench_typing.py), the fresh-cursor eval and the next-edit eval each add what
they send; starting and stopping the server is written here once."""

from __future__ import annotations

import asyncio
import sys

from lsprotocol import types
from pygls.lsp.client import LanguageClient

# What an editor shows or answers that no lab client reads: handled with nothing, so that the
# server's notifications and requests never wait on a missing handler.
UNREAD = (types.WINDOW_LOG_MESSAGE, types.WINDOW_WORK_DONE_PROGRESS_CREATE)


def serve_args(model_dir: str | None = None, engine: str | None = None) -> list[str]:
    """`difill serve`'s arguments: ``--model`` (None: the shipped model), ``--engine``."""
    return ["-m", "difill", "serve"] + (["--model", model_dir] if model_dir else []) + (
        ["--engine", engine] if engine else []
    )


class ServeClient:
    """`difill serve` over stdio; ``ready`` is set once the server reports its model ready."""

    def __init__(self, name: str, unread: tuple[str, ...] = UNREAD) -> None:
        self.client = LanguageClient(name, "0")
        self.ready = asyncio.Event()

        @self.client.feature("difill/status")
        def on_status(params) -> None:
            state = params.get("state") if isinstance(params, dict) else getattr(params, "state", None)
            if state == "ready":
                self.ready.set()

        for method in unread:
            self.client.feature(method)(lambda params: None)

    async def start_serve(
        self, args: list[str], params: types.InitializeParams, python: str = sys.executable
    ) -> int:
        """Start ``python args`` (serve_args), initialize it with ``params``; its pid."""
        await self.client.start_io(python, *args)
        await self.client.initialize_async(params)
        self.client.initialized(types.InitializedParams())
        return self.client._server.pid

    async def stop(self) -> None:
        await self.client.shutdown_async(None)
        self.client.exit(None)
        await asyncio.sleep(0.2)
        await self.client.stop()
