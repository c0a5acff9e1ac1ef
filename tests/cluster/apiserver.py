"""A real etcd + kube-apiserver on loopback for the integration tests.

Binaries come from `scripts/kube-apiserver/build.sh` (built once from Debian's packages and
cached outside the repository).  One pair of processes serves the whole test session; tests
isolate themselves by namespace.  Static bearer tokens give us users with and without RBAC
rights; `restart_apiserver` and `compact` produce the disconnects and 410s the watch code must
survive.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import ssl
import subprocess
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

from ..needs import require

ROOT = Path(__file__).resolve().parents[2]
BUILD = ROOT / "scripts" / "kube-apiserver" / "build.sh"
KUBE_DIR = Path(os.environ.get("WLMAP_KUBE_DIR", Path.home() / ".cache/workload-map/kube-apiserver-v1.20.2"))

# token, user, uid, groups.  admin bypasses RBAC; the others get exactly what tests bind.
TOKENS = {
    "admin": ("test-admin-token", "admin", "system:masters"),
    "service": ("test-service-token", "wlmap-service", ""),
    "alice": ("test-alice-token", "alice", "team-a"),
    "bob": ("test-bob-token", "bob", ""),
    "carol": ("test-carol-token", "carol", ""),
    "dana": ("test-dana-token", "dana", ""),  # the authorization matrix's one-namespace reader
    "erin": ("test-erin-token", "erin", ""),  # reads workloads and ConfigMaps in one namespace (dependencies)
}


def binaries_present() -> bool:
    return (KUBE_DIR / "kube-apiserver").exists() and (KUBE_DIR / "etcd").exists()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class ApiServer:
    def __init__(self, run_dir: Path | None = None):
        self.run = Path(run_dir or tempfile.mkdtemp(prefix="wlmap-kube-"))
        self.etcd_port = _free_port()
        self.peer_port = _free_port()
        self.port = _free_port()
        self.etcd: subprocess.Popen[bytes] | None = None
        self.apiserver: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"https://127.0.0.1:{self.port}"

    @property
    def ca(self) -> Path:
        return self.run / "certs" / "apiserver.crt"

    # -- lifecycle ------------------------------------------------------------------------
    def start(self) -> ApiServer:
        require("kube")
        (self.run / "etcd").mkdir(parents=True, exist_ok=True, mode=0o700)
        (self.run / "certs").mkdir(exist_ok=True)
        with open(self.run / "tokens.csv", "w") as f:
            for token, user, groups in TOKENS.values():
                f.write(f'{token},{user},{user}-uid,"{groups}"\n' if groups else f"{token},{user},{user}-uid\n")
        if not (self.run / "sa.key").exists():
            subprocess.run(["openssl", "genrsa", "-out", str(self.run / "sa.key"), "2048"], check=True,
                           capture_output=True)
            subprocess.run(["openssl", "rsa", "-in", str(self.run / "sa.key"), "-pubout", "-out",
                            str(self.run / "sa.pub")], check=True, capture_output=True)
        self.etcd = subprocess.Popen(
            [str(KUBE_DIR / "etcd"), "--name", "default", "--data-dir", str(self.run / "etcd"),
             "--listen-client-urls", f"http://127.0.0.1:{self.etcd_port}",
             "--advertise-client-urls", f"http://127.0.0.1:{self.etcd_port}",
             "--listen-peer-urls", f"http://127.0.0.1:{self.peer_port}",
             "--initial-advertise-peer-urls", f"http://127.0.0.1:{self.peer_port}",
             "--initial-cluster", f"default=http://127.0.0.1:{self.peer_port}",
             "--logger", "zap", "--log-outputs", "stderr"],
            stdout=open(self.run / "etcd.log", "ab"), stderr=subprocess.STDOUT)
        self.start_apiserver()
        self.write_kubeconfigs()
        return self

    def start_apiserver(self) -> None:
        self.apiserver = subprocess.Popen(
            [str(KUBE_DIR / "kube-apiserver"), "--etcd-servers", f"http://127.0.0.1:{self.etcd_port}",
             "--bind-address", "127.0.0.1", "--advertise-address", "127.0.0.1",
             "--secure-port", str(self.port), "--insecure-port", "0", "--cert-dir", str(self.run / "certs"),
             "--token-auth-file", str(self.run / "tokens.csv"), "--authorization-mode", "RBAC",
             "--service-account-issuer", "https://kubernetes.default.svc",
             "--service-account-key-file", str(self.run / "sa.pub"),
             "--service-account-signing-key-file", str(self.run / "sa.key"),
             "--service-cluster-ip-range", "10.0.0.0/24", "--endpoint-reconciler-type", "none",
             "--disable-admission-plugins", "ServiceAccount", "--profiling=false"],
            stdout=open(self.run / "apiserver.log", "ab"), stderr=subprocess.STDOUT)
        self.wait_ready()

    def stop_apiserver(self) -> None:
        if self.apiserver is not None:
            self.apiserver.terminate()
            try:
                self.apiserver.wait(3)  # graceful shutdown waits for open watches; do not wait that long
            except subprocess.TimeoutExpired:
                self.apiserver.kill()
                self.apiserver.wait()
            self.apiserver = None

    def restart_apiserver(self, down_for: float = 0.0) -> None:
        self.stop_apiserver()
        time.sleep(down_for)
        self.start_apiserver()

    def stop(self, keep_data: bool = False) -> None:
        """Stop both processes and remove the run directory (`keep_data`: leave it, so a later
        start on the same directory finds the same etcd; the benchmarks reuse fills this way)."""
        self.stop_apiserver()
        if self.etcd is not None:
            self.etcd.terminate()
            try:
                self.etcd.wait(15)
            except subprocess.TimeoutExpired:
                self.etcd.kill()
                self.etcd.wait()
            self.etcd = None
        if not keep_data:
            shutil.rmtree(self.run, ignore_errors=True)

    def wait_ready(self, timeout: float = 90.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.apiserver is not None and self.apiserver.poll() is not None:
                break
            try:
                if self.call("GET", "/readyz", raw=True) == b"ok":
                    return
            except (OSError, urllib.error.URLError, ssl.SSLError):
                pass
            time.sleep(0.1)
        log = (self.run / "apiserver.log").read_text(errors="replace")[-4000:]
        raise RuntimeError(f"kube-apiserver did not become ready:\n{log}")

    # -- access ---------------------------------------------------------------------------
    def kubeconfig(self, user: str = "admin") -> Path:
        return self.run / f"kubeconfig-{user}"

    def write_kubeconfigs(self) -> None:
        for user, (token, *_rest) in TOKENS.items():
            self.write_kubeconfig(self.kubeconfig(user), token, user)

    def write_kubeconfig(self, path: Path, token: str, user: str) -> Path:
        doc = {"apiVersion": "v1", "kind": "Config", "current-context": "local",
               "clusters": [{"name": "local", "cluster": {"server": self.url, "certificate-authority": str(self.ca)}}],
               "users": [{"name": user, "user": {"token": token}}],
               "contexts": [{"name": "local", "context": {"cluster": "local", "user": user}}]}
        path.write_text(json.dumps(doc))
        return path

    def _ctx(self) -> ssl.SSLContext:
        if self.ca.exists():
            return ssl.create_default_context(cafile=str(self.ca))
        ctx = ssl.create_default_context()
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE  # only before the server wrote its certificate (startup poll)
        return ctx

    def call(self, method: str, path: str, body: Any = None, *, token: str | None = None, raw: bool = False,
             content_type: str = "application/json") -> Any:
        """One synchronous API call as admin (or another token); raises HTTPError on >= 400."""
        data = None if body is None else (body if isinstance(body, bytes) else json.dumps(body).encode())
        req = urllib.request.Request(self.url + path, data=data, method=method, headers={
            "Authorization": f"Bearer {token or TOKENS['admin'][0]}", "Content-Type": content_type,
            "Accept": "application/json"})
        with urllib.request.urlopen(req, context=self._ctx(), timeout=30) as resp:
            out = resp.read()
        return out if raw else (json.loads(out) if out else None)

    def compact(self) -> int:
        """Compact etcd at its current revision: every older resourceVersion is gone (410)."""
        status = json.loads(urllib.request.urlopen(urllib.request.Request(
            f"http://127.0.0.1:{self.etcd_port}/v3/kv/range", data=b'{"key":"AA=="}', method="POST"),
            timeout=10).read())
        rev = int(status["header"]["revision"])
        urllib.request.urlopen(urllib.request.Request(
            f"http://127.0.0.1:{self.etcd_port}/v3/kv/compaction",
            data=json.dumps({"revision": rev, "physical": True}).encode(), method="POST"), timeout=30).read()
        return rev


def ensure_binaries() -> bool:
    """Build (once, cached) when missing.  Returns whether the binaries are there."""
    if binaries_present():
        return True
    if os.environ.get("WLMAP_KUBE_BUILD", "1") == "0":
        return False
    subprocess.run(["bash", str(BUILD)], check=True)
    return binaries_present()
