"""Open streams are bounded per caller (--max-streams-per-caller: the authenticated user, else
the client address) and in all (--max-streams): one more is a 429 problem with Retry-After, and a
stream's slot comes back however it ends, a client that just drops its connection included."""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator

import httpx
import pytest

from ..service.conftest import Server
from .apiserver import ApiServer
from .conftest import token
from .fixtures import SERVICE_NS
from .kubeobjects import Kubectl, reader_rbac
from .util import eventually

NS = "stream-limits"


class RawStream:
    """A watch request on a plain socket (from `source`, a loopback address): its status, and
    for a refusal its problem body.  close() drops the connection without a word."""

    def __init__(self, server: Server, path: str, source: str = "127.0.0.1", bearer: str | None = None):
        self.sock = socket.create_connection(("127.0.0.1", server.port), timeout=20, source_address=(source, 0))
        auth = f"Authorization: Bearer {bearer}\r\n" if bearer else ""
        self.sock.sendall(f"GET {path} HTTP/1.1\r\nHost: x\r\n{auth}\r\n".encode())
        data = b""
        while b"\r\n\r\n" not in data:
            chunk = self.sock.recv(65536)
            assert chunk, data
            data += chunk
        head, _, rest = data.partition(b"\r\n\r\n")
        lines = head.decode().split("\r\n")
        self.status = int(lines[0].split()[1])
        self.headers = {k.lower(): v.strip() for k, _, v in (line.partition(":") for line in lines[1:])}
        self.problem = None
        if self.status != 200:
            length = int(self.headers["content-length"])
            while len(rest) < length:
                rest += self.sock.recv(65536)
            self.problem = json.loads(rest[:length])

    def close(self) -> None:
        self.sock.close()


def _open_streams(s: Server) -> int:
    return sum(httpx.get(s.url + "/model", timeout=10).json()["streams"].values())


@pytest.fixture(scope="module")
def limited(apiserver: ApiServer, kubectl: Kubectl) -> Iterator[Server]:
    kubectl.ensure_namespace(NS)
    s = Server("--kubeconfig", str(apiserver.kubeconfig("service")), "--namespace", SERVICE_NS, "--auth", "none",
               "--watch-namespace", NS, "--max-streams-per-caller", "2", "--max-streams", "3")
    eventually(lambda: httpx.get(s.url + "/model", timeout=10).json()["synced"], timeout=30)
    yield s
    s.stop()


def test_per_caller_and_total_limits_and_a_dropped_client_frees_its_slot(limited: Server) -> None:
    path = f"/workloads?watch=true&namespace={NS}"
    a1, a2 = RawStream(limited, path), RawStream(limited, path)
    b1 = None
    try:
        assert (a1.status, a2.status) == (200, 200)
        refused = RawStream(limited, path)
        assert refused.status == 429 and refused.headers["content-type"] == "application/problem+json"
        assert refused.problem["type"].endswith("too-many-streams") and "--max-streams-per-caller" in \
            refused.problem["detail"]
        assert int(refused.headers["retry-after"]) > 0
        refused.close()
        b1 = RawStream(limited, path, source="127.0.0.2")  # another caller: its own allowance ...
        assert b1.status == 200
        b2 = RawStream(limited, path, source="127.0.0.2")  # ... but the process serves 3 at most
        assert b2.status == 429 and "--max-streams)" in b2.problem["detail"]
        b2.close()
        assert _open_streams(limited) == 3

        a1.close()  # dropped, not ended: the server notices and gives the slot back
        eventually(lambda: _open_streams(limited) == 2, timeout=10, what="the dropped stream's slot freed")
        a3 = RawStream(limited, path)
        assert a3.status == 200
        a3.close()
    finally:
        for s in (a1, a2, b1):
            if s is not None:
                s.close()
    eventually(lambda: _open_streams(limited) == 0, timeout=10, what="every slot freed")
    assert all(RawStream(limited, path).status == 200 for _ in range(2))  # the allowance is whole again


@pytest.fixture(scope="module")
def limited_secured(apiserver: ApiServer, kubectl: Kubectl) -> Iterator[Server]:
    kubectl.ensure_namespace(NS)
    for user in ("alice", "carol"):
        for doc in reader_rbac(user, NS, [("jobset.x-k8s.io", "jobsets")]):
            kubectl.apply(doc)
    s = Server("--kubeconfig", str(apiserver.kubeconfig("service")), "--namespace", SERVICE_NS,
               "--auth", "kubernetes", "--karta-resources", "false", "--watch-namespace", NS,
               "--max-streams-per-caller", "1")
    admin = {"Authorization": f"Bearer {token('admin')}"}
    eventually(lambda: httpx.get(s.url + "/model", headers=admin, timeout=10).json()["synced"], timeout=30)
    yield s
    s.stop()


def test_with_authentication_the_caller_is_the_user(limited_secured: Server) -> None:
    """Callers behind one address (a proxy, a node) are told apart by who they are."""
    path = f"/workloads?watch=true&namespace={NS}"
    alice = RawStream(limited_secured, path, bearer=token("alice"))
    carol = None
    try:
        assert alice.status == 200, alice.problem
        again = RawStream(limited_secured, path, bearer=token("alice"))
        assert again.status == 429, again.problem
        again.close()
        carol = RawStream(limited_secured, path, bearer=token("carol"))
        assert carol.status == 200, carol.problem
    finally:
        alice.close()
        if carol is not None:
            carol.close()
