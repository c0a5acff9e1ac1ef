"""HTTPS with certificates that are rotated in place (cert-manager, a mounted Secret).

uvicorn builds its server SSLContext once.  `reloading_context` (uvicorn's
`ssl_context_factory`) adds a servername callback to it, which OpenSSL calls on every
ClientHello, SNI or not: at most once a second it compares the files' stat signature, and when
they changed it builds a *new* context from them and hands that to the connection being
accepted (`SSLObject.context = ...`, the SNI mechanism) and to every later one.  The running
context is never reloaded in place: a failed `load_cert_chain` (a half-written pair whose key
does not match its certificate mid-rotation) leaves an SSLContext half-loaded and refusing
handshakes, so a pair that does not load is logged and the last good one keeps serving.
Everything runs on the event loop's thread, within the handshake; no task, no thread.
"""

from __future__ import annotations

import logging
import os
import ssl
import time
from collections.abc import Callable
from typing import Any

log = logging.getLogger("wlmap.tls")

CHECK_EVERY = 1.0  # seconds between stat checks of the two files


def _signature(*paths: str) -> tuple[tuple[int, int, int], ...]:
    """Changes when a file is rewritten or its Secret-volume symlink is swapped."""
    out = []
    for p in paths:
        st = os.stat(p)
        out.append((st.st_ino, st.st_size, st.st_mtime_ns))
    return tuple(out)


class CertReloader:
    def __init__(self, cert: str, key: str, build: Callable[[], ssl.SSLContext]):
        self.cert, self.key, self.build = cert, key, build
        self.signature = _signature(cert, key)
        self.current = build()  # the first pair must load: the caller reports it and exits
        self._checked = time.monotonic()

    def check(self) -> None:
        now = time.monotonic()
        if now - self._checked < CHECK_EVERY:
            return
        self._checked = now
        try:
            sig = _signature(self.cert, self.key)
        except OSError as e:
            log.warning("TLS: cannot read %s: keeping the current certificate", e)
            return
        if sig == self.signature:
            return
        self.signature = sig  # a pair that fails is tried again only once the files change again
        problem = check_pair(self.cert, self.key)  # never prompts (an encrypted key is refused)
        if problem is None:
            try:
                self.current = self.build()
            except (OSError, ssl.SSLError, ValueError) as e:
                problem = f"{self.cert} / {self.key}: {e}"
        if problem is not None:
            log.warning("TLS: %s; keeping the last good certificate", problem)
            return
        log.info("TLS: certificate reloaded from %s", self.cert)

    def on_hello(self, conn: Any, server_name: str | None, ctx: ssl.SSLContext) -> None:
        self.check()
        if conn.context is not self.current:
            conn.context = self.current


def reloading_context(config: Any, default: Callable[[], ssl.SSLContext]) -> ssl.SSLContext:
    """uvicorn `ssl_context_factory`: its own context (ssl_certfile/ssl_keyfile, its ALPN), which
    from then on hands each connection the newest pair that loaded."""
    reloader = CertReloader(str(config.ssl_certfile), str(config.ssl_keyfile), default)
    front = reloader.current
    front.sni_callback = reloader.on_hello
    return front


def check_pair(cert: str, key: str) -> str | None:
    """Why the pair cannot serve, or None (`wlmap serve` refuses to start on a bad pair)."""
    try:
        # The password callback keeps OpenSSL from asking for one on the terminal.
        ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER).load_cert_chain(cert, key, password=lambda: b"")
    except (OSError, ssl.SSLError) as e:
        return f"--tls-cert-file {cert} / --tls-key-file {key}: {e}"
    return None
