"""A person's path through the shop in headless Chromium: open the search page, type a query,
open a product, pick an option, buy, and take screenshots.

Chromium is driven over the DevTools protocol on a pipe (``--remote-debugging-pipe``: JSON
messages ending in NUL on file descriptors 3 and 4), so the test needs no Python package and
no WebDriver, only Debian's ``chromium``. It is skipped when Chromium is not installed.
"""

from __future__ import annotations

import base64
import json
import os
import select
import shutil
import struct
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from arlarena_envs.webshop.catalogue import SMALL_PRODUCTS
from arlarena_envs.webshop.server import make_server
from arlarena_envs.webshop.shop import ShopConfig, get_shop

CHROMIUM = next(
    (path for name in ("chromium", "chromium-browser", "google-chrome")
     if (path := shutil.which(name))),
    None,
)
FLAGS = (
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
    "--remote-debugging-pipe", "--window-size=1200,900",
)
pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(CHROMIUM is None, reason="needs Chromium (Debian package: chromium)"),
    pytest.mark.skipif(sys.platform == "win32", reason="the DevTools pipe needs POSIX fds"),
]


class DevTools:
    """A minimal DevTools-protocol client over Chromium's debugging pipe."""

    def __init__(self, binary: str, profile: Path, timeout: float = 30.0) -> None:
        to_browser_r, self._to_browser = os.pipe()
        self._from_browser, from_browser_w = os.pipe()

        def wire_pipes() -> None:  # in the child: fd 3 reads commands, fd 4 writes replies
            import fcntl

            read_end = fcntl.fcntl(to_browser_r, fcntl.F_DUPFD, 10)
            write_end = fcntl.fcntl(from_browser_w, fcntl.F_DUPFD, 10)
            os.dup2(read_end, 3)
            os.dup2(write_end, 4)

        self.process = subprocess.Popen(
            [binary, *FLAGS, f"--user-data-dir={profile}", "about:blank"],
            preexec_fn=wire_pipes, close_fds=False,
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )
        os.close(to_browser_r)
        os.close(from_browser_w)
        self.timeout = timeout
        self._buffer = b""
        self._next_id = 0
        self.session = ""

    def send(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        """Send one command (to the attached page, if any) and return its result."""
        self._next_id += 1
        message: dict[str, Any] = {"id": self._next_id, "method": method, "params": params or {}}
        if self.session:
            message["sessionId"] = self.session
        os.write(self._to_browser, json.dumps(message).encode() + b"\0")
        deadline = time.monotonic() + self.timeout
        while True:
            reply = self._receive(deadline)
            if reply.get("id") == self._next_id:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                return reply["result"]

    def _receive(self, deadline: float) -> dict[str, Any]:
        while b"\0" not in self._buffer:
            remaining = deadline - time.monotonic()
            if remaining <= 0 or not select.select([self._from_browser], [], [], remaining)[0]:
                raise TimeoutError("Chromium did not answer in time")
            chunk = os.read(self._from_browser, 1 << 16)
            if not chunk:
                raise RuntimeError("Chromium closed the DevTools pipe")
            self._buffer += chunk
        message, self._buffer = self._buffer.split(b"\0", 1)
        return json.loads(message)

    def open_page(self) -> None:
        target = self.send("Target.createTarget", {"url": "about:blank"})["targetId"]
        self.session = self.send(
            "Target.attachToTarget", {"targetId": target, "flatten": True}
        )["sessionId"]

    def evaluate(self, expression: str) -> Any:
        result = self.send("Runtime.evaluate", {"expression": expression, "returnByValue": True})
        return result["result"].get("value")

    def wait_for(self, condition: str) -> None:
        deadline = time.monotonic() + self.timeout
        while not self.evaluate(f"document.readyState === 'complete' && ({condition})"):
            if time.monotonic() > deadline:
                raise TimeoutError(f"page never satisfied {condition}")
            time.sleep(0.05)

    def click(self, selector: str, text: str | None = None) -> None:
        """A real mouse click at the centre of the first element matching ``selector`` (and
        showing ``text``, if given)."""
        position = self.evaluate(
            f"(() => {{ const e = [...document.querySelectorAll({json.dumps(selector)})]"
            f".find(e => {json.dumps(text)} === null || e.innerText === {json.dumps(text)});"
            " if (!e) return null; e.scrollIntoView({block: 'center'});"
            " const r = e.getBoundingClientRect(); return [r.x + r.width / 2, r.y + r.height / 2];"
            " })()"
        )
        assert position, f"nothing matches {selector} {text or ''}"
        x, y = position
        for kind in ("mousePressed", "mouseReleased"):
            self.send("Input.dispatchMouseEvent",
                      {"type": kind, "x": x, "y": y, "button": "left", "clickCount": 1})

    def screenshot(self, path: Path) -> bytes:
        data = base64.b64decode(self.send("Page.captureScreenshot", {"format": "png"})["data"])
        path.write_bytes(data)
        return data

    def close(self) -> None:
        try:
            self.session = ""
            self.send("Browser.close")
        except (RuntimeError, TimeoutError, OSError):
            pass
        try:
            self.process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(timeout=15)
        os.close(self._to_browser)
        os.close(self._from_browser)


@pytest.fixture(scope="module")
def shop_url() -> Iterator[str]:
    server = make_server(get_shop(ShopConfig(SMALL_PRODUCTS)), "127.0.0.1", 0)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_port}"
    server.shutdown()
    server.server_close()


