"""An editor that quits closes the server's stdout while answers are still on their way: the
server stops writing and exits without a traceback in its log (Neovim's every quit used to leave
BrokenPipeError tracebacks)."""

from __future__ import annotations

import time

from stdio_client import StdioServer

DOC = "file:///tmp/quit.py"


def test_writes_after_the_client_closed_its_end_leave_no_traceback(tiny_model_dir, tmp_path):
    server = StdioServer(tiny_model_dir, tmp_path / "stderr.txt", ("--log-level", "INFO"))
    try:
        server.initialize()
        server.wait_ready()
        server.notify("textDocument/didOpen", {"textDocument": {
            "uri": DOC, "languageId": "python", "version": 1, "text": "def f(a):\n    return \n"}})  # fmt: skip
        server.stop_reading()  # nothing reads the server's output now: closing it cannot wait
        for _ in range(4):  # answers still to be written when the client goes
            server.send_request("textDocument/inlineCompletion", {
                "textDocument": {"uri": DOC}, "position": {"line": 1, "character": 11},
                "context": {"triggerKind": 1}})  # fmt: skip
        server.proc.stdout.close()  # the editor is gone: every later write meets a closed pipe
        time.sleep(1.0)
        server.proc.stdin.close()
        assert server.proc.wait(timeout=60) is not None
    finally:
        server.close()
    log = server.stderr_text()
    assert "Traceback" not in log and "BrokenPipeError" not in log, log[-3000:]
