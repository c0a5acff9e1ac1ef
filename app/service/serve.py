"""`wlmap serve`: run the API with uvicorn (settings travel to worker processes as WLMAP_*)."""

from __future__ import annotations

import argparse
import logging
import os
import sys
from typing import Any

import uvicorn
from fastapi import FastAPI

from .flags import settings_from_args
from .logs import setup_logging
from .settings import Settings, cluster_enabled, event_loop
from .tls import reloading_context


def app_from_env() -> FastAPI:
    from .app import create_app

    settings = Settings.from_env()
    setup_logging(settings.log_level.upper())
    if not cluster_enabled(settings) and (settings.namespace or settings.configmap_selector or settings.configmap_name):
        logging.getLogger("wlmap").warning(
            "--namespace/--configmap-* have no effect without cluster access (--kubeconfig, or running in a pod)")
    return create_app(settings)


def serve(args: argparse.Namespace) -> int:
    try:
        settings = settings_from_args(args).check()
    except ValueError as e:  # SettingsError, SpecError
        print(f"error: {e}", file=sys.stderr)
        return 2
    os.environ.update(settings.to_env())
    setup_logging(settings.log_level.upper())
    tls: dict[str, Any] = {"ssl_certfile": settings.tls_cert_file, "ssl_keyfile": settings.tls_key_file,
                           "ssl_context_factory": reloading_context} if settings.tls_cert_file else {}
    uvicorn.run("app.service.serve:app_from_env", factory=True, host=settings.host, port=settings.port,
                workers=settings.workers if settings.workers > 1 else None, log_config=None, access_log=False,
                log_level="warning", proxy_headers=False, server_header=False, loop=event_loop(settings),
                timeout_graceful_shutdown=settings.shutdown_timeout,  # SIGTERM: open requests get this long
                http="app.service.protocol:NoDelayHTTPProtocol", **tls)
    return 0
