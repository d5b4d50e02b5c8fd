"""Writing LSP messages to the client: pygls' stdout writer, quiet once the client has gone, and
silent for the one answer that transport/early_answer.py already sent."""

from __future__ import annotations

import json
import logging
from typing import TYPE_CHECKING

from pygls.io_ import StdoutWriter

if TYPE_CHECKING:
    from difill.server.transport.early_answer import EarlyAnswer

log = logging.getLogger("difill.server")


class ClientWriter(StdoutWriter):
    """pygls' stdout writer, quiet once the client has gone, and silent for an early answer.

    An editor that quits closes the server's stdout while work may still be answering (a status,
    a late response, the log forwarded as window/logMessage).  pygls logs every such write as a
    BrokenPipeError traceback and raises it into the handler that wrote: each quit left several
    tracebacks in the server log.  After the first failed write the client cannot hear anything
    more, so later writes are dropped and the loss is logged once, as a fact, not as an error.

    ``early``: the `initialize` answer already sent (transport/early_answer.py).  pygls answers
    the same request again when it reads it; that answer is not sent, and one that differs from
    the early one is logged as the error it is (tests/server/test_early_answer.py keeps them equal).
    """

    def __init__(self, stdout, early: EarlyAnswer | None = None) -> None:
        super().__init__(stdout)
        self.client_gone = False
        self.early = early

    def write(self, data: bytes) -> None:
        if self.client_gone or self._answered_early(data):
            return
        try:
            super().write(data)
        except (BrokenPipeError, ConnectionResetError, ValueError):  # ValueError: stdout closed
            self.client_gone = True
            log.info("the client closed its end of the connection; nothing more is sent to it")

    def _answered_early(self, data: bytes) -> bool:
        """Whether ``data`` is pygls' answer to the request answered early (checked until it comes)."""
        if self.early is None or self.early.request_id is None:
            return False
        try:
            message = json.loads(data[data.index(b"\r\n\r\n") + 4 :])
        except ValueError:
            return False
        if "method" in message or message.get("id") != self.early.request_id:
            return False
        if message.get("result") != self.early.result:
            log.error(
                "initialize was answered early with %s; pygls' answer is %s", self.early.result, message
            )
        self.early = None
        return True
