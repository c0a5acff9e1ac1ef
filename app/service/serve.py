"""`wlmap serve`: run the API with uvicorn (settings travel to worker processes as WLMAP_*)."""

from __future__ import annotations

import argparse
import logging
import os
import sys

import uvicorn
from fastapi import FastAPI

from .middleware import setup_logging
from .settings import (
    Settings,
    auth_mode,
    check_roles,
    cluster_enabled,
    event_loop,
    settings_from_args,
)
from .tls import check_pair, reloading_context


def app_from_env() -> FastAPI:
    from .app import create_app

    settings = Settings.from_env()
    setup_logging(settings.log_level.upper())
    if not cluster_enabled(settings) and (settings.namespace or settings.configmap_selector or settings.configmap_name):
        logging.getLogger("wlmap").warning(
            "--namespace/--configmap-* have no effect without cluster access (--kubeconfig, or running in a pod)")
    return create_app(settings)


def serve(args: argparse.Namespace) -> int:
    settings = settings_from_args(args)
    if auth_mode(settings) == "kubernetes" and not cluster_enabled(settings):
        print("error: --auth kubernetes needs cluster access: give --kubeconfig, or run in a pod", file=sys.stderr)
        return 2
    from ..fleet.specs import SpecError
    from .cluster import cluster_specs

    try:
        check_roles(settings)
    except ValueError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2

    try:
        cluster_specs(settings)  # a --cluster that cannot work is an error now, not a member that never works
    except SpecError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    if settings.token_audiences and auth_mode(settings) != "kubernetes":
        print("error: --token-audience needs --auth kubernetes (no token is reviewed otherwise)", file=sys.stderr)
        return 2
    if bool(settings.tls_cert_file) != bool(settings.tls_key_file):
        print("error: --tls-cert-file and --tls-key-file go together", file=sys.stderr)
        return 2
    if settings.tls_cert_file and settings.tls_key_file and (bad := check_pair(settings.tls_cert_file,
                                                                                settings.tls_key_file)):
        print(f"error: {bad}", file=sys.stderr)
        return 2
    os.environ.update(settings.to_env())
    setup_logging(settings.log_level.upper())
    tls = {"ssl_certfile": settings.tls_cert_file, "ssl_keyfile": settings.tls_key_file,
           "ssl_context_factory": reloading_context} if settings.tls_cert_file else {}
    uvicorn.run("app.service.serve:app_from_env", factory=True, host=settings.host, port=settings.port,
                workers=settings.workers if settings.workers > 1 else None, log_config=None, access_log=False,
                log_level="warning", proxy_headers=False, server_header=False, loop=event_loop(settings),
                timeout_graceful_shutdown=settings.shutdown_timeout,  # SIGTERM: open requests get this long
                http="app.service.protocol:NoDelayHTTPProtocol", **tls)
    return 0
