"""JSON over HTTP for the remote backend: timeouts, bounded retries, cancellation, one clear error.

Requests run on a private asyncio loop in a daemon thread, and the caller's thread waits for them
while it polls ``should_stop``: cancelling the request's task closes its connection at once, so an
abandoned fill stops costing the server (a blocking client could only notice after the answer).

Every call has one deadline, ``timeout_s``, for all its attempts together: a server that
drip-feeds its answer a byte at a time cannot hold a caller longer (a per-read timeout restarts
with each byte).  An answer is read in pieces and refused past ``MAX_ANSWER_BYTES``.

Every failure becomes one ``BackendError`` whose message names the server, says what went wrong
and what to do.  The API key travels only in the Authorization header; it is never put in a
message, and any message that might echo it (a server's error text) is scrubbed (engine/secrets.py).
The base URL's query string (``?api-key=...``, for proxies that authenticate that way) is sent
with every request, after the request's own path, and never shown.  A redirect is not followed,
and its body is not an answer.  The answer's JSON is read by engine/backends/answers.py.
"""

from __future__ import annotations

import asyncio
import random
import ssl
import threading
from collections.abc import Callable
from concurrent.futures import CancelledError as FutureCancelled
from concurrent.futures import Future
from dataclasses import dataclass
from typing import Any

import httpx2 as httpx

from difill.engine import secrets
from difill.engine.api import BackendError, Cancelled
from difill.engine.backends.answers import BadAnswer, parse_json
from difill.text.characters import without_lone_surrogates

RETRY_STATUSES = {429, 502, 503, 504}  # the server says "not now": worth another try
MAX_ANSWER_BYTES = 16 * 1024 * 1024  # a fill's JSON is kilobytes; more is a broken or hostile server
MAX_RETRY_AFTER_S = 5.0
POLL_S = 0.02  # how often a waiting caller checks should_stop


class HttpStatusError(BackendError):
    """The server answered with an error status; ``detail`` is its own (scrubbed) message."""

    def __init__(self, message: str, status: int, detail: str) -> None:
        super().__init__(message)
        self.status = status
        self.detail = detail


class NotJson(BackendError):
    """The server answered 2xx with something that is not JSON (a caller may take that as "this
    endpoint is not what I hoped", e.g. vLLM's /version on another server)."""


class AnswerTooLarge(Exception):
    pass


@dataclass
class Answer:
    """A server's answer, read whole (within MAX_ANSWER_BYTES)."""

    status: int
    reason: str
    headers: httpx.Headers
    content: bytes

    @property
    def text(self) -> str:
        return self.content.decode("utf-8", "replace")


