"""`initialize` answered before pygls is imported (issue 66: the answer within 0.3 s).

Importing pygls and lsprotocol (thousands of attrs classes) takes 0.3 s on a 2-core machine and
the server's own modules 0.2 s more, all before pygls reads a message.  The answer to
`initialize` needs none of it: the server's capabilities are fixed (capabilities.json, which
tests/server/test_early_answer.py holds to what pygls builds from the server's features) but for
the position encoding, chosen here from the client's list as pygls chooses it.

So ``difill serve`` on stdio reads the first message here, with the reader pygls' loop then reads
on from (transport/framing.py).  An `initialize` this module can answer is answered at once; either
way the message stays first in the reader, and pygls and difill's handler set the server up from
it as before.  Their answer, the same, is not sent again (transport/writer.py).  Only the answer
is earlier: what follows it (`initialized`, the model's load, the first requests) waits for the
imports as before.  This module imports neither pygls nor lsprotocol (tests/test_cli.py).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

from difill import __version__
from difill.server.transport.framing import ResyncingReader

CAPABILITIES = Path(__file__).with_name("capabilities.json")  # pygls' build, less positionEncoding
NAME = "difill"  # serverInfo.name (server.py)
ENCODINGS = ("utf-8", "utf-16", "utf-32")  # the position encodings pygls supports
DEFAULT_ENCODING = "utf-16"  # LSP's, when the client names none that pygls supports
# pygls' framing of every message it sends (pygls.protocol.json_rpc); its bodies are ASCII.
HEADER = "Content-Length: {}\r\nContent-Type: application/vscode-jsonrpc; charset=utf-8\r\n\r\n"


@dataclass(frozen=True)
class EarlyAnswer:
    reader: ResyncingReader  # the first message is in it still, for pygls' loop to read first
    request_id: int | str | None = None  # None: nothing was answered (not an `initialize` answered here)
    result: dict[str, Any] | None = None  # the InitializeResult sent


def answer_initialize(stdin: BinaryIO, stdout: BinaryIO) -> EarlyAnswer:
    """Read the first message from ``stdin``; an `initialize` is answered on ``stdout`` now."""
    reader = ResyncingReader(stdin)
    body = reader.take_first()
    if body is None:  # the end of the input: pygls' loop finds it again
        return EarlyAnswer(reader)
    reader.put_back(body)
    answer = initialize_result(body)
    if answer is None:
        return EarlyAnswer(reader)
    request_id, result = answer
    text = json.dumps({"id": request_id, "jsonrpc": "2.0", "result": result})
    stdout.write((HEADER.format(len(text)) + text).encode())
    stdout.flush()
    return EarlyAnswer(reader, request_id, result)


def initialize_result(body: bytes) -> tuple[int | str, dict[str, Any]] | None:
    """(the request's id, the InitializeResult) for an `initialize` request; None for any other
    message, and for one whose answer this module cannot be sure of (pygls answers those)."""
    try:
        message = json.loads(body)
    except ValueError:
        return None
    if (
        not isinstance(message, dict)
        or message.get("jsonrpc") != "2.0"
        or message.get("method") != "initialize"
    ):
        return None
    request_id, params = message.get("id"), message.get("params")
    if isinstance(request_id, bool) or not isinstance(request_id, (int, str)) or not isinstance(params, dict):
        return None
    capabilities = params.get("capabilities")
    if not isinstance(capabilities, dict):
        return None
    encoding, refused = position_encoding(capabilities), refused_sync_flags(capabilities)
    if encoding is None or refused is None:
        return None
    built = json.loads(CAPABILITIES.read_text())
    built["textDocumentSync"].update(refused)
    return request_id, {
        "capabilities": {"positionEncoding": encoding, **built},
        "serverInfo": {"name": NAME, "version": __version__},
    }


def refused_sync_flags(capabilities: dict[str, Any]) -> dict[str, bool] | None:
    """What pygls adds to textDocumentSync for the client's willSave and willSaveWaitUntil: false
    for each it names (the server handles neither), nothing for the others; None where they are
    not a client's capabilities (not objects, not booleans)."""
    document = capabilities.get("textDocument", {})
    sync = document.get("synchronization", {}) if isinstance(document, dict) else None
    if not isinstance(sync, dict):
        return None
    named = {flag: sync[flag] for flag in ("willSave", "willSaveWaitUntil") if sync.get(flag) is not None}
    return {flag: False for flag in named} if all(isinstance(v, bool) for v in named.values()) else None


def position_encoding(capabilities: dict[str, Any]) -> str | None:
    """pygls' choice (ServerCapabilitiesBuilder.choose_position_encoding): the client's first
    that pygls supports, else UTF-16; None where the client's list is not a list of names."""
    general = capabilities.get("general")
    if general is None:
        return DEFAULT_ENCODING
    if not isinstance(general, dict):
        return None
    encodings = general.get("positionEncodings")
    if encodings is None:
        return DEFAULT_ENCODING
    if not isinstance(encodings, list) or not all(isinstance(e, str) for e in encodings):
        return None
    return next((e for e in encodings if e in ENCODINGS), DEFAULT_ENCODING)
