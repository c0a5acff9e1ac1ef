"""A cluster Secret's kubeconfig is data: only inline credentials and an https server are
accepted; every field that would run a command, read a file of the pod, call another host or
send credentials in clear text is refused with a reason that names the field, never its value.
The client is built from the validated fields alone (no kubeconfig loader)."""

from __future__ import annotations

import asyncio
import base64
import copy
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from app.fleet import secret_kubeconfig
from app.fleet.secret_kubeconfig import InlineConfig, RefusedKubeconfig, validate
from app.fleet.specs import ClusterSpec, SpecError, from_secret

VALUE = "S3CRET-value-never-shown"  # what each refused field holds: it must not appear in the reason


def _pem_pair(tmp: Path) -> tuple[bytes, bytes]:
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=wlmap-test",
                    "-keyout", str(tmp / "key.pem"), "-out", str(tmp / "cert.pem")], check=True, capture_output=True)
    return (tmp / "cert.pem").read_bytes(), (tmp / "key.pem").read_bytes()


@pytest.fixture(scope="module")
def pems(tmp_path_factory: pytest.TempPathFactory) -> tuple[bytes, bytes]:
    return _pem_pair(tmp_path_factory.mktemp("pem"))


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def doc(cluster: dict[str, Any] | None = None, user: dict[str, Any] | None = None,
        context: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Config", "current-context": "ctx",
            "clusters": [{"name": "c", "cluster": {"server": "https://10.0.0.1:6443", **(cluster or {})}}],
            "users": [{"name": "u", "user": {"token": "abcdef-token", **(user or {})}}],
            "contexts": [{"name": "ctx", "context": {"cluster": "c", "user": "u", **(context or {})}}]}


def secret(kubeconfig: dict[str, Any], name: str = "cluster-x") -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": "wlmap"},
            "data": {"kubeconfig": b64(yaml.safe_dump(kubeconfig).encode())}}


EXEC = {"apiVersion": "client.authentication.k8s.io/v1beta1", "command": "sh", "args": ["-c", VALUE]}
AUTH_PROVIDER = {"name": "oidc", "config": {"idp-issuer-url": f"https://{VALUE}.example", "refresh-token": VALUE}}

# (where, field, value): each refused; the reason names `section[entry].body.field`.
REFUSED = [
    ("user", "exec", EXEC),
    ("user", "auth-provider", AUTH_PROVIDER),
    ("user", "tokenFile", f"/var/run/secrets/{VALUE}"),
    ("user", "token-file", f"/var/run/secrets/{VALUE}"),
    ("user", "client-certificate", f"/etc/{VALUE}.crt"),
    ("user", "client-key", f"/etc/{VALUE}.key"),
    ("user", "username", VALUE),
    ("user", "password", VALUE),
    ("user", "as", VALUE),  # impersonation: unknown here, so refused
    ("user", "as-groups", [VALUE]),
    ("user", "something-new", VALUE),
    ("cluster", "certificate-authority", f"/etc/{VALUE}.ca"),
    ("cluster", "proxy-url", f"http://{VALUE}:3128"),
    ("cluster", "disable-compression", True),
    ("cluster", "something-new", VALUE),
    ("context", "something-new", VALUE),
]
SECTION = {"user": "users[u].user", "cluster": "clusters[c].cluster", "context": "contexts[ctx].context"}


@pytest.mark.parametrize(("where", "field", "value"), REFUSED, ids=[f"{w}.{f}" for w, f, _ in REFUSED])
def test_each_refused_field_is_named_and_its_value_never_shown(where: str, field: str, value: Any) -> None:
    d = doc(**{where: {field: value}})
    with pytest.raises(RefusedKubeconfig) as e:
        validate(d, None, allow_insecure=True)
    msg = str(e.value)
    assert f"{SECTION[where]}.{field} is refused" in msg
    assert VALUE not in msg
    # the same through the Secret: a SpecError (shown on GET /clusters) naming the Secret
    with pytest.raises(SpecError) as e2:
        from_secret(secret(d))
    assert str(e2.value).startswith("Secret wlmap/cluster-x: ") and f".{field} is refused" in str(e2.value)
    assert VALUE not in str(e2.value)


