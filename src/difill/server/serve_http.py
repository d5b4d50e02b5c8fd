"""``difill serve-http``: the local engine behind HTTP, for a team sharing one GPU box.

Endpoints: ``GET /health``, ``GET /v1/models``, OpenAI-compatible ``POST /v1/completions``
(``prompt`` = prefix, ``suffix`` = suffix) and difill's native ``POST /v1/fill`` (fill, holes or
rewrite, with FillOptions; the shapes are in engine/backends/wire.py).

Starlette and uvicorn serve HTTP on an asyncio loop; the model never runs there.  Each fill runs
in a worker thread through ``BatchingBackend``, so concurrent requests share decoder passes, and
a client that disconnects cancels its fill at the next denoising step.  Answers hold the middles
as the model wrote them, in LF (CRLF in a request is read as LF): the caller's pipeline
(text) fits them to its document.

Safety: binds 127.0.0.1 by default; with ``DIFILL_API_KEY`` set every request needs
``Authorization: Bearer <key>`` (401 otherwise), and without a key a non-loopback address is
refused.  Request bodies are never logged: they are someone's code.
"""

from __future__ import annotations

import asyncio
import dataclasses
import hmac
import json
import logging
import os
import socket
import threading
import time
import uuid
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import h11
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route
from uvicorn.protocols.http.h11_impl import H11Protocol

from difill import __version__
from difill.engine.api import (
    DEFAULT_HOLE_MARKER,
    Cancelled,
    FillOptions,
    InfillBackend,
    ModelLoadError,
    RewriteRequest,
)
from difill.engine.backends import API_KEY_ENV
from difill.engine.backends.wire import (
    OPTION_BOUNDS,
    fill_result_to_json,
    holes_result_to_json,
    options_from_json,
)
from difill.server.loopback import host_header_is_loopback, is_loopback, origin_is_loopback
from difill.text.characters import has_lone_surrogate
from difill.text.context import to_lf

log = logging.getLogger("difill.http")
MAX_BODY_BYTES = 8 * 1024 * 1024
# A client has this long for a request's headers, and then for its body; an idle kept-alive
# connection is closed after IDLE_TIMEOUT_S.  Without them a client that sends a byte now and then
# holds a connection (and its memory) for ever.
HEADER_TIMEOUT_S = 10.0  # the defaults of --header-timeout and --body-timeout
BODY_TIMEOUT_S = 30.0
IDLE_TIMEOUT_S = 5.0
MAX_CHOICES = 3


class RequestError(ValueError):
    """A client's request is invalid; the message says what to change (HTTP 400 unless ``status``)."""

    def __init__(self, message: str, status: int = 400) -> None:
        super().__init__(message)
        self.status = status


def error_response(status: int, message: str, kind: str) -> JSONResponse:
    """OpenAI's error shape, which OpenAI clients know how to show."""
    return JSONResponse({"error": {"message": message, "type": kind, "code": status}}, status_code=status)


def check_bind(host: str, api_key: str | None) -> None:
    """Refuse to expose an unauthenticated model to the network."""
    if not api_key and not is_loopback(host):
        raise SystemExit(
            f"difill serve-http: refusing to listen on {host} without an API key: anyone who can reach "
            f"this machine could use it. Set {API_KEY_ENV} (clients then send it as a Bearer token), "
            "or bind 127.0.0.1."
        )


class BearerAuth:
    """ASGI middleware: every request needs ``Authorization: Bearer <key>``."""

    def __init__(self, app, key: str) -> None:
        self.app = app
        self.expected = f"Bearer {key}".encode()

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] == "http":
            given = [value for name, value in scope["headers"] if name == b"authorization"]
            # Exactly one header: with two, proxies and servers disagree on which one counts.
            if len(given) != 1 or not hmac.compare_digest(given[0], self.expected):
                response = error_response(
                    401, "missing or wrong API key: send Authorization: Bearer <the server's DIFILL_API_KEY>",
                    "authentication_error",
                )  # fmt: skip
                response.headers["WWW-Authenticate"] = "Bearer"
                await response(scope, receive, send)
                return
        await self.app(scope, receive, send)


