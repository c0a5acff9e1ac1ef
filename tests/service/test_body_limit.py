"""Oversized bodies over real sockets: every ordinary client reads the 413 problem (no reset, no
broken pipe), and a client that never stops sending is cut at the drain bound.

The server answers 413 as soon as the declared (or streamed) size passes --max-body-bytes, then
reads and discards the rest of the body, up to DRAIN_BYTES and DRAIN_SECONDS, before it
closes ("lingering close", as nginx does). Without that the connection was closed with the
client's data still unread, the kernel answered with a reset, and clients that send the whole
body before reading (urllib, http.client, requests) got ECONNRESET/EPIPE instead of the 413."""

from __future__ import annotations

import http.client
import json
import select
import socket
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from urllib.parse import urlsplit

import httpx
import pytest

from app.service.middleware import DRAIN_BYTES, DRAIN_SECONDS
from app.service.models import Problem

from .conftest import Server

MIB = 1024 * 1024
TRIES = 20
BLOCK = 64 * 1024
HEAD = b'{"apiVersion": "v1", "kind": "Pod", "pad": "'
TAIL = b'"}'
BODY = HEAD + b"x" * (4 * MIB - len(HEAD) - len(TAIL)) + TAIL  # 4 MiB, over the 3 MiB limit


def blocks(body: bytes = BODY) -> Iterator[bytes]:
    for i in range(0, len(body), BLOCK):
        yield body[i:i + BLOCK]


def check_413(status: int, ctype: str, raw: bytes) -> None:
    assert status == 413, (status, raw[:200])
    assert ctype.startswith("application/problem+json"), ctype
    body = json.loads(raw)
    Problem.model_validate(body)
    assert body["status"] == 413 and body["type"].endswith("body-too-large"), body


def rss_mb(pid: int) -> float:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    raise AssertionError("no VmRSS")


def tries(one) -> list[str]:
    """Run `one()` TRIES times; the failures, as 'try n: error'."""
    failures = []
    for n in range(TRIES):
        try:
            one()
        except (OSError, http.client.HTTPException) as e:  # resets, broken pipes, bad status lines
            failures.append(f"try {n}: {type(e).__name__}: {e}")
    return failures


def test_urllib_with_content_length_reads_the_413_every_time(server: Server) -> None:
    def one() -> None:
        req = urllib.request.Request(server.url + "/interpret", data=BODY, method="POST",
                                     headers={"content-type": "application/json"})
        try:
            with urllib.request.urlopen(req, timeout=30) as r:
                raise AssertionError(f"expected 413, got {r.status}")
        except urllib.error.HTTPError as e:
            assert e.headers["connection"] == "close"
            check_413(e.code, e.headers["content-type"], e.read())

    failures = tries(one)
    assert not failures, f"{len(failures)}/{TRIES} tries did not read the 413: {failures[:3]}"


def _http_client(server: Server, chunked: bool, body: bytes = BODY) -> None:
    u = urlsplit(server.url)
    conn = http.client.HTTPConnection(u.hostname, u.port, timeout=30)
    try:
        conn.putrequest("POST", "/interpret")
        conn.putheader("content-type", "application/json")
        if chunked:
            conn.putheader("transfer-encoding", "chunked")
        else:
            conn.putheader("content-length", str(len(body)))
        conn.endheaders()
        for block in blocks(body):
            conn.send(b"%x\r\n%s\r\n" % (len(block), block) if chunked else block)
        if chunked:
            conn.send(b"0\r\n\r\n")
        r = conn.getresponse()
        assert r.getheader("connection") == "close"
        check_413(r.status, r.getheader("content-type", ""), r.read())
    finally:
        conn.close()


def test_http_client_sending_in_blocks_reads_the_413_every_time(server: Server) -> None:
    failures = tries(lambda: _http_client(server, chunked=False))
    assert not failures, f"{len(failures)}/{TRIES} tries did not read the 413: {failures[:3]}"


@pytest.mark.parametrize("mib", [4, 8])
def test_chunked_oversized_body_reads_the_413_every_time(server: Server, mib: int) -> None:
    body = HEAD + b"x" * (mib * MIB - len(HEAD) - len(TAIL)) + TAIL
    failures = tries(lambda: _http_client(server, chunked=True, body=body))
    assert not failures, f"{len(failures)}/{TRIES} tries did not read the 413: {failures[:3]}"


