"""Long work (model loading, the workspace index) as server-initiated ``$/progress``: begin, report..., end."""

from __future__ import annotations

import asyncio
import logging
import uuid
from typing import TYPE_CHECKING

from lsprotocol import types

from difill.server.engine_host import LoadProgress

if TYPE_CHECKING:  # the pygls server type (work_done_progress): server.py imports this module
    from pygls.lsp.server import LanguageServer

PROGRESS_CREATE_TIMEOUT_S = 5.0

log = logging.getLogger("difill.server")


class ProgressReporter(LoadProgress):
    """Model loading as server-initiated ``$/progress`` (begin, report..., end)."""

    def __init__(self, server: LanguageServer, token_prefix: str = "difill-load") -> None:
        self.server = server
        self.token_prefix = token_prefix  # one per kind of work, so that a client can tell them apart
        self.token: str | None = None

    async def begin(self, title: str, message: str) -> None:
        token = f"{self.token_prefix}-{uuid.uuid4().hex[:8]}"
        progress = self.server.work_done_progress
        try:
            await asyncio.wait_for(progress.create_async(token), PROGRESS_CREATE_TIMEOUT_S)
        except Exception as err:  # the client refused or never answered: load without progress
            log.info("no progress reporting: %s", type(err).__name__)
            return
        self.token = token
        progress.begin(token, types.WorkDoneProgressBegin(title=title, message=message, percentage=0))

    def report(self, message: str, percentage: int) -> None:
        if self.token:
            value = types.WorkDoneProgressReport(message=message, percentage=percentage)
            self.server.work_done_progress.report(self.token, value)

    def end(self, message: str) -> None:
        if self.token:
            self.server.work_done_progress.end(self.token, types.WorkDoneProgressEnd(message=message))
            self.token = None
