"""Serve the shop over HTTP with Werkzeug's threaded server (one thread per request).

Holds :func:`make_server` (bind, without serving yet: port 0 picks a free port, read it back
from ``server.server_port``) and :func:`serve` (build the shop, bind, announce the URL, serve
until interrupted or terminated). Binds 127.0.0.1 unless told otherwise.
"""

from __future__ import annotations

import logging
import signal
import sys
import threading
from collections.abc import Callable
from types import FrameType

from werkzeug.serving import BaseWSGIServer
from werkzeug.serving import make_server as werkzeug_server

from arlarena_envs.webshop.app import DEFAULT_PAGES, create_app
from arlarena_envs.webshop.reward import DEFAULT_REWARD
from arlarena_envs.webshop.shop import Shop, ShopConfig, get_shop

__all__ = ["DEFAULT_HOST", "DEFAULT_PORT", "make_server", "serve"]

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 3000


def make_server(
    shop: Shop,
    host: str = DEFAULT_HOST,
    port: int = DEFAULT_PORT,
    reward: str = DEFAULT_REWARD,
    pages: str = DEFAULT_PAGES,
) -> BaseWSGIServer:
    """A threaded WSGI server for ``shop`` (option rule ``reward``, page style ``pages``),
    bound but not yet serving."""
    app = create_app(shop, reward=reward, pages=pages)
    return werkzeug_server(host, port, app, threaded=True)


def serve(
    config: ShopConfig,
    host: str = DEFAULT_HOST,
    port: int = DEFAULT_PORT,
    quiet: bool = True,
    announce: Callable[[str], None] = print,
    reward: str = DEFAULT_REWARD,
    pages: str = DEFAULT_PAGES,
) -> None:
    """Build the shop for ``config``, then serve it until Ctrl-C or SIGTERM."""
    logging.getLogger("werkzeug").setLevel(logging.WARNING if quiet else logging.INFO)
    shop = get_shop(config)
    server = make_server(shop, host, port, reward, pages)

    def stop(_signum: int, _frame: FrameType | None) -> None:
        threading.Thread(target=server.shutdown, daemon=True).start()

    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, stop)
    info = shop.describe()
    shown = f"[{host}]" if ":" in host else host
    announce(
        f"WebShop: {info['products']} products, {info['goals']} goals "
        f"(train {info['splits']['train']}, eval {info['splits']['eval']}, "
        f"test {info['splits']['test']}; reward {reward!r}, pages {pages!r}) "
        f"at http://{shown}:{server.server_port}/"
    )
    sys.stdout.flush()
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
