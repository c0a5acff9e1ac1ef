"""The HTTP protocol sets TCP_NODELAY on every accepted connection, whichever loop runs it.

asyncio's loop leaves Nagle on for sockets accepted from a listener created with proto 0 (as
uvicorn's are); a response written as headers then body then waits for the client's delayed
ACK, ~40 ms a request.  The control (uvicorn's own protocol on the same listener) shows the
condition is real on this kernel, so the test of ours can fail."""

from __future__ import annotations

import asyncio
import socket

import pytest
import uvicorn
from uvicorn.protocols.http.auto import AutoHTTPProtocol
from uvicorn.server import ServerState

from app.service.protocol import NoDelayHTTPProtocol


async def _app(scope: dict, receive: object, send: object) -> None:  # pragma: no cover - never called
    raise AssertionError


async def _accepted_nodelay(protocol: type[asyncio.Protocol]) -> int:
    loop = asyncio.get_running_loop()
    config = uvicorn.Config(_app, loop="asyncio", lifespan="off")
    config.load()
    made: list[asyncio.Protocol] = []

    def factory() -> asyncio.Protocol:
        p = protocol(config=config, server_state=ServerState(), app_state={})  # type: ignore[call-arg]
        made.append(p)
        return p

    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)  # proto 0, as uvicorn binds it
    listener.bind(("127.0.0.1", 0))
    server = await loop.create_server(factory, sock=listener)
    try:
        _, writer = await asyncio.open_connection(*listener.getsockname())
        while not made:
            await asyncio.sleep(0.01)
        sock = made[0].transport.get_extra_info("socket")  # type: ignore[attr-defined]
        value = sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY)
        writer.close()
        return value
    finally:
        server.close()


@pytest.mark.parametrize(("protocol", "nodelay"), [(NoDelayHTTPProtocol, True), (AutoHTTPProtocol, False)])
def test_accepted_connections_have_nodelay(protocol: type[asyncio.Protocol], nodelay: bool) -> None:
    assert bool(asyncio.run(_accepted_nodelay(protocol))) is nodelay
