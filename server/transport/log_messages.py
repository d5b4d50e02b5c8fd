"""Logging: ``window/logMessage`` to the editor, ``--log-file``, and stderr for warnings.

Document contents never reach a log at the default level.  difill's own messages hold no
document text.  pygls logs every message it sends or receives at INFO, document text included,
so its loggers only pass warnings unless the level is DEBUG, and the arguments of its records
(request parameters, message bodies) are redacted unless the level is DEBUG.  Every record, at
every level and on every handler (stderr, ``--log-file``, ``window/logMessage``), passes
``secrets.scrub`` (engine/secrets.py): no API key, URL password or URL query string is written.
"""

from __future__ import annotations

import asyncio
import logging
import sys
from typing import TYPE_CHECKING, Any

from lsprotocol import types

from difill.engine import secrets

if TYPE_CHECKING:
    from difill.server.server import DifillServer

DIFILL = "difill"
PYGLS = "pygls"
FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"
SHORT_ARG = 80  # pygls arguments up to this long (method names, ids) are kept


class RedactArguments(logging.Filter):
    """Replace the long or structured arguments of pygls' records with a placeholder."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.name.startswith(PYGLS) and record.args:
            args = record.args if isinstance(record.args, tuple) else (record.args,)
            record.args = tuple(_redacted(a) for a in args)
        return True


class QuietRefusals(logging.Filter):
    """pygls logs every error answer with a traceback; a refusal difill means to send (a stale
    version, bad parameters, a cancelled request) is normal operation, not a server error."""

    EXPECTED = {-32602, -32800, -32801, -32803}  # InvalidParams, Cancelled, ContentModified, RequestFailed

    def filter(self, record: logging.LogRecord) -> bool:
        error = record.exc_info[1] if record.exc_info else None
        return not (record.name.startswith(PYGLS) and getattr(error, "code", None) in self.EXPECTED)


class ScrubSecrets(logging.Filter):
    """The record's message and traceback without secrets (engine/secrets.py); added last, so it
    sees the message as it will be written."""

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            message = record.getMessage()
        except Exception:  # noqa: BLE001 - a record whose arguments do not format: logging reports it
            return True
        record.msg, record.args = secrets.scrub(message), None
        if record.exc_info and not record.exc_text:
            record.exc_text = logging.Formatter().formatException(record.exc_info)
        if record.exc_text:
            record.exc_text = secrets.scrub(record.exc_text)
        return True


def _redacted(value: Any) -> Any:
    if isinstance(value, int | float) or (
        isinstance(value, str) and len(value) <= SHORT_ARG and "\n" not in value
    ):
        return value
    return f"<{type(value).__name__} redacted>"


class LogMessageHandler(logging.Handler):
    """Sends records as ``window/logMessage``, from any thread, once the client is connected."""

    LEVELS = {
        logging.ERROR: types.MessageType.Error,
        logging.WARNING: types.MessageType.Warning,
        logging.INFO: types.MessageType.Info,
    }

    def __init__(self, server: DifillServer) -> None:
        super().__init__()
        self.server = server
        self.loop: asyncio.AbstractEventLoop | None = None  # set when the server's loop runs

    def emit(self, record: logging.LogRecord) -> None:
        loop = self.loop
        if loop is None or loop.is_closed():
            return
        try:
            message = self.format(record)
        except Exception:
            return
        kind = next((t for level, t in self.LEVELS.items() if record.levelno >= level), types.MessageType.Log)
        params = types.LogMessageParams(type=kind, message=message)
        try:
            if _on_loop(loop):
                self.server.window_log_message(params)
            else:
                loop.call_soon_threadsafe(self.server.window_log_message, params)
        except RuntimeError:  # the loop closed meanwhile (shutting down)
            pass


def _on_loop(loop: asyncio.AbstractEventLoop) -> bool:
    try:
        return asyncio.get_running_loop() is loop
    except RuntimeError:
        return False


def configure_logging(
    server: DifillServer, level: str = "INFO", log_file: str | None = None
) -> LogMessageHandler:
    """Wire difill's and pygls' loggers; returns the logMessage handler (its loop is set later)."""
    numeric = logging.getLevelName(level.upper()) if isinstance(level, str) else level
    if not isinstance(numeric, int):
        numeric = logging.INFO
    debug = numeric <= logging.DEBUG
    difill_logger, pygls_logger = logging.getLogger(DIFILL), logging.getLogger(PYGLS)
    difill_logger.setLevel(numeric)
    pygls_logger.setLevel(logging.DEBUG if debug else logging.WARNING)
    for logger in (difill_logger, pygls_logger):
        logger.propagate = False
        for old in list(logger.handlers):
            logger.removeHandler(old)

    handlers: list[logging.Handler] = []
    stderr = logging.StreamHandler(sys.stderr)
    stderr.setLevel(logging.WARNING)
    handlers.append(stderr)
    if log_file:
        file_handler = logging.FileHandler(log_file, encoding="utf-8")
        file_handler.setLevel(numeric)
        handlers.append(file_handler)
    for handler in handlers:
        handler.setFormatter(logging.Formatter(FORMAT))
        handler.addFilter(QuietRefusals())
        if not debug:
            handler.addFilter(RedactArguments())
        handler.addFilter(ScrubSecrets())
        difill_logger.addHandler(handler)
        pygls_logger.addHandler(handler)

    to_client = LogMessageHandler(server)
    to_client.setLevel(numeric)
    to_client.setFormatter(logging.Formatter("%(message)s"))
    to_client.addFilter(ScrubSecrets())
    difill_logger.addHandler(to_client)  # pygls' own records never go to the client
    return to_client