class HttpTransport:
    def __init__(
        self,
        base_url: str,
        api_key: str | None = None,
        timeout_s: float = 30.0,
        connect_timeout_s: float = 5.0,
        retries: int = 2,
        backoff_s: float = 0.25,
        verify: bool | str | ssl.SSLContext = True,
    ) -> None:
        url = httpx.URL(base_url)  # ValueError or httpx.InvalidURL when it cannot be parsed
        self._params = url.params  # the query string: sent with every request, never shown
        self.base_url = str(url.copy_with(query=None, fragment=None)).rstrip("/")
        self.shown_url = secrets.shown_url(self.base_url)
        secrets.remember(url.password or "")
        for secret in (url.query.decode("ascii", "replace"), *url.params.values()):
            if len(secret) >= secrets.MIN_PARAM_SECRET:  # "v=1" is not a secret: scrubbing it mangles text
                secrets.remember(secret)
        self._api_key = secrets.clean_api_key(api_key)
        self.timeout_s = timeout_s
        self.retries = max(0, retries)
        self.backoff_s = backoff_s
        self._timeout = httpx.Timeout(timeout_s, connect=connect_timeout_s)
        if isinstance(verify, str):  # a CA bundle for a server with a private certificate authority
            verify = ssl.create_default_context(cafile=verify)
        self._verify = verify
        self._loop = asyncio.new_event_loop()
        self._client: httpx.AsyncClient | None = None
        self._thread = threading.Thread(target=self._loop.run_forever, name="difill-remote", daemon=True)
        self._thread.start()

    def __repr__(self) -> str:  # never shows the key
        return f"HttpTransport({self.shown_url!r})"

    def request(
        self,
        method: str,
        path: str,
        body: dict | None = None,
        should_stop: Callable[[], bool] | None = None,
        allow_empty: bool = False,
    ) -> Any:
        """The JSON answer to ``method path`` (None for an empty one if ``allow_empty``);
        BackendError on failure, Cancelled if ``should_stop()`` turned true."""
        if self._loop.is_closed():
            raise BackendError(f"the connection to {self.shown_url} was closed; create a new backend")
        attempt = self._with_retries(method, path, body, allow_empty)
        future: Future = asyncio.run_coroutine_threadsafe(attempt, self._loop)
        while True:
            if should_stop is not None and should_stop():
                future.cancel()  # cancels the task: httpx closes the connection mid-request
                raise Cancelled()
            try:
                return future.result(timeout=POLL_S if should_stop is not None else None)
            except TimeoutError:
                continue
            except FutureCancelled as err:
                raise Cancelled() from err

    def close(self) -> None:
        if self._loop.is_closed():
            return
        if self._client is not None:
            asyncio.run_coroutine_threadsafe(self._client.aclose(), self._loop).result(timeout=5)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=5)
        self._loop.close()

    # ------------------------------------------------------------------ on the loop thread

    async def _with_retries(self, method: str, path: str, body: dict | None, allow_empty: bool) -> Any:
        if self._client is None:
            headers = {"Authorization": f"Bearer {self._api_key}"} if self._api_key else {}
            self._client = httpx.AsyncClient(
                base_url=self.base_url, params=self._params, timeout=self._timeout, verify=self._verify,
                headers=headers,
            )  # fmt: skip
        url = f"{self.shown_url}{path}"
        deadline = asyncio.get_running_loop().time() + self.timeout_s
        try:
            async with asyncio.timeout_at(deadline):
                return await self._attempts(method, path, body, allow_empty, url)
        except TimeoutError:
            raise BackendError(
                f"{url} did not answer within {self.timeout_s:g} s (timeout). The server may be "
                "overloaded or the model too slow for it; raise the timeout or use a faster server."
            ) from None

    async def _attempts(self, method: str, path: str, body: dict | None, allow_empty: bool, url: str) -> Any:
        for attempt in range(self.retries + 1):
            last = attempt == self.retries
            try:
                answer = await self._fetch(method, path, body)
            except (httpx.ConnectError, httpx.ConnectTimeout) as err:
                if last:
                    raise BackendError(self._connect_message(err, url)) from None
                await self._sleep(attempt, None)
                continue
            except httpx.TimeoutException:
                raise TimeoutError() from None  # one message for every kind of timeout (above)
            except AnswerTooLarge:
                raise BackendError(
                    f"{url} sent an answer over {MAX_ANSWER_BYTES / 2**20:g} MiB; a fill is a few "
                    "kilobytes. Is the URL a difill or OpenAI-compatible server?"
                ) from None
            except (httpx.RemoteProtocolError, httpx.ReadError, httpx.WriteError) as err:
                raise BackendError(
                    f"{url} closed the connection without an answer ({type(err).__name__}). "
                    "Check that the URL points at a difill or OpenAI-compatible server."
                ) from None
            except httpx.HTTPError as err:  # anything else httpx refuses: say what, not a traceback
                raise BackendError(
                    f"the request to {url} failed: {self._scrub(str(err)) or type(err).__name__}"
                ) from None
            if answer.status in RETRY_STATUSES and not last:
                await self._sleep(attempt, answer.headers.get("retry-after"))
                continue
            if allow_empty and 200 <= answer.status < 300 and not answer.content.strip():
                return None
            return self._answer(answer, url, attempts=attempt + 1)
        raise AssertionError("unreachable")

    async def _fetch(self, method: str, path: str, body: dict | None) -> Answer:
        """The answer, read in pieces: AnswerTooLarge as soon as it passes MAX_ANSWER_BYTES."""
        assert self._client is not None
        async with self._client.stream(method, path, json=body) as response:
            declared = response.headers.get("content-length", "")
            if declared.isdigit() and int(declared) > MAX_ANSWER_BYTES:
                raise AnswerTooLarge()
            pieces, size = [], 0
            async for piece in response.aiter_bytes():
                size += len(piece)
                if size > MAX_ANSWER_BYTES:
                    raise AnswerTooLarge()
                pieces.append(piece)
            return Answer(response.status_code, response.reason_phrase, response.headers, b"".join(pieces))

    async def _sleep(self, attempt: int, retry_after: str | None) -> None:
        delay = self.backoff_s * 2**attempt * random.uniform(0.75, 1.25)
        if retry_after is not None:
            try:
                delay = max(delay, min(float(retry_after), MAX_RETRY_AFTER_S))
            except ValueError:
                pass
        await asyncio.sleep(delay)

    def _answer(self, answer: Answer, url: str, attempts: int) -> Any:
        status = answer.status
        if status >= 400:
            detail = self._server_says(answer)
            raise HttpStatusError(self._status_message(status, url, attempts, detail), status, detail)
        if not 200 <= status < 300:  # a redirect (not followed: the key must not go elsewhere)
            where = secrets.shown_url(answer.headers.get("location", "")) or "nowhere"
            raise HttpStatusError(
                f"{url} redirected the request (HTTP {status}) to {where!r}; difill does not follow "
                "redirects. Set the remote URL to the server's own address.",
                status, f"redirect to {where}",
            )  # fmt: skip
        try:
            return parse_json(answer.content)
        except BadAnswer as err:
            start = self._scrub(answer.text[:60])
            raise NotJson(
                f"{url} answered with something that is not JSON difill can read ({err}: {start!r}). "
                "Is the URL a difill or OpenAI-compatible server?"
            ) from None

    def _status_message(self, status: int, url: str, attempts: int, detail: str) -> str:
        if status in (401, 403):
            hint = (
                "DIFILL_API_KEY is set but the server does not accept it; set it to the server's key"
                if self._api_key
                else "set DIFILL_API_KEY to the server's key"
            )
            return f"{url} refused the request (HTTP {status}): missing or wrong API key; {hint}."
        if status == 404:
            return (
                f"{url} does not exist (HTTP 404). Check the remote URL, and the protocol: "
                "'difill' for difill serve-http, 'openai' for vLLM and other OpenAI-compatible servers."
            )
        tries = f" after {attempts} attempts" if attempts > 1 else ""
        return f"{url} failed (HTTP {status}){tries}: {detail}"

    def _server_says(self, answer: Answer) -> str:
        """The server's own error message, short and without the key."""
        try:
            raw = parse_json(answer.content)
            error = raw.get("error", raw.get("detail", raw)) if isinstance(raw, dict) else raw
            text = error.get("message", str(error)) if isinstance(error, dict) else str(error)
        except BadAnswer:
            text = answer.text or answer.reason
        # A message, not a document: cut before it is scrubbed and shown (a huge body is not shown).
        text = without_lone_surrogates(text[:2000])
        text = " ".join(self._scrub(text).split())
        return (text[:300] + "...") if len(text) > 300 else (text or "no details")

    def _connect_message(self, err: Exception, url: str) -> str:
        causes = _causes(err)
        tls = next((c for c in causes if isinstance(c, ssl.SSLError)), None)
        if isinstance(tls, ssl.SSLCertVerificationError):
            return (
                f"the TLS certificate of {self.shown_url} could not be verified ({tls.verify_message}). "
                "Install the server's CA in the system trust store, or give its CA bundle to the backend."
            )
        if tls is not None:
            return f"TLS with {self.shown_url} failed ({tls.reason}). Is it an https server?"
        if isinstance(err, httpx.ConnectTimeout):
            return f"could not connect to {url} in time (connect timeout). Is the host reachable?"
        if any(isinstance(c, ConnectionRefusedError) for c in causes):
            reason = "connection refused"
        else:
            os_error = next((c for c in causes if isinstance(c, OSError) and c.strerror), None)
            reason = os_error.strerror if os_error else self._scrub(str(err)) or type(err).__name__
        return (
            f"cannot connect to {url} ({reason}, {self.retries + 1} attempts). Is the server running, and "
            "is the remote URL right? Start a local one with `difill serve-http`."
        )

    def _scrub(self, text: str) -> str:
        return secrets.scrub(text)


def _causes(err: BaseException) -> list[BaseException]:
    """``err`` and what caused it, through exception groups (happy eyeballs raises one)."""
    out: list[BaseException] = []
    todo = [err]
    while todo and len(out) < 50:
        current = todo.pop()
        out.append(current)
        todo.extend(c for c in (current.__cause__, current.__context__) if c is not None and c not in out)
        todo.extend(getattr(current, "exceptions", ()))
    return out