@pytest.fixture
def browser(tmp_path: Path) -> Iterator[DevTools]:
    assert CHROMIUM is not None
    tools = DevTools(CHROMIUM, tmp_path / "profile")
    try:
        tools.open_page()
        yield tools
    finally:
        tools.close()


def _assert_real_png(data: bytes) -> None:
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and data[12:16] == b"IHDR"
    width, height = struct.unpack(">II", data[16:24])
    assert width >= 800 and height >= 600
    assert len(data) > 10_000  # a blank page compresses to a few hundred bytes


def test_a_person_searches_opens_a_product_and_buys(
    browser: DevTools, shop_url: str, tmp_path: Path
) -> None:
    goal = get_shop(ShopConfig(SMALL_PRODUCTS)).goal("eval", 0)
    browser.send("Page.navigate", {"url": f"{shop_url}/person1?split=eval&goal=0"})
    browser.wait_for("document.body && document.body.dataset.page === 'search'")
    assert goal.instruction in browser.evaluate("document.body.innerText")

    browser.click("input[name=keywords]")
    browser.send("Input.insertText", {"text": goal.name})
    browser.click("form.search-bar button")
    browser.wait_for("document.body.dataset.page === 'results'")
    assert "Page 1 (Total results: " in browser.evaluate("document.body.innerText")
    _assert_real_png(browser.screenshot(tmp_path / "results.png"))

    browser.click(f"a.asin[href*='/item/{goal.asin}']")
    browser.wait_for("document.body.dataset.page === 'item'")
    assert goal.name in browser.evaluate("document.querySelector('h2.title').innerText")
    for _, value in goal.options:
        browser.click("a.opt", text=value)
        browser.wait_for(
            f"[...document.querySelectorAll('a.opt.selected')].some("
            f"e => e.innerText === {json.dumps(value)})"
        )
    item_png = browser.screenshot(tmp_path / "item.png")
    _assert_real_png(item_png)

    browser.click("form.buy button")
    browser.wait_for("document.body.dataset.page === 'done'")
    text = browser.evaluate("document.body.innerText")
    assert "Thank you for shopping with us!" in text and goal.asin in text
    assert browser.evaluate("document.getElementById('score').innerText") == "1.0"
    _assert_real_png(browser.screenshot(tmp_path / "done.png"))
