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
import os
import sys
from typing import TYPE_CHECKING, Any

from lsprotocol import types

from difill.engine import secrets

if TYPE_CHECKING:  # the pygls server type: server.py imports this module
    from pygls.lsp.server import LanguageServer

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

    def __init__(self, server: LanguageServer) -> None:
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


def _add(handler: logging.Handler, level: int, debug: bool) -> None:
    """``handler`` on difill's and pygls' loggers, with the format and filters every output has."""
    handler.setLevel(level)
    handler.setFormatter(logging.Formatter(FORMAT))
    handler.addFilter(QuietRefusals())
    if not debug:
        handler.addFilter(RedactArguments())
    handler.addFilter(ScrubSecrets())
    logging.getLogger(DIFILL).addHandler(handler)
    logging.getLogger(PYGLS).addHandler(handler)


# The file of the `logFile` setting (its handler, and the level and --log-file it sits beside).
_SETTING_FILE: dict[str, Any] = {"handler": None, "level": logging.INFO, "cli": None}


def use_log_file(path: str | None) -> str | None:
    """Log to ``path`` too (the ``logFile`` setting; None: stop), beside stderr and ``--log-file``;
    returns why it cannot be opened, or None.  The same file as ``--log-file`` is not opened twice."""
    old: logging.Handler | None = _SETTING_FILE["handler"]
    wanted = os.path.abspath(os.path.expanduser(path)) if path else None
    if old is not None and getattr(old, "baseFilename", None) == wanted:
        return None
    if old is not None:
        for name in (DIFILL, PYGLS):
            logging.getLogger(name).removeHandler(old)
        old.close()
        _SETTING_FILE["handler"] = None
    if wanted is None or wanted == _SETTING_FILE["cli"]:
        return None
    try:
        os.makedirs(os.path.dirname(wanted), exist_ok=True)
        handler = logging.FileHandler(wanted, encoding="utf-8")
    except OSError as err:
        return f"cannot write the log file {wanted}: {err.strerror or err}"
    level = _SETTING_FILE["level"]
    _add(handler, level, level <= logging.DEBUG)
    _SETTING_FILE["handler"] = handler
    return None


def configure_logging(
    server: LanguageServer, level: str = "INFO", log_file: str | None = None
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

    stderr = logging.StreamHandler(sys.stderr)
    stderr.setLevel(logging.WARNING)
    _add(stderr, logging.WARNING, debug)
    if log_file:
        _add(logging.FileHandler(log_file, encoding="utf-8"), numeric, debug)
    _SETTING_FILE.update(level=numeric, cli=os.path.abspath(log_file) if log_file else None)

    to_client = LogMessageHandler(server)
    to_client.setLevel(numeric)
    to_client.setFormatter(logging.Formatter("%(message)s"))
    to_client.addFilter(ScrubSecrets())
    difill_logger.addHandler(to_client)  # pygls' own records never go to the client
    return to_client
