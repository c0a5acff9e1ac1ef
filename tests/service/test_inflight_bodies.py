"""Bodies are held whole while their request runs: what all requests in progress hold together
is bounded (--max-inflight-body-bytes → 503 with Retry-After), and so is the time one body may
take to arrive (--body-read-timeout → 408), so neither many senders nor slow ones can make the
service hold memory at will (issue 21).  Over real sockets, against a real server."""

from __future__ import annotations

import socket
from collections.abc import Iterator

import httpx
import pytest

from .conftest import ROOT, Server

# a catalog workload (in-process, no worker to wait for), padded with a YAML comment
JOBSET_YAML = (ROOT / "definitions" / "jobset.x-k8s.io" / "JobSet" / "v1alpha2" / "testdata" / "running.yaml").read_text()

KB = 1024


@pytest.fixture(scope="module")
def budgeted() -> Iterator[Server]:
    s = Server("--max-body-bytes", str(400 * KB), "--max-inflight-body-bytes", str(600 * KB),
               "--body-read-timeout", "2")
    yield s
    s.stop()


def _slow_sender(server: Server, declared: int, sent: int) -> socket.socket:
    """A POST that declares `declared` bytes, sends `sent` of them, and then waits."""
    sock = socket.create_connection(("127.0.0.1", server.port), timeout=20)
    sock.sendall(f"POST /interpret HTTP/1.1\r\nHost: x\r\nContent-Type: application/yaml\r\n"
                 f"Content-Length: {declared}\r\n\r\n".encode() + b"#" * sent)
    return sock


def _status(sock: socket.socket) -> int:
    data = b""
    while b"\r\n" not in data:
        chunk = sock.recv(4096)
        if not chunk:
            break
        data += chunk
    return int(data.split()[1])


def _post(server: Server, size: int) -> httpx.Response:
    body = JOBSET_YAML.encode() + b"\n#" + b"p" * (size - len(JOBSET_YAML) - 2)
    return httpx.post(server.url + "/interpret", content=body, headers={"content-type": "application/yaml"},
                      timeout=20)


def test_bodies_in_progress_are_bounded_together(budgeted: Server) -> None:
    first = _slow_sender(budgeted, 390 * KB, 350 * KB)  # held by the server while the rest is awaited
    try:
        # its 350 KB are now held (polled: the server reads what arrives): 300 KB more is over 600 KB
        for _ in range(100):
            r = _post(budgeted, 300 * KB)
            if r.status_code == 503:
                break
        assert r.status_code == 503, r.text
        assert r.headers["content-type"] == "application/problem+json" and r.headers["retry-after"] == "1"
        assert r.json()["type"].endswith("busy")
        assert _post(budgeted, 100 * KB).status_code == 200  # what fits still passes
    finally:
        first.close()
    for _ in range(100):  # the dropped sender's bytes are let go
        r = _post(budgeted, 300 * KB)
        if r.status_code != 503:
            break
    assert r.status_code == 200, r.text


def test_a_body_that_does_not_arrive_in_time_is_a_408(budgeted: Server) -> None:
    slow = _slow_sender(budgeted, 300 * KB, 10 * KB)
    try:
        slow.settimeout(15)
        assert _status(slow) == 408
    finally:
        slow.close()
    assert _post(budgeted, 300 * KB).status_code == 200  # nothing of it is still held
