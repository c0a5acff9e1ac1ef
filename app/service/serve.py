"""`wlmap serve`: run the API with uvicorn (settings travel to worker processes as WLMAP_*)."""

from __future__ import annotations

import argparse
import logging
import os

import uvicorn
from fastapi import FastAPI

from .middleware import setup_logging
from .settings import Settings, settings_from_args


def app_from_env() -> FastAPI:
    from .app import create_app

    settings = Settings.from_env()
    setup_logging(settings.log_level.upper())
    unused = [f"--{n}" for n, v in (("kubeconfig", settings.kubeconfig), ("namespace", settings.namespace),
                                    ("configmap-selector", settings.configmap_selector)) if v]
    if unused or settings.auth != "none":
        logging.getLogger("wlmap").warning(
            "cluster features (%s) are not available in this version: serving the built-in catalog and "
            "--definitions folders only", ", ".join(unused + (["--auth kubernetes"] if settings.auth != "none" else [])))
    return create_app(settings)


def serve(args: argparse.Namespace) -> int:
    settings = settings_from_args(args)
    os.environ.update(settings.to_env())
    setup_logging(settings.log_level.upper())
    uvicorn.run("app.service.serve:app_from_env", factory=True, host=settings.host, port=settings.port,
                workers=settings.workers if settings.workers > 1 else None, log_config=None, access_log=False,
                log_level="warning", proxy_headers=False, server_header=False)
    return 0