class FillService:
    """Runs fills off the event loop and cancels those whose client went away."""

    def __init__(self, backend: InfillBackend, model_name: str, device: str, max_concurrent: int) -> None:
        self.backend = backend
        self.model_name = model_name
        self.device = device
        self.executor = ThreadPoolExecutor(max_workers=max_concurrent, thread_name_prefix="difill-fill")
        self.cancelled = 0

    async def run(self, request: Request, work: Callable[[Callable[[], bool]], Any]) -> Any:
        """``work(should_stop)`` in a worker thread; None if the client disconnected first."""
        stop = threading.Event()
        loop = asyncio.get_running_loop()
        fill = loop.run_in_executor(self.executor, work, stop.is_set)
        gone = asyncio.ensure_future(_disconnected(request))
        await asyncio.wait({fill, gone}, return_when=asyncio.FIRST_COMPLETED)
        if not fill.done():
            stop.set()  # the fill raises Cancelled at its next step; nobody waits for it
            self.cancelled += 1
            fill.add_done_callback(lambda f: f.exception())  # retrieve it: no "never retrieved" noise
            return None
        gone.cancel()
        return fill.result()

    def health(self) -> dict[str, Any]:
        stats = getattr(self.backend, "stats", None)
        return {
            "status": "ok",
            "server": "difill",
            "version": __version__,
            "model": self.model_name,
            "device": self.device,
            "batching": dataclasses.asdict(stats) if stats is not None else None,
            "cancelled": self.cancelled,
        }


async def _disconnected(request: Request) -> None:
    while (await request.receive())["type"] != "http.disconnect":
        pass


class LoopbackOnly:
    """ASGI middleware for a server without a key: only this machine's clients, not its web pages.

    A keyless server on 127.0.0.1 is still reachable from any page the user visits: a
    cross-origin ``text/plain`` POST needs no preflight, and DNS rebinding gives a foreign name
    the loopback address. So the ``Host`` must be a loopback address and an ``Origin``, when
    sent, a page of this machine (an editor's HTTP client sends none)."""

    def __init__(self, app) -> None:
        self.app = app

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] == "http":
            headers = [(name, value.decode("latin-1")) for name, value in scope["headers"]]
            hosts = [v for n, v in headers if n == b"host"]
            origins = [v for n, v in headers if n == b"origin"]
            if len(hosts) != 1 or not host_header_is_loopback(hosts[0]):
                problem = "the Host header must name this machine (127.0.0.1, ::1 or localhost)"
            elif any(not origin_is_loopback(o) for o in origins):
                problem = "requests from web pages are refused (set DIFILL_API_KEY to serve other origins)"
            else:
                problem = None
            if problem is not None:
                await error_response(403, problem, "permission_error")(scope, receive, send)
                return
        await self.app(scope, receive, send)


def build_app(service: FillService, api_key: str | None) -> Starlette:
    async def health(request: Request) -> JSONResponse:
        return JSONResponse(service.health())

    async def models(request: Request) -> JSONResponse:
        entry = {"id": service.model_name, "object": "model", "created": 0, "owned_by": "difill"}
        return JSONResponse({"object": "list", "data": [entry]})

    async def fill(request: Request) -> JSONResponse:
        body = await _json_body(request)
        work, to_json = native_request(service.backend, body)
        return await _answer(service, request, work, to_json)

    async def completions(request: Request) -> JSONResponse:
        body = await _json_body(request)
        work, to_json = completion_request(service.backend, body, service.model_name)
        return await _answer(service, request, work, to_json)

    app = Starlette(
        routes=[
            Route("/health", health, methods=["GET"]),
            Route("/v1/models", models, methods=["GET"]),
            Route("/v1/fill", fill, methods=["POST"]),
            Route("/v1/completions", completions, methods=["POST"]),
        ],
        exception_handlers={RequestError: _bad_request},
    )
    if api_key:
        app.add_middleware(BearerAuth, key=api_key)
    else:
        app.add_middleware(LoopbackOnly)
    app.state.body_timeout_s = BODY_TIMEOUT_S  # run_http_server sets --body-timeout
    return app


