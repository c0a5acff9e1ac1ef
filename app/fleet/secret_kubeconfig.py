"""A cluster Secret's kubeconfig is data, never a program.

Anyone who may edit a Secret in the service namespace writes these kubeconfigs, so they are not
trusted like the operator's own files (flags and mounted files keep kubernetes-asyncio's full
kubeconfig support).  `validate` accepts, for the entries the chosen context names, only an
allow-list of keys: an `https://` server, inline credentials (`token`, or
`client-certificate-data` with `client-key-data`), `certificate-authority-data`,
`tls-server-name`, and `insecure-skip-tls-verify: true` only when the operator allows it.
Everything else is refused with a reason that names the field, never its value: `exec` would
run a command in the pod, `tokenFile` would send a local file (the pod's own token) to the
Secret's server, `auth-provider` calls any URL, file paths read the pod's files, proxies route
the credentials elsewhere, and a key unknown today may carry behaviour in a later library.

`connect` then builds the client from the validated fields alone: the document never reaches
kubernetes-asyncio's kubeconfig loader, so none of its file, exec or provider handling can run.
"""

from __future__ import annotations

import base64
import binascii
import os
import re
import tempfile
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from ..cluster.kube import Kube

ALLOW_INSECURE_FLAG = "--cluster-secret-allow-insecure"

# The keys a Secret's entries may hold (`extensions` is tooling metadata: accepted, never read).
CLUSTER_KEYS = frozenset(
    {"server", "certificate-authority-data", "tls-server-name", "insecure-skip-tls-verify", "extensions"}
)
USER_KEYS = frozenset({"token", "client-certificate-data", "client-key-data", "extensions"})
CONTEXT_KEYS = frozenset({"cluster", "user", "namespace", "extensions"})

# Why a known key is refused (any other key outside the allow-list: "not supported").
_REFUSED = {
    "exec": "it would run a command in the service's pod",
    "auth-provider": "it would call an identity provider (any URL) to refresh credentials",
    "tokenFile": "it would read a file of the service's pod and send it to the server",
    "token-file": "it would read a file of the service's pod and send it to the server",
    "client-certificate": "it is a file path of the service's pod; inline the PEM as client-certificate-data",
    "client-key": "it is a file path of the service's pod; inline the PEM as client-key-data",
    "certificate-authority": "it is a file path of the service's pod; inline the PEM as certificate-authority-data",
    "username": "basic authentication is not accepted; use a token or a client certificate",
    "password": "basic authentication is not accepted; use a token or a client certificate",
    "proxy-url": "it would send the connection (and its credentials) through another host",
}
_PRINTABLE = re.compile(r"^[\x21-\x7e]+$")  # a bearer token: visible ASCII, no spaces or line breaks


class RefusedKubeconfig(ValueError):
    """The kubeconfig holds something a cluster Secret may not (the message names the field only)."""


@dataclass(frozen=True)
class InlineConfig:
    """Everything the service uses of a Secret's kubeconfig (the digest and the redaction read it)."""

    server: str
    token: str | None = None
    client_certificate: bytes | None = None  # PEM (decoded client-certificate-data)
    client_key: bytes | None = None  # PEM (decoded client-key-data)
    certificate_authority: bytes | None = None  # PEM (decoded certificate-authority-data)
    tls_server_name: str | None = None
    insecure: bool = False

    def credentials(self) -> list[str]:
        """The values to redact wherever a message could quote them."""
        out = [self.token or ""]
        for pem in (self.client_certificate, self.client_key):
            if pem:
                out += [pem.decode(errors="replace"), base64.b64encode(pem).decode()]
        return [s for s in out if len(s) >= 6]


def _entry(doc: dict[str, Any], section: str, name: Any, body: str) -> dict[str, Any] | None:
    for e in doc.get(section) or []:
        if isinstance(e, dict) and e.get("name") == name:
            inner = e.get(body)
            if inner is None:
                return {}
            if not isinstance(inner, dict):
                raise RefusedKubeconfig(f"{section}[{_label(name)}].{body} is not a mapping")
            return inner
    return None


def _label(name: Any) -> str:
    s = str(name)
    return s if len(s) <= 63 else s[:60] + "..."


def _check_keys(entry: dict[str, Any], allowed: frozenset[str], path: str) -> None:
    for key in entry:
        if key not in allowed:
            why = _REFUSED.get(str(key)) or f"not supported in a cluster Secret (allowed: {', '.join(sorted(allowed))})"
            raise RefusedKubeconfig(f"{path}.{_label(key)} is refused: {why}")


def _pem(entry: dict[str, Any], key: str, path: str) -> bytes | None:
    v = entry.get(key)
    if v is None:
        return None
    if not isinstance(v, str) or not v.strip():
        raise RefusedKubeconfig(f"{path}.{key} is not a base64 string")
    try:
        data = base64.b64decode(v.strip(), validate=True)
    except (binascii.Error, ValueError):
        raise RefusedKubeconfig(f"{path}.{key} is not valid base64") from None
    if b"-----BEGIN " not in data:
        raise RefusedKubeconfig(f"{path}.{key} does not hold a PEM block")
    return data


