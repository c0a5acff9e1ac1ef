"""A real Redis server for the sharded-mode tests: Debian's `redis-server` (installed by
`make tools`), started on a free loopback port with no persistence, like the API server of
tests/cluster/apiserver.py.  It can be stopped and started again on the same port, which is how
the tests take the store away from a running service."""

from __future__ import annotations

import shutil
import socket
import subprocess
import tempfile
import time
from pathlib import Path

from ..needs import require
from ..service.conftest import free_port


class RedisServer:
    def __init__(self, password: str | None = None):
        self.binary = shutil.which("redis-server")
        self.port = free_port()
        self.password = password
        self.dir = Path(tempfile.mkdtemp(prefix="wlmap-redis-"))
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        auth = f":{self.password}@" if self.password else ""
        return f"redis://{auth}127.0.0.1:{self.port}/0"

    def start(self) -> RedisServer:
        require("redis")
        if self.binary is None:
            raise RuntimeError("redis-server is not installed (make tools installs Debian's redis-server)")
        args = [self.binary, "--port", str(self.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
                "--dir", str(self.dir), "--logfile", str(self.dir / "redis.log")]
        if self.password:
            args += ["--requirepass", self.password]
        self.proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.5) as s:
                    s.sendall(b"PING\r\n")
                    if s.recv(64):
                        return self
            except OSError:
                time.sleep(0.05)
        raise RuntimeError(f"redis-server did not start on port {self.port}")

    def stop(self) -> None:
        if self.proc is not None:
            self.proc.kill()
            self.proc.wait(10)
            self.proc = None

    def __enter__(self) -> RedisServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def restart(self) -> None:
        """A restart of the store: everything it held is gone (no persistence), as after a crash."""
        self.stop()
        self.start()