async def _bad_request(request: Request, err: Exception) -> JSONResponse:
    status = err.status if isinstance(err, RequestError) else 400
    return error_response(status, str(err), "invalid_request_error")


async def _json_body(request: Request) -> dict[str, Any]:
    content_type = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if content_type != "application/json":
        raise RequestError("send the body as Content-Type: application/json", status=415)
    too_large = RequestError(f"the request body is larger than {MAX_BODY_BYTES // 2**20} MiB", status=413)
    try:
        declared = int(request.headers.get("content-length") or 0)
    except ValueError:
        raise RequestError("the Content-Length header is not a number") from None
    if declared > MAX_BODY_BYTES:
        raise too_large
    chunks, size = [], 0
    body_timeout = request.app.state.body_timeout_s
    try:
        async with asyncio.timeout(body_timeout):
            async for chunk in request.stream():  # a chunked body has no length to check first: count it
                size += len(chunk)
                if size > MAX_BODY_BYTES:
                    raise too_large
                chunks.append(chunk)
    except TimeoutError:
        raise RequestError(f"the request body did not arrive within {body_timeout:g} s", status=408) from None
    try:
        body = json.loads(b"".join(chunks))
    except RecursionError:
        raise RequestError("the request body is nested too deeply") from None
    except ValueError as err:
        raise RequestError(f"the request body is not valid JSON ({err})") from None
    if not isinstance(body, dict):
        raise RequestError("the request body must be a JSON object")
    _refuse_lone_surrogates(body)
    return body


def _refuse_lone_surrogates(body: dict[str, Any]) -> None:
    """A 400 naming the field when any string of the body, at any depth, holds half a UTF-16
    surrogate pair (JSON allows "\\ud800"; the tokenizer refuses it, and a field checked nowhere
    else failed as a 500 with a traceback).  One gate for every field, old and new."""
    stack: list[tuple[str, Any]] = [("", body)]
    while stack:
        path, value = stack.pop()
        if isinstance(value, str):
            if has_lone_surrogate(value):
                raise RequestError(f"'{path}' holds a lone surrogate (half a UTF-16 pair), which is not text")
        elif isinstance(value, dict):
            for key, item in value.items():
                if has_lone_surrogate(key):
                    raise RequestError(
                        f"a key in '{path or 'the body'}' holds a lone surrogate, which is not text"
                    )
                stack.append((f"{path}.{key}" if path else key, item))
        elif isinstance(value, list):
            stack.extend((f"{path}[{k}]", item) for k, item in enumerate(value))


async def _answer(service: FillService, request: Request, work, to_json) -> JSONResponse:
    try:
        result = await service.run(request, work)
    except Cancelled:
        return error_response(499, "the fill was cancelled", "cancelled")
    except (RequestError, ValueError) as err:  # the engine's own refusals (e.g. a hole that cannot fit)
        return error_response(400, str(err), "invalid_request_error")
    except Exception as err:  # noqa: BLE001 - a failed fill must not take the server down
        log.exception("fill failed")
        return error_response(500, f"the fill failed: {type(err).__name__}: {err}", "server_error")
    if result is None:
        return error_response(499, "the client disconnected; the fill was cancelled", "cancelled")
    return JSONResponse(to_json(result))


def _text(body: dict, key: str, default: str | None = None) -> str:
    value = body.get(key, default)
    if not isinstance(value, str):
        raise RequestError(f"'{key}' must be a string" + ("" if key in body else " (it is missing)"))
    return to_lf(value)


