"""uvicorn's HTTP protocol, with TCP_NODELAY on every connection.

uvloop sets TCP_NODELAY on each TCP transport; asyncio's loop does so only for sockets whose
`proto` is IPPROTO_TCP, and the sockets uvicorn listens on (so the ones they accept) have
proto 0.  Without it, a response written as headers then body waits on Nagle for the client's
delayed ACK: measured on asyncio's loop, 44 ms per POST /interpret (360 req/s at 16
connections against 2,900 on uvloop; BENCHMARKS.md, "Event loop")."""

from __future__ import annotations

import asyncio
import contextlib
import socket

from uvicorn.protocols.http.auto import AutoHTTPProtocol


def set_nodelay(transport: asyncio.BaseTransport) -> None:
    sock = transport.get_extra_info("socket")
    if sock is not None and sock.family in (socket.AF_INET, socket.AF_INET6):
        with contextlib.suppress(OSError):
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)


class NoDelayHTTPProtocol(AutoHTTPProtocol):  # type: ignore[misc,valid-type]
    def connection_made(self, transport: asyncio.Transport) -> None:
        set_nodelay(transport)
        super().connection_made(transport)
