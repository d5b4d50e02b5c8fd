"""Secrets never reach a message, a log line or a status: the one place that scrubs them.

What difill treats as secret:

* the remote API key (``DIFILL_API_KEY``): it travels only in the Authorization header.  Every
  key the process uses is remembered here, and ``scrub`` replaces it, and the escaped forms an
  error message may quote it in (``b'Bearer ...'``), with ``***``;
* the userinfo of any URL (``http://alice:PASS@host``): shown as ``http://***@host``;
* the query string and fragment of any URL (``?api-key=...``): shown as ``?***``; the remote
  URL's query values (of ``MIN_PARAM_SECRET`` characters or more) are remembered like the key.

``scrub`` runs on every backend error message (engine/backends/transport.py), on every
``difill/status`` and ``window/showMessage`` the language server sends, and on every log record
its handlers write (stderr, ``--log-file``, ``window/logMessage``).  ``shown_url`` is how a
remote URL is named anywhere, parseable or not.
"""

from __future__ import annotations

import re
import threading

from difill.engine.api import BackendError

HIDDEN = "***"
MIN_PARAM_SECRET = 6  # a query value this long is remembered as a secret ("v=1" is not one)
# scheme://userinfo@ - the userinfo runs to the last "@" before the host's end ("/", "?", "#",
# whitespace or a quote), so "alice:p@ss@host" hides all of "alice:p@ss".
USERINFO = re.compile(r"(?i)\b([a-z][a-z0-9+.-]*://)[^\s/?#'\"]*@")
# A URL's query or fragment: from "?" or "#" up to whitespace or a quote.
QUERY = re.compile(r"(?i)(\b[a-z][a-z0-9+.-]*://[^\s?#'\"]*)[?#][^\s'\"]*")
# Control characters: a key with one inside cannot go in an HTTP header (and a message quoting
# the header would show it).
CONTROL = re.compile("[\x00-\x1f\x7f-\x9f]")

_secrets: set[str] = set()
_lock = threading.Lock()


def remember(secret: str) -> None:
    """From now on, ``secret`` (and the escaped forms a message may quote it in) is scrubbed."""
    if not secret:
        return
    forms = {secret, repr(secret)[1:-1], repr(secret.encode("utf-8", "replace"))[2:-1]}
    with _lock:
        _secrets.update(f for f in forms if f)


def scrub(text: str) -> str:
    """``text`` without any remembered secret, URL userinfo or URL query string."""
    with _lock:
        secrets = sorted(_secrets, key=len, reverse=True)  # a longer form before a part of it
    for secret in secrets:
        if secret in text:
            text = text.replace(secret, HIDDEN)
    if "://" in text:
        text = USERINFO.sub(rf"\1{HIDDEN}@", text)
        text = QUERY.sub(rf"\1?{HIDDEN}", text)
    return text


def shown_url(url: str) -> str:
    """``url`` as messages name it: no userinfo, no query, no fragment (even when unparseable)."""
    cut = min((i for i in (url.find("?"), url.find("#")) if i >= 0), default=len(url))
    url = url[:cut]
    scheme, sep, rest = url.partition("://")
    if sep:
        host_end = min((i for i in (rest.find("/"),) if i >= 0), default=len(rest))
        at = rest.rfind("@", 0, host_end)
        if at >= 0:
            rest = rest[at + 1 :]
    return scheme + sep + rest


def clean_api_key(key: str | None) -> str | None:
    """The key without surrounding whitespace (a key file saved with CRLF ends in "\\r"), None
    when empty; BackendError, which does not quote the key, when a control character is inside."""
    if key is None:
        return None
    key = key.strip()
    if not key:
        return None
    if CONTROL.search(key):
        raise BackendError(
            "DIFILL_API_KEY holds a control character (a line break, NUL or escape) inside it, so it "
            "cannot be sent in an HTTP header; set it to the key alone"
        )
    remember(key)
    return key
