"""HTTPS (--tls-cert-file / --tls-key-file) on a real `wlmap serve` with two HTTP workers: the
certificate verifies against the test's CA, a rotation in place (the kubelet's atomic symlink
swap of a Secret volume) reaches new connections without a restart, and a half-written pair
(certificate and key that do not match) keeps the last good one in service."""

from __future__ import annotations

import os
import socket
import ssl
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from ..cluster.util import eventually
from .conftest import Server


def _openssl(*args: str) -> None:
    subprocess.run(["openssl", *args], check=True, capture_output=True)


class Pki:
    """A CA and leaf pairs it signs for 127.0.0.1, each with its own serial number."""

    def __init__(self, root: Path):
        self.root = root
        self.ca = root / "ca.crt"
        _openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", str(root / "ca.key"), "-out",
                 str(self.ca), "-days", "1", "-subj", "/CN=wlmap-test-ca")

    def leaf(self, serial: int) -> tuple[bytes, bytes]:
        key, csr, crt, ext = (self.root / f"{serial}.{x}" for x in ("key", "csr", "crt", "ext"))
        ext.write_text("subjectAltName=IP:127.0.0.1,DNS:localhost\n")
        _openssl("req", "-newkey", "rsa:2048", "-nodes", "-keyout", str(key), "-out", str(csr),
                 "-subj", "/CN=wlmap")
        _openssl("x509", "-req", "-in", str(csr), "-CA", str(self.ca), "-CAkey", str(self.root / "ca.key"),
                 "-set_serial", str(serial), "-days", "1", "-out", str(crt), "-extfile", str(ext))
        return crt.read_bytes(), key.read_bytes()


class SecretVolume:
    """Files laid out as the kubelet mounts a Secret: tls.crt -> ..data/tls.crt, and an update
    writes a new version directory and renames the ..data symlink over the old one."""

    def __init__(self, root: Path):
        self.root = root
        self.version = 0

    def write(self, crt: bytes, key: bytes) -> None:
        self.version += 1
        v = self.root / f"..v{self.version}"
        v.mkdir()
        (v / "tls.crt").write_bytes(crt)
        (v / "tls.key").write_bytes(key)
        tmp = self.root / "..data_tmp"
        os.symlink(v.name, tmp)
        os.replace(tmp, self.root / "..data")
        for f in ("tls.crt", "tls.key"):
            if not (self.root / f).is_symlink():
                os.symlink(f"..data/{f}", self.root / f)

    @property
    def cert(self) -> str:
        return str(self.root / "tls.crt")

    @property
    def key(self) -> str:
        return str(self.root / "tls.key")


def served_serial(port: int, ca: Path) -> int:
    """The serial number of the certificate a new connection is handed (verified against the CA)."""
    ctx = ssl.create_default_context(cafile=str(ca))
    with socket.create_connection(("127.0.0.1", port), timeout=5) as raw, \
            ctx.wrap_socket(raw, server_hostname="127.0.0.1") as tls:
        return int(tls.getpeercert()["serialNumber"], 16)


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Pki:
    return Pki(tmp_path_factory.mktemp("pki"))


