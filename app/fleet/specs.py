"""Where clusters come from: flags, kubeconfig contexts, labelled Secrets, each as a ClusterSpec.

A spec is what it takes to connect (a kubeconfig path and a context; for a Secret, only the
fields secret_kubeconfig.validate accepted) plus a digest of exactly that, so a Secret edited with new
credentials is seen as a new connection
and one touched without a change is not.  Specs hold credentials: they are never rendered;
only the name, origin, context and server URL are shown, and `redact()` scrubs any credential
value from a message before it reaches a response, a log line or a metric.
"""

from __future__ import annotations

import base64
import hashlib
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson
import yaml

from .secret_kubeconfig import InlineConfig, RefusedKubeconfig, validate

HOME = "in-cluster"  # the local cluster's name unless renamed (--cluster-name)
SECRET_LABEL = "workload-map.dev/cluster=true"
NAME_RE = re.compile(r"^[a-z0-9]([-a-z0-9.]{0,61}[a-z0-9])?$")
# kubeconfig fields that are credentials (their values are redacted wherever they could leak)
_SECRET_FIELDS = (
    "token",
    "password",
    "client-key-data",
    "client-certificate-data",
    "client-key",
    "id-token",
    "refresh-token",
    "access-token",
    "client-secret",
)


class SpecError(ValueError):
    """A cluster that cannot be registered as given (the message is safe to show)."""


@dataclass(frozen=True)
class ClusterSpec:
    name: str
    origin: str  # home | flag | context | secret
    kubeconfig: str | None = None  # a kubeconfig file (None: $KUBECONFIG / ~/.kube/config, or in-cluster)
    # a Secret's connection: the validated fields only (its kubeconfig never reaches the loader)
    inline: InlineConfig | None = field(default=None, compare=False, repr=False)
    context: str | None = None
    digest: str = ""  # of the connection (file contents or document, context): changes mean reconnect
    source: str = ""  # where it was declared (a Secret's namespace/name), shown as origin detail

    def __post_init__(self) -> None:
        # A Secret's spec without its validated connection would fall back to the pod's own
        # kubeconfig or service account; an operator's spec never takes the Secret path.
        if (self.origin == "secret") != (self.inline is not None):
            raise ValueError(
                f"cluster {self.name}: only a Secret's spec holds an inline connection, and it always does"
            )

    def server(self) -> str | None:
        """The API server URL the spec points at (not a credential), when it can be read."""
        if self.inline is not None:
            return self.inline.server
        doc = _read(self.kubeconfig)
        if not isinstance(doc, dict):
            return None
        ctx = _context(doc, self.context)
        cluster_name = (ctx or {}).get("cluster")
        for c in doc.get("clusters") or []:
            if isinstance(c, dict) and c.get("name") == cluster_name:
                return str((c.get("cluster") or {}).get("server") or "") or None
        return None

    def secrets(self) -> list[str]:
        """Every credential value in the spec's kubeconfig (for redaction)."""
        if self.inline is not None:
            return self.inline.credentials()
        doc = _read(self.kubeconfig)
        out: list[str] = []

        def walk(v: Any) -> None:
            if isinstance(v, dict):
                for k, x in v.items():
                    if k in _SECRET_FIELDS and isinstance(x, str) and len(x) >= 6:
                        out.append(x)
                    else:
                        walk(x)
            elif isinstance(v, list):
                for x in v:
                    walk(x)

        walk(doc)
        return out


def check_name(name: str, where: str) -> str:
    if not NAME_RE.match(name):
        raise SpecError(
            f"{where}: cluster name {name!r} is not a DNS label/subdomain (lowercase letters, digits, '-' and '.')"
        )
    return name


def _digest(*parts: Any) -> str:
    return hashlib.sha256(orjson.dumps(parts, option=orjson.OPT_SORT_KEYS)).hexdigest()[:16]


def _read(path: str | None) -> Any:
    if not path:
        return None
    try:
        return yaml.safe_load(Path(path).read_text())
    except (OSError, yaml.YAMLError):
        return None


def _context(doc: dict[str, Any], name: str | None) -> dict[str, Any] | None:
    name = name or doc.get("current-context")
    for c in doc.get("contexts") or []:
        if isinstance(c, dict) and c.get("name") == name:
            return c.get("context") or {}
    return None


def kubeconfig_paths(kubeconfig: str | None) -> list[str]:
    return (
        [kubeconfig]
        if kubeconfig
        else [p for p in os.environ.get("KUBECONFIG", "").split(os.pathsep) if p] or [str(Path.home() / ".kube/config")]
    )


def contexts(kubeconfig: str | None) -> tuple[list[str], str | None]:
    """Every context of a kubeconfig (merged as kubectl merges $KUBECONFIG), and the current one."""
    names: list[str] = []
    current: str | None = None
    for p in kubeconfig_paths(kubeconfig):
        doc = _read(p)
        if not isinstance(doc, dict):
            continue
        current = current or doc.get("current-context")
        for c in doc.get("contexts") or []:
            if isinstance(c, dict) and c.get("name") and c["name"] not in names:
                names.append(str(c["name"]))
    return names, current


