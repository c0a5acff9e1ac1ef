"""A real `wlmap serve` process on a free loopback port, talked to over real HTTP."""

from __future__ import annotations

import os
import shutil
import socket
import ssl
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from ..consistency import hook

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "tests" / "data" / "examples"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    def __init__(self, *args: str, env: dict[str, str] | None = None, wait: str = "/readyz",
                 ca: str | None = None):
        """`ca`: the server serves HTTPS (--tls-* among `args`) with a certificate this CA signed."""
        self.port = free_port()
        self.url = f"{'https' if ca else 'http'}://127.0.0.1:{self.port}"
        self.verify: ssl.SSLContext | bool = ssl.create_default_context(cafile=ca) if ca else True
        wlmap = Path(sys.executable).parent / "wlmap"
        self.log = open(Path(os.environ.get("TMPDIR", "/tmp")) / f"wlmap-test-{self.port}.log", "w+")
        full_env = {k: v for k, v in os.environ.items() if not k.startswith("WLMAP_")}
        full_env.update(env or {})
        self.proc = subprocess.Popen([str(wlmap), "serve", "--port", str(self.port), *args], stdout=self.log,
                                     stderr=subprocess.STDOUT, env=full_env)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"server exited: {self.output()}")
            try:
                if httpx.get(self.url + wait, timeout=1, verify=self.verify).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            time.sleep(0.1)
        self.stop()
        raise RuntimeError(f"server not ready: {self.output()}")

    def output(self) -> str:
        self.log.flush()
        self.log.seek(0)
        return self.log.read()

    def client(self) -> httpx.Client:
        """A client that reads the test's own writes (it waits for the service's live model to
        have applied them: tests/consistency.py)."""
        return httpx.Client(base_url=self.url, timeout=30, verify=self.verify,
                            event_hooks={"request": [hook(self.url)]})

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
        self.log.close()


@pytest.fixture(scope="session")
def defs_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("defs")
    for f in EXAMPLES.glob("*.yaml"):
        shutil.copy(f, d / f.name)
    return d


@pytest.fixture(scope="session")
def server(defs_dir: Path) -> Iterator[Server]:
    s = Server("--definitions", str(defs_dir), "--eval-deadline", "1", "--max-body-bytes", str(3 * 1024 * 1024))
    yield s
    s.stop()


@pytest.fixture()
def client(server: Server) -> Iterator[httpx.Client]:
    with server.client() as c:
        yield c