def test_requests_reads_the_413_every_time(server: Server) -> None:
    import requests  # a test dependency (pyproject's `test` extra): missing, this fails

    def one() -> None:
        try:
            r = requests.post(server.url + "/interpret", data=BODY, timeout=30,
                              headers={"content-type": "application/json"})
        except requests.ConnectionError as e:
            raise ConnectionError(str(e)) from e
        check_413(r.status_code, r.headers.get("content-type", ""), r.content)

    failures = tries(one)
    assert not failures, f"{len(failures)}/{TRIES} tries did not read the 413: {failures[:3]}"


def _send_forever(server: Server, pause: float, chunked: bool) -> tuple[float, int, bytes]:
    """Send an endless body (declared as 1 GiB, or chunked) until the server cuts the connection.
    Returns (seconds until cut, bytes of body sent, what was read back meanwhile)."""
    u = urlsplit(server.url)
    sock = socket.create_connection((u.hostname, u.port), timeout=5)
    framing = b"transfer-encoding: chunked" if chunked else b"content-length: %d" % (1024 * MIB)
    sock.sendall(b"POST /interpret HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\n"
                 + framing + b"\r\n\r\n")
    block = b"x" * BLOCK
    data = b"%x\r\n%s\r\n" % (len(block), block) if chunked else block
    sent, answer, started = 0, b"", time.monotonic()
    try:
        while time.monotonic() - started < 60:
            if select.select([sock], [], [], 0)[0]:
                got = sock.recv(65536)
                if not got:
                    break  # the server closed its side
                answer += got
            sock.sendall(data)  # raises once the server has closed the connection
            sent += BLOCK
            if pause and sent > len(BODY):  # slow only once past the limit (the drain has begun)
                time.sleep(pause)
        else:
            raise AssertionError(f"the server still reads after 60 s ({sent} bytes)")
    except (ConnectionResetError, BrokenPipeError):
        pass
    finally:
        sock.close()
    return time.monotonic() - started, sent, answer


@pytest.mark.parametrize("chunked", [False, True], ids=["content-length", "chunked"])
def test_client_sending_forever_is_cut_at_the_drain_bound(server: Server, chunked: bool) -> None:
    before = rss_mb(server.proc.pid)
    # Fast: the byte bound ends it (loopback moves DRAIN_BYTES in well under a second).
    elapsed, sent, answer = _send_forever(server, pause=0, chunked=chunked)
    assert sent < DRAIN_BYTES + 16 * MIB, sent  # the bound, plus what socket buffers hold
    assert elapsed < DRAIN_SECONDS + 2, elapsed
    if answer:  # the 413 is sent before the drain; a reset may discard it before it is read
        assert answer.startswith(b"HTTP/1.1 413"), answer[:100]
    # Slow (~1.3 MB/s, DRAIN_BYTES would take ~13 s): the time bound ends it.
    elapsed, sent, _ = _send_forever(server, pause=0.05, chunked=chunked)
    assert DRAIN_SECONDS - 1 < elapsed < DRAIN_SECONDS + 3, elapsed
    assert sent < DRAIN_BYTES, sent
    with httpx.Client(base_url=server.url, timeout=10) as c:
        assert c.get("/healthz").status_code == 200
    assert rss_mb(server.proc.pid) - before < 20, "the server buffered the discarded body"


def test_server_stays_healthy_and_flat_after_many_oversized_bodies(server: Server) -> None:
    before = rss_mb(server.proc.pid)
    for _ in range(5):
        for chunked in (False, True):
            try:
                _http_client(server, chunked)
            except OSError:
                pass  # counted by the tests above; here only the server's state matters
    with httpx.Client(base_url=server.url, timeout=10) as c:
        assert c.get("/healthz").status_code == 200
        r = c.post("/interpret", content=HEAD + b"x" * 1000 + TAIL, headers={"content-type": "application/json"})
        assert r.status_code != 413, r.text
    assert rss_mb(server.proc.pid) - before < 20, "the server buffered the discarded bodies"