def native_request(backend: InfillBackend, body: dict):
    """(work, to_json) for POST /v1/fill: a fill, ``holes`` or a rewrite (``selection``)."""
    try:
        options = options_from_json(body.get("options"))
    except ValueError as err:
        raise RequestError(str(err)) from None
    if "holes" in body:
        _only(body, {"holes", "marker", "options"})
        text, marker = _text(body, "holes"), _text(body, "marker", DEFAULT_HOLE_MARKER)
        if not marker:
            raise RequestError("'marker' must not be empty")
        return (lambda stop: backend.fill_holes(text, marker, options, stop)), holes_result_to_json
    prefix, suffix = _text(body, "prefix"), _text(body, "suffix", "")
    if "selection" in body:
        _only(body, {"prefix", "selection", "suffix", "strength", "instruction", "options"})
        selection = _text(body, "selection")
        strength = body.get("strength", 0.5)
        if isinstance(strength, bool) or not isinstance(strength, int | float) or not 0 <= strength <= 1:
            raise RequestError("'strength' must be a number between 0 and 1")
        instruction = body.get("instruction")
        if instruction is not None and not isinstance(instruction, str):
            raise RequestError("'instruction' must be a string or null")
        rewrite = RewriteRequest(prefix, selection, suffix, strength, instruction)
        return (lambda stop: backend.rewrite(rewrite, options, stop)), fill_result_to_json
    _only(body, {"prefix", "suffix", "options"})
    return (lambda stop: backend.fill(prefix, suffix, options, stop)), fill_result_to_json


def _only(body: dict, allowed: set[str]) -> None:
    extra = sorted(set(body) - allowed)
    if extra:
        raise RequestError(
            f"unexpected field(s) {', '.join(extra)} (this request takes {', '.join(sorted(allowed))})"
        )


def completion_request(backend: InfillBackend, body: dict, model_name: str):
    """(work, to_json) for OpenAI's POST /v1/completions; unknown OpenAI fields are ignored."""
    prompt = body.get("prompt", "")
    if isinstance(prompt, list) and len(prompt) == 1:
        prompt = prompt[0]
    if not isinstance(prompt, str):
        raise RequestError("'prompt' must be a string (or a list holding one string)")
    suffix = body.get("suffix") or ""
    if not isinstance(suffix, str):
        raise RequestError("'suffix' must be a string")
    prompt, suffix = to_lf(prompt), to_lf(suffix)
    for flag in ("stream", "echo"):
        if body.get(flag):
            raise RequestError(f"'{flag}' is not supported by difill serve-http")
    low, high = OPTION_BOUNDS["max_hole_tokens"]
    max_tokens = _integer(body, "max_tokens", 16, int(low), int(high))
    seed = _integer(body, "seed", 0, 0, 2**63 - 1)
    n = _integer(body, "n", 1, 1, MAX_CHOICES)
    stop = body.get("stop") or []
    stop = [stop] if isinstance(stop, str) else stop
    if not isinstance(stop, list) or not all(isinstance(s, str) and s for s in stop):
        raise RequestError("'stop' must be a string or a list of strings")
    options = FillOptions(max_hole_tokens=max_tokens, seed=seed)

    def to_json(result) -> dict[str, Any]:
        choices = []
        for index, candidate in enumerate(result.candidates[:n]):
            text, cut = _cut_at_stop(candidate.text, stop)
            finish = "stop" if candidate.complete or cut else "length"
            choices.append({"index": index, "text": text, "logprobs": None, "finish_reason": finish})
        if not choices:
            choices = [{"index": 0, "text": "", "logprobs": None, "finish_reason": "stop"}]
        usage = {"prompt_tokens": result.stats.prefix_tokens, "completion_tokens": result.stats.hole_tokens}
        usage["total_tokens"] = usage["prompt_tokens"] + usage["completion_tokens"]
        return {
            "id": f"cmpl-{uuid.uuid4().hex[:24]}", "object": "text_completion", "created": int(time.time()),
            "model": body.get("model") or model_name, "choices": choices, "usage": usage,
        }  # fmt: skip

    return (lambda should_stop: backend.fill(prompt, suffix, options, should_stop)), to_json


def _integer(body: dict, key: str, default: int, low: int, high: int) -> int:
    value = body.get(key)
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise RequestError(f"'{key}' must be an integer between {low} and {high}")
    return value


