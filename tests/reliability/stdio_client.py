"""A raw JSON-RPC client for ``difill serve`` over stdio: it writes bytes exactly as given (pygls'
own client would refuse to send malformed ones) and reads framed messages on a thread, so every
wait has a timeout and a hung server fails a test instead of blocking CI."""

from __future__ import annotations

import json
import os
import queue
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

# One torch thread: the CI machine's two cores are shared (see tests/server/lsp_helpers.py).
BASE_ENV = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONUNBUFFERED": "1"}
CLOSED = object()  # put on the queue when the server's stdout ends


def cpu_seconds(pid: int) -> float:
    """The user and system time the process (not its children) has used: a server's work, which
    other processes on the cores do not inflate as they do its wall time."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def frame(body: bytes | str) -> bytes:
    data = body.encode() if isinstance(body, str) else body
    return b"Content-Length: %d\r\n\r\n" % len(data) + data


def encode(message: dict) -> bytes:
    return frame(json.dumps(message))


class StdioServer:
    """``python -m difill serve`` with pipes; stderr goes to a file (a full pipe would block it)."""

    def __init__(
        self,
        model_dir: Path | str | None,
        stderr_path: Path,
        extra_args: tuple[str, ...] = (),
        env: dict[str, str] | None = None,
        python: Path | str = sys.executable,  # another venv's, to serve what it installed
    ) -> None:
        command = [str(python), "-m", "difill", "serve"]
        if model_dir is not None:
            command += ["--model", str(model_dir)]
        self.stderr_path = stderr_path
        self._stderr = open(stderr_path, "wb")  # noqa: SIM115 - closed in close()
        self.proc = subprocess.Popen(
            command + list(extra_args),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._stderr,
            env={**BASE_ENV, **(env or {})},
        )
        self.inbox: queue.Queue = queue.Queue()
        self.notifications: list[dict] = []  # every notification read so far, in order
        self.server_requests: list[dict] = []  # every request the server sent
        self.answers: dict[str, Any] = {}  # the result to answer a server request with, by method; else null
        self._stop_reading = threading.Event()  # the reader returns after the next message
        self._reader = threading.Thread(target=self._read_all, name="stdio-reader", daemon=True)
        self._reader.start()
        self._next_id = 1000
        self._unclaimed: dict[Any, dict] = {}  # responses read while waiting for another one

    # ------------------------------------------------------------------ writing

    def send_bytes(self, data: bytes) -> None:
        self.proc.stdin.write(data)
        self.proc.stdin.flush()

    def send(self, message: dict) -> None:
        self.send_bytes(encode(message))

    def notify(self, method: str, params: Any) -> None:
        self.send({"jsonrpc": "2.0", "method": method, "params": params})

    def send_request(self, method: str, params: Any) -> int:
        """Send a well-formed request; returns its id (``response_to`` waits for the answer)."""
        self._next_id += 1
        self.send({"jsonrpc": "2.0", "id": self._next_id, "method": method, "params": params})
        return self._next_id

    def request(self, method: str, params: Any, timeout: float = 30.0) -> dict:
        """Send a well-formed request and return its response (the whole message)."""
        return self.response_to(self.send_request(method, params), timeout)

    # ------------------------------------------------------------------ reading

    def next_message(self, timeout: float) -> dict:
        try:
            message = self.inbox.get(timeout=timeout)
        except queue.Empty:
            raise AssertionError(f"no message from the server within {timeout} s") from None
        if message is CLOSED:
            self.inbox.put(CLOSED)  # later reads see it too
            raise AssertionError(f"the server closed its output (exit code {self.proc.poll()})")
        return message

    def response_to(self, msg_id: Any, timeout: float = 30.0) -> dict:
        """The response with ``msg_id``; notifications and server requests met meanwhile are kept."""
        deadline = time.monotonic() + timeout
        while msg_id not in self._unclaimed:
            message = self.next_message(max(0.01, deadline - time.monotonic()))
            if "method" in message:
                self._on_server_message(message)
            else:
                self._unclaimed[message.get("id")] = message
            if msg_id not in self._unclaimed and time.monotonic() > deadline:
                raise AssertionError(f"no response to id {msg_id!r} within {timeout} s")
        return self._unclaimed.pop(msg_id)

    def next_response(self, timeout: float) -> dict:
        """The next response the server sends, whatever its id (notifications met are kept)."""
        if self._unclaimed:
            return self._unclaimed.pop(next(iter(self._unclaimed)))
        deadline = time.monotonic() + timeout
        while True:
            message = self.next_message(max(0.01, deadline - time.monotonic()))
            if "method" not in message:
                return message
            self._on_server_message(message)

    def responses_within(self, seconds: float) -> list[dict]:
        """Every response (not notification) not yet read, and those that arrive within ``seconds``."""
        out, self._unclaimed = list(self._unclaimed.values()), {}
        deadline = time.monotonic() + seconds
        while (left := deadline - time.monotonic()) > 0:
            try:
                message = self.inbox.get(timeout=left)
            except queue.Empty:
                break
            if message is CLOSED:
                self.inbox.put(CLOSED)
                break
            if "method" in message:
                self._on_server_message(message)
            else:
                out.append(message)
        return out

    def _on_server_message(self, message: dict) -> None:
        if "id" in message:  # a request from the server (e.g. window/workDoneProgress/create)
            self.server_requests.append(message)
            self.send({"jsonrpc": "2.0", "id": message["id"], "result": self.answers.get(message["method"])})
        else:
            self.notifications.append(message)

    def wait_for_notification(self, predicate, timeout: float = 60.0) -> dict:
        deadline = time.monotonic() + timeout
        seen = 0
        while True:
            for message in self.notifications[seen:]:
                if predicate(message):
                    return message
            seen = len(self.notifications)
            left = deadline - time.monotonic()
            if left <= 0:
                raise AssertionError(f"no matching notification within {timeout} s")
            try:
                message = self.inbox.get(timeout=left)
            except queue.Empty:
                continue
            if message is CLOSED:
                self.inbox.put(CLOSED)
                raise AssertionError("the server closed its output")
            if "method" in message:
                self._on_server_message(message)

    def _read_all(self) -> None:
        stream = self.proc.stdout
        try:
            while True:
                length = None
                while True:
                    line = stream.readline()
                    if not line:
                        return
                    if not line.strip():
                        break
                    name, _, value = line.decode("ascii", "replace").partition(":")
                    if name.strip().lower() == "content-length":
                        length = int(value.strip())
                if length is None:
                    continue
                body = stream.read(length)
                if len(body) < length:
                    return
                self.inbox.put(json.loads(body))
                if self._stop_reading.is_set():
                    return
        except (ValueError, OSError):  # the test closed our end of the pipe: the end of the stream
            return
        finally:
            self.inbox.put(CLOSED)

    # ------------------------------------------------------------------ life cycle

    def initialize(
        self, capabilities: dict | None = None, options: dict | None = None, root_uri: str | None = None
    ) -> dict:
        response = self.request(
            "initialize",
            {"processId": None, "rootUri": root_uri, "capabilities": capabilities or {},
             "initializationOptions": options},
        )  # fmt: skip
        self.notify("initialized", {})
        return response

    def wait_ready(self, timeout: float = 90.0) -> dict:
        return self.wait_for_notification(
            lambda m: m["method"] == "difill/status" and m["params"]["state"] in ("ready", "error"), timeout
        )

    def stop_reading(self, timeout: float = 30.0) -> None:
        """Stop reading the server's output, so that the test may close its end at once.

        Closing a pipe's file object waits for a read in progress on another thread, and that
        read waits for the server's next write: with every answer already read, a close hangs.
        So the reader is told to return after the next message, and a request the server answers
        (an unknown method: an error) makes sure one comes."""
        self._stop_reading.set()
        self.send_request("difill/noSuchMethod", None)
        self._reader.join(timeout)
        assert not self._reader.is_alive(), f"the server sent nothing within {timeout} s"

    def alive(self) -> bool:
        return self.proc.poll() is None

    def stderr_text(self) -> str:
        if not self._stderr.closed:
            self._stderr.flush()
        return self.stderr_path.read_text(errors="replace")

    def close(self, timeout: float = 10.0) -> int | None:
        """shutdown + exit when the server still answers; killed otherwise.  Returns the exit code."""
        try:
            if self.alive():
                self.request("shutdown", None, timeout=timeout)
                self.notify("exit", None)
                return self.proc.wait(timeout=timeout)
        except (AssertionError, OSError, subprocess.TimeoutExpired):
            pass
        finally:
            if self.proc.poll() is None:
                self.proc.kill()
                self.proc.wait(timeout=timeout)
            self._stderr.close()
        return self.proc.returncode
