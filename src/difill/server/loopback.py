"""What counts as this machine, for listeners and for the requests they accept."""

from __future__ import annotations

import ipaddress
from urllib.parse import urlsplit


def is_loopback(host: str) -> bool:
    """A loopback address or ``localhost`` (another host name may resolve to anything)."""
    host = host.strip("[]")
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def host_header_is_loopback(value: str) -> bool:
    """``Host: 127.0.0.1:8000`` / ``[::1]:8000`` / ``localhost`` (a DNS-rebound name is not)."""
    return is_loopback(urlsplit(f"//{value}").hostname or "")


def origin_is_loopback(value: str) -> bool:
    """``Origin: http://127.0.0.1:3000`` is a page of this machine; ``null`` or any site is not."""
    parts = urlsplit(value)
    return parts.scheme in ("http", "https") and is_loopback(parts.hostname or "")