@pytest.fixture()
def tls_server(pki: Pki, tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[tuple[Server, SecretVolume]]:
    """asyncio's loop (what a pod talking to its API server runs) unless a test asks for uvloop."""
    vol = SecretVolume(tmp_path)
    vol.write(*pki.leaf(101))
    server = Server("--tls-cert-file", vol.cert, "--tls-key-file", vol.key, "--workers", "2",
                    "--loop", getattr(request, "param", "asyncio"), ca=str(pki.ca))
    try:
        yield server, vol
    finally:
        server.stop()


def all_serve(server: Server, ca: Path, serial: int, n: int = 6) -> bool:
    """n new connections in a row (both workers) are handed `serial`."""
    return all(served_serial(server.port, ca) == serial for _ in range(n))


@pytest.mark.parametrize("tls_server", ["asyncio", "uvloop"], indirect=True)
def test_https_with_a_certificate_rotated_in_place(tls_server: tuple[Server, SecretVolume], pki: Pki) -> None:
    server, vol = tls_server
    assert server.url.startswith("https://")
    r = httpx.get(server.url + "/healthz", verify=server.verify, timeout=10)
    assert r.status_code == 200
    assert served_serial(server.port, pki.ca) == 101
    with pytest.raises(httpx.HTTPError):  # no plain HTTP on the port
        httpx.get(f"http://127.0.0.1:{server.port}/healthz", timeout=5)

    with httpx.Client(base_url=server.url, verify=server.verify, timeout=10) as kept:
        assert kept.get("/healthz").status_code == 200
        vol.write(*pki.leaf(102))
        eventually(lambda: all_serve(server, pki.ca, 102), timeout=15, what="new connections get serial 102")
        assert kept.get("/healthz").status_code == 200  # an open connection is not cut
    assert httpx.get(server.url + "/readyz", verify=server.verify, timeout=10).status_code == 200


def test_a_half_written_pair_keeps_the_last_good_one(tls_server: tuple[Server, SecretVolume], pki: Pki) -> None:
    server, vol = tls_server
    crt_103, key_103 = pki.leaf(103)
    _, key_104 = pki.leaf(104)
    vol.write(crt_103, key_104)  # mid-rotation: the new certificate with a key that is not its own
    eventually(lambda: served_serial(server.port, pki.ca) == 101 and "keeping the last good certificate" in server.output(), timeout=15,
               what="the mismatched pair seen and logged")
    assert all_serve(server, pki.ca, 101)
    assert httpx.get(server.url + "/healthz", verify=server.verify, timeout=10).status_code == 200

    vol.write(crt_103, key_103)  # the rotation completes
    eventually(lambda: all_serve(server, pki.ca, 103), timeout=15, what="new connections get serial 103")


def _serve_fails(*args: str) -> str:
    wlmap = Path(sys.executable).parent / "wlmap"
    env = {k: v for k, v in os.environ.items() if not k.startswith("WLMAP_")}
    r = subprocess.run([str(wlmap), "serve", "--port", "0", *args], check=False, capture_output=True, text=True,
                       timeout=60, env=env)
    assert r.returncode == 2, r.stderr
    return r.stderr


def test_a_bad_pair_or_half_a_pair_is_refused_at_start(pki: Pki, tmp_path: Path) -> None:
    crt, _ = pki.leaf(201)
    _, other_key = pki.leaf(202)
    (tmp_path / "c.pem").write_bytes(crt)
    (tmp_path / "k.pem").write_bytes(other_key)
    err = _serve_fails("--tls-cert-file", str(tmp_path / "c.pem"), "--tls-key-file", str(tmp_path / "k.pem"))
    assert "error: --tls-cert-file" in err and "mismatch" in err.lower()
    err = _serve_fails("--tls-cert-file", str(tmp_path / "c.pem"))
    assert "--tls-cert-file and --tls-key-file go together" in err
    err = _serve_fails("--tls-cert-file", str(tmp_path / "none.pem"), "--tls-key-file", str(tmp_path / "k.pem"))
    assert "none.pem" in err and "Traceback" not in err
    # an encrypted key is refused, not asked for on the terminal
    _openssl("genrsa", "-aes256", "-passout", "pass:secret", "-out", str(tmp_path / "enc.key"), "2048")
    _openssl("req", "-x509", "-key", str(tmp_path / "enc.key"), "-passin", "pass:secret", "-out",
             str(tmp_path / "enc.crt"), "-days", "1", "-subj", "/CN=wlmap")
    err = _serve_fails("--tls-cert-file", str(tmp_path / "enc.crt"), "--tls-key-file", str(tmp_path / "enc.key"))
    assert "enc.key" in err and "Traceback" not in err