@pytest.mark.parametrize("field", ["exec", "tokenFile", "auth-provider", "client-certificate", "proxy-url",
                                   "certificate-authority", "username"])
def test_the_reason_says_why(field: str) -> None:
    where = "cluster" if field in ("proxy-url", "certificate-authority") else "user"
    with pytest.raises(RefusedKubeconfig) as e:
        validate(doc(**{where: {field: VALUE}}), None)
    why = {"exec": "run a command", "tokenFile": "read a file", "auth-provider": "identity provider",
           "client-certificate": "file path", "certificate-authority": "file path", "proxy-url": "another host",
           "username": "basic authentication"}[field]
    assert why in str(e.value)


@pytest.mark.parametrize(("server", "why"), [
    ("http://10.0.0.1:8080", "must be an https:// URL"),
    ("HTTP://10.0.0.1", "must be an https:// URL"),
    ("unix:///var/run/kube.sock", "must be an https:// URL"),
    ("10.0.0.1:6443", "must be an https:// URL"),
    (f"https://admin:{VALUE}@10.0.0.1", "without user"),
    ("https://10.0.0.1/?x=1", "without user, query"),
    ("https://", "without user"),
    ("https://10.0.0.1:port", "not a URL"),
    (42, "is missing"),
])
def test_the_server_must_be_plain_https(server: Any, why: str) -> None:
    d = doc()
    d["clusters"][0]["cluster"]["server"] = server
    with pytest.raises(RefusedKubeconfig) as e:
        validate(d, None)
    assert "clusters[c].cluster.server" in str(e.value) and why in str(e.value)
    assert VALUE not in str(e.value)


def test_insecure_skip_tls_verify_only_when_the_operator_allows_it() -> None:
    d = doc({"insecure-skip-tls-verify": True})
    with pytest.raises(RefusedKubeconfig) as e:
        validate(d, None)
    assert "insecure-skip-tls-verify is refused" in str(e.value) and "--cluster-secret-allow-insecure" in str(e.value)
    with pytest.raises(SpecError):
        from_secret(secret(d))
    assert validate(d, None, allow_insecure=True).insecure is True
    assert from_secret(secret(d), allow_insecure=True).inline.insecure is True  # type: ignore[union-attr]
    assert validate(doc({"insecure-skip-tls-verify": False}), None).insecure is False
    with pytest.raises(RefusedKubeconfig, match="not true or false"):
        validate(doc({"insecure-skip-tls-verify": "yes"}), None, allow_insecure=True)


@pytest.mark.parametrize(("where", "fields", "why"), [
    ("user", {"token": 12345678}, "not a bearer token"),
    ("user", {"token": "abc def"}, "not a bearer token"),
    ("user", {"token": "abc\r\nX-Injected: 1"}, "not a bearer token"),
    ("user", {"client-certificate-data": "@@not base64@@"}, "not valid base64"),
    ("user", {"client-certificate-data": b64(b"just text"), "client-key-data": b64(b"just text")}, "PEM"),
    ("cluster", {"certificate-authority-data": b64(b"no pem here")}, "PEM"),
    ("cluster", {"tls-server-name": "a b"}, "not a host name"),
])
def test_malformed_allowed_fields_are_refused(where: str, fields: dict[str, Any], why: str) -> None:
    with pytest.raises(RefusedKubeconfig, match=why):
        validate(doc(**{where: fields}), None)


def test_a_client_certificate_needs_its_key(pems: tuple[bytes, bytes]) -> None:
    with pytest.raises(RefusedKubeconfig, match="go together"):
        validate(doc(user={"client-certificate-data": b64(pems[0])}), None)


def test_missing_entries_are_named() -> None:
    d = doc()
    d["users"] = []
    with pytest.raises(RefusedKubeconfig, match=r"contexts\[ctx\].context.user names no entry of users"):
        validate(d, None)
    d = doc()
    d["contexts"][0]["context"]["cluster"] = "elsewhere"
    with pytest.raises(RefusedKubeconfig, match="cluster names no entry of clusters"):
        validate(d, None)
    with pytest.raises(RefusedKubeconfig, match="no context 'other'"):
        validate(doc(), "other")