def validate(doc: dict[str, Any], context: str | None, *, allow_insecure: bool = False) -> InlineConfig:
    """The connection the Secret's kubeconfig describes for `context` (default: current-context),
    or RefusedKubeconfig naming the first field a cluster Secret may not hold."""
    ctx_name = context or doc.get("current-context")
    ctx = _entry(doc, "contexts", ctx_name, "context")
    if ctx is None:
        raise RefusedKubeconfig(f"the kubeconfig has no context {_label(ctx_name)!r}")
    ctx_path = f"contexts[{_label(ctx_name)}].context"
    _check_keys(ctx, CONTEXT_KEYS, ctx_path)

    cluster = _entry(doc, "clusters", ctx.get("cluster"), "cluster")
    if cluster is None:
        raise RefusedKubeconfig(f"{ctx_path}.cluster names no entry of clusters")
    cpath = f"clusters[{_label(ctx.get('cluster'))}].cluster"
    _check_keys(cluster, CLUSTER_KEYS, cpath)
    server = cluster.get("server")
    if not isinstance(server, str):
        raise RefusedKubeconfig(f"{cpath}.server is missing")
    try:
        url = urlsplit(server.strip())
        host = url.hostname
        url.port  # noqa: B018 - raises on a port that is not a number
    except ValueError:
        raise RefusedKubeconfig(f"{cpath}.server is not a URL") from None
    if url.scheme != "https":
        raise RefusedKubeconfig(
            f"{cpath}.server is refused: it must be an https:// URL (credentials are never sent in clear text)"
        )
    if not host or url.username is not None or url.password is not None or url.query or url.fragment:
        raise RefusedKubeconfig(f"{cpath}.server must be https://HOST[:PORT][/PATH], without user, query or fragment")
    insecure = cluster.get("insecure-skip-tls-verify", False)
    if not isinstance(insecure, bool):
        raise RefusedKubeconfig(f"{cpath}.insecure-skip-tls-verify is not true or false")
    if insecure and not allow_insecure:
        raise RefusedKubeconfig(
            f"{cpath}.insecure-skip-tls-verify is refused: the server's certificate "
            f"would not be checked (the operator can allow it: {ALLOW_INSECURE_FLAG} true)"
        )
    sni = cluster.get("tls-server-name")
    if sni is not None and (not isinstance(sni, str) or not re.fullmatch(r"[A-Za-z0-9.-]{1,253}", sni)):
        raise RefusedKubeconfig(f"{cpath}.tls-server-name is not a host name")

    user_name = ctx.get("user")
    user = _entry(doc, "users", user_name, "user") if user_name else {}
    if user is None:
        raise RefusedKubeconfig(f"{ctx_path}.user names no entry of users")
    upath = f"users[{_label(user_name)}].user"
    _check_keys(user, USER_KEYS, upath)
    token = user.get("token")
    if token is not None and (not isinstance(token, str) or not _PRINTABLE.match(token)):
        raise RefusedKubeconfig(f"{upath}.token is not a bearer token (visible ASCII characters only)")
    cert, key = _pem(user, "client-certificate-data", upath), _pem(user, "client-key-data", upath)
    if (cert is None) != (key is None):
        raise RefusedKubeconfig(f"{upath}: client-certificate-data and client-key-data go together")
    return InlineConfig(
        server=server.strip().rstrip("/"),
        token=token,
        client_certificate=cert,
        client_key=key,
        certificate_authority=_pem(cluster, "certificate-authority-data", cpath),
        tls_server_name=sni,
        insecure=insecure,
    )


async def connect(cfg: InlineConfig, *, request_timeout: float = 30.0) -> Kube:
    """A client built from the validated fields only (no kubeconfig loader).  The PEM blocks go
    through a private temporary directory that is gone before this returns: the TLS context reads
    them when the client is made."""
    from kubernetes_asyncio import client

    conf = client.Configuration(host=cfg.server)
    conf.verify_ssl = not cfg.insecure
    conf.tls_server_name = cfg.tls_server_name
    conf.proxy = None
    if cfg.token:
        conf.api_key["BearerToken"] = f"Bearer {cfg.token}"
    with tempfile.TemporaryDirectory(prefix="wlmap-cluster-") as d:
        for attr, pem in (
            ("ssl_ca_cert", cfg.certificate_authority),
            ("cert_file", cfg.client_certificate),
            ("key_file", cfg.client_key),
        ):
            if pem is not None:
                path = os.path.join(d, attr)
                fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
                with os.fdopen(fd, "wb") as f:
                    f.write(pem)
                setattr(conf, attr, path)
        api = client.ApiClient(configuration=conf)  # its TLS context loads the files now
    for attr in ("ssl_ca_cert", "cert_file", "key_file"):  # nothing later may look for them
        setattr(conf, attr, None)
    return Kube(api, request_timeout=request_timeout)