def _file_digest(path: str | None, context: str | None) -> str:
    try:
        data = Path(path).read_bytes() if path else b""
    except OSError:
        data = b""
    return _digest(hashlib.sha256(data).hexdigest(), path, context)


def from_flag(value: str) -> ClusterSpec:
    """`NAME=KUBECONFIG[#CONTEXT]` (--cluster)."""
    name, sep, rest = value.partition("=")
    if not sep or not name or not rest:
        raise SpecError(f"--cluster {value!r}: expected NAME=KUBECONFIG[#CONTEXT]")
    path, _, context = rest.partition("#")
    check_name(name, "--cluster")
    if not Path(path).expanduser().is_file():
        raise SpecError(f"--cluster {name}: no kubeconfig file at {path}")
    path = str(Path(path).expanduser())
    return ClusterSpec(
        name, "flag", kubeconfig=path, context=context or None, digest=_file_digest(path, context or None)
    )


def from_contexts(kubeconfig: str | None) -> list[ClusterSpec]:
    """One cluster per context (--kubeconfig-contexts all), named after the context."""
    names, _ = contexts(kubeconfig)
    if not names:
        raise SpecError(f"--kubeconfig-contexts all: no contexts in {', '.join(kubeconfig_paths(kubeconfig))}")
    out = []
    for n in names:
        cluster = n.lower()
        if not NAME_RE.match(cluster):
            cluster = re.sub(r"[^a-z0-9.-]+", "-", cluster).strip("-.")[:63] or "context"
        out.append(
            ClusterSpec(cluster, "context", kubeconfig=kubeconfig, context=n, digest=_file_digest(kubeconfig, n))
        )
    return out


def home(name: str | None, kubeconfig: str | None, in_pod: bool) -> ClusterSpec:
    """The service's own cluster: `--kubeconfig`'s current context, or the pod's service account."""
    if name is None:
        if kubeconfig or not in_pod:
            _, current = contexts(kubeconfig)
            name = (current or HOME).lower()
            if not NAME_RE.match(name):
                name = re.sub(r"[^a-z0-9.-]+", "-", name).strip("-.")[:63] or HOME
        else:
            name = HOME
    check_name(name, "--cluster-name")
    return ClusterSpec(name, "home", kubeconfig=kubeconfig, digest=_file_digest(kubeconfig, None))


def from_secret(secret: dict[str, Any], *, allow_insecure: bool = False) -> ClusterSpec:
    """A Secret labelled workload-map.dev/cluster=true: `kubeconfig` (required), `context` and
    `name` (default: the Secret's name) in its data.  The kubeconfig is data: only inline
    credentials and an https server (secret_kubeconfig.validate), `insecure-skip-tls-verify`
    only with `allow_insecure` (--cluster-secret-allow-insecure)."""
    meta = secret.get("metadata") or {}
    where = f"Secret {meta.get('namespace')}/{meta.get('name')}"
    data = {
        **{k: _b64(v, where, k) for k, v in (secret.get("data") or {}).items()},
        **{k: str(v) for k, v in (secret.get("stringData") or {}).items()},
    }
    text = data.get("kubeconfig")
    if not text:
        raise SpecError(f"{where}: no `kubeconfig` key in its data")
    try:
        doc = yaml.safe_load(text)
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        at = f" (line {mark.line + 1})" if mark is not None else ""
        raise SpecError(f"{where}: `kubeconfig` is not valid YAML{at}") from None
    if not isinstance(doc, dict) or not doc.get("clusters"):
        raise SpecError(f"{where}: `kubeconfig` is not a kubeconfig (no clusters)")
    context = (data.get("context") or "").strip() or None
    if context is not None and _context(doc, context) is None:
        raise SpecError(f"{where}: the kubeconfig has no context {context!r}")
    if context is None and _context(doc, None) is None:
        raise SpecError(f"{where}: the kubeconfig has no current-context; set `context`")
    name = check_name((data.get("name") or str(meta.get("name") or "")).strip(), where)
    try:
        inline = validate(doc, context, allow_insecure=allow_insecure)
    except RefusedKubeconfig as e:
        raise SpecError(f"{where}: {e}") from None
    digest = _digest(
        {k: base64.b64encode(v).decode() if isinstance(v, bytes) else v for k, v in vars(inline).items()}, context
    )
    return ClusterSpec(
        name,
        "secret",
        inline=inline,
        context=context,
        digest=digest,
        source=f"{meta.get('namespace')}/{meta.get('name')}",
    )


def _b64(v: Any, where: str, key: str) -> str:
    try:
        return base64.b64decode(str(v)).decode()
    except (ValueError, UnicodeDecodeError):
        raise SpecError(f"{where}: data key {key!r} is not base64-encoded UTF-8") from None


def redact(message: str, spec: ClusterSpec | None) -> str:
    """The message with every credential of the spec replaced (error texts of the client library
    may quote parts of a kubeconfig)."""
    if spec is not None:
        for s in sorted(spec.secrets(), key=len, reverse=True):
            message = message.replace(s, "<redacted>")
    return re.sub(r"(?i)(bearer\s+)[A-Za-z0-9._~+/=-]{6,}", r"\1<redacted>", message)