def test_allowed_shapes(pems: tuple[bytes, bytes]) -> None:
    cert, key = pems
    # an inline token, the CA inline, a TLS server name, a namespace and extensions (never read)
    full = doc({"certificate-authority-data": b64(cert), "tls-server-name": "api.internal",
                "extensions": [{"name": "x", "extension": {"a": 1}}]},
               {"extensions": []}, {"namespace": "team-a"})
    got = validate(full, None)
    assert got == InlineConfig(server="https://10.0.0.1:6443", token="abcdef-token", certificate_authority=cert,
                               tls_server_name="api.internal")
    # a client certificate instead of a token; a path on the server; a trailing slash dropped
    d = doc(user={"client-certificate-data": b64(cert), "client-key-data": b64(key)})
    del d["users"][0]["user"]["token"]
    d["clusters"][0]["cluster"]["server"] = "https://rancher.example/k8s/clusters/c-1/"
    got = validate(d, None)
    assert (got.server, got.token, got.client_certificate, got.client_key) == \
        ("https://rancher.example/k8s/clusters/c-1", None, cert, key)
    # no user at all (anonymous), and a context chosen by name
    d = doc()
    d["contexts"].append({"name": "anon", "context": {"cluster": "c"}})
    assert validate(d, "anon") == InlineConfig(server="https://10.0.0.1:6443")
    # only the chosen context's entries are read: another user's exec is never used, so not refused
    d = doc()
    d["users"].append({"name": "other", "user": {"exec": EXEC}})
    assert validate(d, None).token == "abcdef-token"


def test_the_spec_holds_only_the_validated_connection(pems: tuple[bytes, bytes]) -> None:
    cert, key = pems
    d = doc(user={"client-certificate-data": b64(cert), "client-key-data": b64(key)})
    spec = from_secret(secret(d))
    assert spec.origin == "secret" and spec.kubeconfig is None and spec.inline is not None
    assert spec.server() == "https://10.0.0.1:6443"
    assert "abcdef-token" in spec.secrets() and b64(key) in spec.secrets()
    # the digest follows the connection, not the rest of the document
    other = copy.deepcopy(d)
    other["users"].append({"name": "unused", "user": {"token": "zzzzzzzz"}})
    assert from_secret(secret(other)).digest == spec.digest
    other = copy.deepcopy(d)
    other["users"][0]["user"]["token"] = "another-token"
    assert from_secret(secret(other)).digest != spec.digest
    # no Secret spec without its validated connection (it would fall back to the pod's own
    # credentials), and no operator spec takes the Secret path
    with pytest.raises(ValueError):
        ClusterSpec("x", "secret")
    with pytest.raises(ValueError):
        ClusterSpec("x", "flag", kubeconfig="/k", inline=InlineConfig(server="https://h"))


def test_the_client_is_built_from_the_validated_fields(pems: tuple[bytes, bytes], tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    cert, key = pems
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", None)  # TMPDIR read again
    cfg = InlineConfig(server="https://10.0.0.1:6443", token="abcdef-token", client_certificate=cert,
                       client_key=key, certificate_authority=cert, tls_server_name="api.internal")

    async def build() -> Any:
        kube = await secret_kubeconfig.connect(cfg)
        conf = kube.api.configuration
        out = (kube.host, conf.api_key, conf.verify_ssl, conf.tls_server_name, conf.proxy,
               conf.ssl_ca_cert, conf.cert_file, conf.key_file, os.listdir(tmp_path))
        await kube.close()
        return out

    host, api_key, verify, sni, proxy, ca, cert_file, key_file, left = asyncio.run(build())
    assert (host, api_key, verify, sni, proxy) == ("https://10.0.0.1:6443", {"BearerToken": "Bearer abcdef-token"},
                                                   True, "api.internal", None)
    assert (ca, cert_file, key_file) == (None, None, None)
    assert left == []  # the PEM files were read into the TLS context and removed
