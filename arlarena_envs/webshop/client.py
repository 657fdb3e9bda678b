"""Drive the shop application like a browser: in-process or over HTTP.

Holds the two transports — :class:`InProcessTransport` (Flask's test client: no sockets) and
:class:`HttpTransport` (``urllib`` against a running ``arlarena webshop serve``) — and
:class:`ShopClient`, which keeps the current page in text mode and performs ``search`` (submit
the search bar) and ``click`` (follow a link or submit a button's form) the way a person would.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode, urlsplit

from flask import Flask

from arlarena_envs.webshop.textmode import PageText, normalize_label, parse_page

__all__ = [
    "HttpTransport",
    "InProcessTransport",
    "Reply",
    "ShopClient",
    "ShopConnectionError",
    "Transport",
]


class ShopConnectionError(ConnectionError):
    """The shop server could not be reached or answered with a server error."""


@dataclass(frozen=True)
class Reply:
    """An HTTP answer after redirects: status, final URL (path and query) and body."""

    status: int
    url: str
    body: str


class Transport(ABC):
    """How requests reach the application."""

    @abstractmethod
    def request(self, method: str, url: str, fields: dict[str, str] | None = None) -> Reply:
        """Send ``method url`` (POST with form ``fields``), following redirects."""


class InProcessTransport(Transport):
    """Calls the Flask app directly through its test client."""

    def __init__(self, app: Flask) -> None:
        self._client = app.test_client()

    def request(self, method: str, url: str, fields: dict[str, str] | None = None) -> Reply:
        response = self._client.open(url, method=method, data=fields, follow_redirects=True)
        final = response.request.full_path.rstrip("?")
        return Reply(response.status_code, final, response.get_data(as_text=True))


class HttpTransport(Transport):
    """Talks HTTP to a running shop at ``base_url`` (e.g. ``http://127.0.0.1:3000``)."""

    def __init__(self, base_url: str, timeout: float = 30.0) -> None:
        parts = urlsplit(base_url)
        if parts.scheme not in ("http", "https") or not parts.netloc:
            raise ValueError(f"server_url must look like http://host:port, got {base_url!r}")
        self.base_url = f"{parts.scheme}://{parts.netloc}"
        self.timeout = timeout

    def request(self, method: str, url: str, fields: dict[str, str] | None = None) -> Reply:
        data = urlencode(fields).encode() if fields is not None else None
        req = urllib.request.Request(self.base_url + url, data=data, method=method)
        try:
            with urllib.request.urlopen(req, timeout=self.timeout) as response:
                status, final, body = response.status, response.geturl(), response.read()
        except urllib.error.HTTPError as error:
            status, final, body = error.code, error.geturl() or url, error.read()
        except (urllib.error.URLError, OSError) as error:
            message = f"cannot reach the shop at {self.base_url}: {error}"
            raise ShopConnectionError(message) from None
        if status >= 500:
            raise ShopConnectionError(f"the shop at {self.base_url} answered {status} for {url}")
        parts = urlsplit(final)
        path = parts.path + (f"?{parts.query}" if parts.query else "")
        return Reply(status, path, body.decode("utf-8", errors="replace"))


class ShopClient:
    """A browser-like session on the shop: the current page, search and click."""

    def __init__(self, transport: Transport) -> None:
        self.transport = transport
        self.url = ""
        self.status = 0
        self.page = PageText()

    def _go(self, method: str, url: str, fields: dict[str, str] | None = None) -> PageText:
        reply = self.transport.request(method, url, fields)
        self.url, self.status, self.page = reply.url, reply.status, parse_page(reply.body)
        return self.page

    def open(self, url: str) -> PageText:
        """GET ``url`` (path and query) and make it the current page."""
        return self._go("GET", url)

    def search(self, query: str) -> PageText:
        """Submit the current page's search bar with ``query``."""
        bar = self.page.search_bar
        if bar is None:
            raise ValueError("the current page has no search bar")
        fields = {**dict(bar.fields), bar.field: query}
        if bar.method == "POST":
            return self._go("POST", bar.url, fields)
        return self._go("GET", f"{bar.url}?{urlencode(fields)}")

    def click(self, label: str) -> PageText:
        """Click the link or button labelled ``label`` (compared lower-cased)."""
        target = self.page.clickables.get(normalize_label(label))
        if target is None:
            raise KeyError(f"nothing labelled {label!r} on this page")
        if target.method == "POST":
            return self._go("POST", target.url, dict(target.fields))
        return self._go("GET", target.url)

    def api(self, path: str) -> Any:
        """GET a JSON endpoint (``/api/…``) without changing the current page."""
        reply = self.transport.request("GET", path)
        if reply.status != 200:
            raise ShopConnectionError(f"{path} answered {reply.status}")
        return json.loads(reply.body)
