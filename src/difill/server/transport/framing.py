"""Reading LSP messages from stdin so that one badly framed message costs only itself.

pygls' reader loop (``pygls.io_.run_async``) takes a line as the header only when it is exactly
``Content-Length: N\\r\\n``, and then reads exactly N bytes as the body.  One frame that a client
gets wrong (a Content-Length that is too short or too long, a lower-case header, LF line ends, a
header cut off) used to desynchronise it for good: the next header was read glued to the previous
frame's leftovers, so it never matched, and every later message was lost while the server looked
alive.  A Content-Length of terabytes made it allocate the body up front and die of MemoryError.
``tests/reliability/test_malformed_jsonrpc.py`` sends each of these.

``ResyncingReader`` replaces pygls' stdin reader under that same loop (pygls still parses and
dispatches every message):

* a header is found anywhere in a line, in any case, with or without the CR; a second one before
  the blank line replaces the first (whose block was cut off), and pygls gets the header block in
  exactly the form it expects;
* a body that holds a header line was too long: valid JSON never holds one (a raw line break is
  not allowed inside a JSON string, and ``Content-Length:`` is not JSON outside one), so the body
  is cut there and the rest is read again as the next message.  The body is read as it arrives,
  so a too-long Content-Length costs no wait beyond the next message's header;
* a body longer than ``MAX_MESSAGE_BYTES`` is not kept: pygls gets a body that fails to parse
  (answered with a ParseError), and the bytes after the header are skipped like any unframed
  garbage, up to the next header.  Lines are read in bounded pieces, so that costs no memory.
"""

from __future__ import annotations

import asyncio
import logging
import re
from concurrent.futures import ThreadPoolExecutor
from typing import BinaryIO

from pygls.io_ import StdoutWriter

log = logging.getLogger("difill.server")

HEADER = re.compile(rb"content-length[ \t]*:[ \t]*(\d+)[ \t]*\r?\n", re.IGNORECASE)
MAX_MESSAGE_BYTES = 64 * 2**20  # a 64 MiB document is far past what an editor syncs (VS Code: 50 MB)
LINE_LIMIT = 64 * 1024  # a longer line is read in pieces of this size
TAIL = 256  # bytes kept from the end of a long line: enough to hold a header glued to it
# Given to pygls in place of a body it must not see: it fails to parse, so pygls reports it (and
# difill answers ParseError).  An empty body would make pygls stop reading altogether.
UNREADABLE = b"\x00"


class ResyncingReader:
    """The ``readline`` / ``readexactly`` pair pygls' loop reads from, over a binary stdin.

    ``readline`` hands pygls one clean header block per message (its Content-Length line, then a
    blank line); anything else between messages is skipped here.
    """

    def __init__(self, stdin: BinaryIO, executor: ThreadPoolExecutor | None = None) -> None:
        self.stdin = stdin
        self.executor = executor
        self._pending = b""  # bytes read too early (part of the next message), read again first
        self._blank_next = False  # the header was handed over: the blank line that ends it is next

    async def readline(self) -> bytes:
        if self._blank_next:
            self._blank_next = False
            return b"\r\n"
        length = await asyncio.get_running_loop().run_in_executor(self.executor, self._header)
        if length is None:
            return b""  # end of input
        self._blank_next = True
        return b"Content-Length: %d\r\n" % length

    async def readexactly(self, n: int) -> bytes:
        return await asyncio.get_running_loop().run_in_executor(self.executor, self._body, n)

    # ------------------------------------------------------------------ blocking, on the executor

    def _header(self) -> int | None:
        """The Content-Length of the next header block (a later one replaces an earlier one whose
        block never ended); None at the end of the input."""
        length = None
        while True:
            line = self._line()
            if not line:
                return None
            match = HEADER.search(line)
            if match:
                length = int(match.group(1))
            elif not line.strip() and length:
                return length
            # Other headers (Content-Type), garbage, and zero-length frames are skipped.

    def _line(self) -> bytes:
        if self._pending:
            end = self._pending.find(b"\n") + 1
            if end:
                line, self._pending = self._pending[:end], self._pending[end:]
                return line
            head, self._pending = self._pending, b""
        else:
            head = b""
        line = head + self.stdin.readline(LINE_LIMIT)
        while len(line) >= LINE_LIMIT and not line.endswith(b"\n"):
            line = line[-TAIL:] + self.stdin.readline(LINE_LIMIT)  # only its end can hold a header
        return line

    def _body(self, n: int) -> bytes:
        if n > MAX_MESSAGE_BYTES:
            log.warning("a message of %d bytes was skipped (the limit is %d)", n, MAX_MESSAGE_BYTES)
            return UNREADABLE
        body = bytearray(self._pending[:n])
        self._pending = self._pending[n:]
        read_some = getattr(self.stdin, "read1", self.stdin.read)
        searched = 0
        while True:
            match = HEADER.search(body, searched)
            if match is not None:  # the Content-Length was too long: the next message starts here
                self._pending = bytes(body[match.start() :]) + self._pending
                log.warning("a message's Content-Length was wrong; reading on from the next header")
                return bytes(body[: match.start()]) or UNREADABLE
            if len(body) >= n:
                return bytes(body)
            searched = max(0, len(body) - TAIL)
            chunk = read_some(n - len(body))
            if not chunk:  # end of input
                return bytes(body)
            body += chunk


class ClientWriter(StdoutWriter):
    """pygls' stdout writer, quiet once the client has gone.

    An editor that quits closes the server's stdout while work may still be answering (a status,
    a late response, the log forwarded as window/logMessage).  pygls logs every such write as a
    BrokenPipeError traceback and raises it into the handler that wrote: each quit left several
    tracebacks in the server log.  After the first failed write the client cannot hear anything
    more, so later writes are dropped and the loss is logged once, as a fact, not as an error.
    """

    def __init__(self, stdout) -> None:
        super().__init__(stdout)
        self.client_gone = False

    def write(self, data: bytes) -> None:
        if self.client_gone:
            return
        try:
            super().write(data)
        except (BrokenPipeError, ConnectionResetError, ValueError):  # ValueError: stdout closed
            self.client_gone = True
            log.info("the client closed its end of the connection; nothing more is sent to it")
