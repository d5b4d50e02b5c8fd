"""``difill serve --tcp``: one editor per server, and nothing else gets in.

pygls' TCP server handed its one protocol object to every new connection, so the newest
connection took the session over: its settings (a ``remote`` of its choosing) and the victim's
code and key followed. A web page could do the same with a no-cors ``fetch``, whose bytes are an
HTTP request. Here:

* the first connection that speaks LSP (its first bytes are a ``Content-...`` header) is the
  client, for the server's whole life; when it disconnects, the server shuts down, as it does
  when stdio closes;
* any other connection meanwhile is closed at once, and one whose first bytes are not an LSP
  header (an HTTP request, a port scanner) is closed without a reply and does not become the client;
* listening on anything but loopback needs ``--allow-remote`` (see ``check_host``).
"""

from __future__ import annotations

import asyncio
import logging
import threading
from typing import TYPE_CHECKING, Any

from pygls.io_ import run_async

from difill.server.loopback import is_loopback

if TYPE_CHECKING:  # the pygls server type: server.py imports this module
    from pygls.lsp.server import LanguageServer

log = logging.getLogger("difill.server")

LSP_HEADER = b"content-"  # every LSP message starts with Content-Length or Content-Type
FIRST_BYTES_TIMEOUT_S = 10.0


def check_host(host: str, allow_remote: bool) -> None:
    """Refuse a non-loopback address unless the user said so: the LSP stream has no authentication."""
    if not is_loopback(host) and not allow_remote:
        raise SystemExit(
            f"difill: refusing to listen on {host}: the language server protocol has no authentication, so "
            "anyone who can reach the port could read your code and change the server's settings. Use "
            "127.0.0.1 (an SSH tunnel reaches it from elsewhere), or pass --allow-remote if this network is yours."
        )


class _Prefixed:
    """A StreamReader whose first bytes were already read (to check them) and are served again."""

    def __init__(self, head: bytes, reader: asyncio.StreamReader) -> None:
        self._head = head
        self._reader = reader

    async def readline(self) -> bytes:
        if not self._head:
            return await self._reader.readline()
        head, self._head = self._head, b""
        if b"\n" in head:
            line, _, rest = head.partition(b"\n")
            self._head = rest
            return line + b"\n"
        return head + await self._reader.readline()

    async def readexactly(self, n: int) -> bytes:
        head, self._head = self._head[:n], self._head[n:]
        return head + (await self._reader.readexactly(n - len(head)) if n > len(head) else b"")


def serve_one_tcp_client(server: LanguageServer, host: str, port: int) -> None:
    """Run ``server`` (a pygls LanguageServer) for the first LSP client that connects to host:port."""
    stop_event = threading.Event()
    server._stop_event = stop_event
    client: list[Any] = []  # the peer that owns the session, once there is one
    finished = asyncio.Event()  # the client's session ended

    async def connection(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        peer = writer.get_extra_info("peername")
        if client:
            log.warning("refused a TCP connection from %s: this server already has its client", peer)
            writer.close()
            return
        try:
            head = await asyncio.wait_for(reader.readexactly(len(LSP_HEADER)), FIRST_BYTES_TIMEOUT_S)
        except (TimeoutError, asyncio.IncompleteReadError, ConnectionError):
            writer.close()
            return
        if head.lower() != LSP_HEADER or client:
            log.warning("closed a TCP connection from %s without a reply: %s", peer,
                        "another client came first" if client else "it does not speak LSP")  # fmt: skip
            writer.close()
            return
        client.append(peer)
        log.info("TCP client %s connected", peer)
        server.protocol.set_writer(writer)
        await run_async(
            stop_event=stop_event,
            reader=_Prefixed(head, reader),
            protocol=server.protocol,
            logger=logging.getLogger("pygls.server"),
            error_handler=server.report_server_error,
        )
        log.info("the TCP client disconnected: shutting down")
        finished.set()

    async def main() -> None:
        listener = await asyncio.start_server(connection, host, port)  # serving from here on
        await finished.wait()
        listener.close()
        server.shutdown()

    asyncio.run(main())