def _cut_at_stop(text: str, stops: list[str]) -> tuple[str, bool]:
    cuts = [text.find(s) for s in stops if s in text]
    return (text[: min(cuts)], True) if cuts else (text, False)


# ---------------------------------------------------------------------- running it


def bind_socket(host: str, port: int) -> socket.socket:
    family, kind, proto, _, address = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0]
    sock = socket.socket(family, kind, proto)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(address)
    sock.listen(2048)  # connections queue from now on, even before uvicorn accepts them
    return sock


class H11WithHeaderDeadline(H11Protocol):
    """uvicorn's HTTP/1.1 protocol with a deadline for each request's headers.

    uvicorn's keep-alive timer is disarmed by any byte, so a client sending a header a byte at a
    time (slowloris) was never cut off; this deadline is absolute, from the connection (or the
    previous response) to the end of the headers."""

    header_timeout_s = HEADER_TIMEOUT_S

    def connection_made(self, transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._arm_header_deadline()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        self._arm_header_deadline()

    def _arm_header_deadline(self) -> None:
        self.loop.call_later(self.header_timeout_s, self._headers_overdue, self.server_state.total_requests)

    def _headers_overdue(self, requests_before: int) -> None:
        waiting = self.conn.their_state is h11.IDLE  # no complete request line and headers yet
        if (
            waiting
            and self.server_state.total_requests == requests_before
            and not self.transport.is_closing()
        ):
            self.transport.close()


def make_server(
    app,
    log_level: str = "info",
    tls_cert: str | None = None,
    tls_key: str | None = None,
    header_timeout_s: float = HEADER_TIMEOUT_S,
):
    import uvicorn

    protocol = type("H11Protocol", (H11WithHeaderDeadline,), {"header_timeout_s": header_timeout_s})
    config = uvicorn.Config(
        app, lifespan="off", log_level=log_level.lower(), ssl_certfile=tls_cert, ssl_keyfile=tls_key,
        timeout_graceful_shutdown=3, timeout_keep_alive=IDLE_TIMEOUT_S, http=protocol,
    )  # fmt: skip
    return uvicorn.Server(config)


def serve_in_thread(app, host: str = "127.0.0.1") -> tuple[str, Callable[[], None]]:
    """Start ``app`` on a free loopback port in a daemon thread; (base URL, stop).  For tests and
    for embedding difill's HTTP API in another program."""
    sock = bind_socket(host, 0)
    server = make_server(app, log_level="warning")
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started and thread.is_alive() and time.monotonic() < deadline:
        time.sleep(0.01)

    def stop() -> None:
        server.should_exit = True
        thread.join(timeout=10)

    return f"http://{host}:{sock.getsockname()[1]}", stop


def run_http_server(args) -> int:
    from difill.engine.batcher import BatchingBackend
    from difill.engine.model import load_model

    api_key = os.environ.get(API_KEY_ENV) or None
    check_bind(args.host, api_key)
    logging.basicConfig(level=args.log_level.upper(), format="%(asctime)s %(name)s %(levelname)s %(message)s")
    try:
        loaded = load_model(args.model, args.device)
    except ModelLoadError as err:
        raise SystemExit(f"difill serve-http: {err}") from err
    backend = BatchingBackend(loaded, max_concurrent=args.max_concurrent, window_ms=args.batch_window_ms)
    name = "difill-default" if args.model is None else loaded.path.name
    service = FillService(backend, name, str(loaded.device), args.max_concurrent)
    app = build_app(service, api_key)
    sock = bind_socket(args.host, args.port)
    scheme = "https" if args.tls_cert else "http"
    host = f"[{args.host}]" if ":" in args.host else args.host
    auth = "API key required" if api_key else "no API key (loopback only)"
    print(f"difill serve-http: listening on {scheme}://{host}:{sock.getsockname()[1]} "
          f"(model {name} on {loaded.device}; {auth})", flush=True)  # fmt: skip
    app.state.body_timeout_s = args.body_timeout
    make_server(app, args.log_level, args.tls_cert, args.tls_key, args.header_timeout).run(sockets=[sock])
    return 0
