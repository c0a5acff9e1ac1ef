"""`wlmap serve`: run the API with uvicorn (settings travel to worker processes as WLMAP_*)."""

from __future__ import annotations

import argparse
import logging
import os
import socket
import sys
import threading
from typing import Any

import uvicorn
from fastapi import FastAPI
from uvicorn.supervisors import Multiprocess

from .flags import settings_from_args
from .logs import announce, setup_logging
from .settings import Settings, cluster_enabled, event_loop
from .tls import reloading_context


def app_from_env() -> FastAPI:
    from .app import create_app

    settings = Settings.from_env()
    setup_logging(settings.log_level.upper(), settings.log_format)
    if not cluster_enabled(settings) and (settings.namespace or settings.configmap_selector or settings.configmap_name):
        logging.getLogger("wlmap").warning(
            "--namespace/--configmap-* have no effect without cluster access (--kubeconfig, or running in a pod)"
        )
    return create_app(settings)


class _Server(uvicorn.Server):
    """One process: says where it listens once its sockets accept connections."""

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        await super().startup(sockets)
        if self.started:
            port = self.servers[0].sockets[0].getsockname()[1]
            announce("https" if self.config.ssl else "http", self.config.host, port)


def _announce_when_listening(sock: socket.socket, scheme: str, host: str, stop: threading.Event) -> None:
    """Several workers: the parent binds the socket and each worker listens on it once started;
    the first connection accepted means one serves."""
    port = sock.getsockname()[1]
    peer = {"0.0.0.0": "127.0.0.1", "::": "::1"}.get(host, host)
    while not stop.wait(0.1):
        try:
            socket.create_connection((peer, port), timeout=1).close()
        except OSError:
            continue
        announce(scheme, host, port)
        return


def serve(args: argparse.Namespace) -> int:
    try:
        settings = settings_from_args(args).check()
    except ValueError as e:  # SettingsError, SpecError
        print(f"error: {e}", file=sys.stderr)
        return 2
    os.environ.update(settings.to_env())
    setup_logging(settings.log_level.upper(), settings.log_format)
    tls: dict[str, Any] = (
        {
            "ssl_certfile": settings.tls_cert_file,
            "ssl_keyfile": settings.tls_key_file,
            "ssl_context_factory": reloading_context,
        }
        if settings.tls_cert_file
        else {}
    )
    config = uvicorn.Config(
        "app.service.serve:app_from_env",
        factory=True,
        host=settings.host,
        port=settings.port,
        workers=settings.workers if settings.workers > 1 else None,
        log_config=None,
        access_log=False,
        log_level="warning",
        proxy_headers=False,
        server_header=False,
        loop=event_loop(settings),
        # SIGTERM: open requests get this long (uvicorn hints int; it hands the value to asyncio.wait_for)
        timeout_graceful_shutdown=settings.shutdown_timeout,  # type: ignore[arg-type]
        http="app.service.protocol:NoDelayHTTPProtocol",
        **tls,
    )
    if config.workers <= 1:  # as uvicorn.run
        server = _Server(config)
        server.run()
        return 0 if server.started else 3  # uvicorn's STARTUP_FAILURE
    sock, stop = config.bind_socket(), threading.Event()
    threading.Thread(
        target=_announce_when_listening, args=(sock, "https" if tls else "http", settings.host, stop), daemon=True
    ).start()
    try:
        Multiprocess(config, sockets=[sock]).run()
    finally:
        stop.set()
    return 0
