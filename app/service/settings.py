"""Serving options, declared once: each field of `Settings` carries its type, default, checks and
an `Opt` (help, flag, `WLMAP_*` variable).  Derived from it: the environment that hands the
settings to uvicorn's worker processes (`to_env`/`from_env`), the `wlmap serve` flags (flags.py)
and docs/configuration.md (scripts/gen_config_docs.py).  `check()` holds every rule across fields.

A pydantic model rather than pydantic-settings: the latter's environment source is the only part
this would use (lists, aliases and the port need custom parsing anyway) and importing it costs
every `wlmap` command ~110 ms (measured: 60 ms for pydantic, 180 ms with pydantic_settings)."""

from __future__ import annotations

import dataclasses
import os
import types
import typing
from dataclasses import dataclass
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    model_validator,
)

from ..capacity.pools import DEFAULT_POOL_LABELS
from ..cluster.kube import in_cluster
from ..engine import accelerators
from ..fleet import specs
from ..fleet.specs import ClusterSpec
from .gc_policy import parse_thresholds

MiB = 1024 * 1024


@dataclass(frozen=True)
class Opt:
    """How a setting is given: `--flag` (default: the field's name), `WLMAP_<FLAG>` (or `env`)."""

    help: str
    flag: str | None = None  # "" : environment only
    env: str | None = None
    metavar: str | None = None
    default_text: str | None = None  # the default as said in help and docs, where the value alone says too little
    sep: str = ","  # how the variable separates a list's items
    serve: bool = True  # False: a flag of every interpreting command (flags.add_resource_arguments)


class SettingsError(ValueError):
    """A setting, or settings together, that cannot work: the CLI says `error: <message>`, exit 2."""


def _store_url(v: str | None) -> str | None:
    if v and not v.startswith(("redis://", "rediss://", "unix://")):
        raise ValueError("--store takes a redis://, rediss:// or unix:// URL")
    return v


def _thresholds(v: str) -> str:
    parse_thresholds(v)
    return v


def _resources(what: str) -> AfterValidator:
    return AfterValidator(lambda v: list(accelerators.check_names(v, what)))


class Settings(BaseModel):
    model_config = ConfigDict(extra="forbid")

    # The declaration reads as a table (a field, its help and checks, a line or three each): left as written.
    # fmt: off
    host: Annotated[str, Opt("address to bind")] = "127.0.0.1"
    port: Annotated[int, Opt("port; a Kubernetes service link in WLMAP_PORT (tcp://...) is ignored")] = 8080
    workers: Annotated[int, Opt("HTTP worker processes (scale out with replicas instead)")] = 1
    definitions: Annotated[list[str], Opt(
        "definition folders, watched: an edit is served within ~1 s, an invalid edit keeps the last good version "
        "(reported on GET /definitions, in metrics and logs)", metavar="DIR", sep=os.pathsep)] = []
    kubeconfig: Annotated[str | None, Opt("kubeconfig for cluster features; in a pod the service account is used "
                                          "without it")] = None
    namespace: Annotated[str | None, Opt("namespace of definition ConfigMaps, Leases and cluster Secrets",
                                         default_text="the pod's namespace, else the kubeconfig context's, "
                                                      "else default")] = None
    configmap_selector: Annotated[str | None, Opt("label selector of definition ConfigMaps", metavar="LABELS",
                                                  default_text="workload-map.dev/definitions")] = None
    configmap_name: Annotated[str | None, Opt("read definitions from this one ConfigMap instead of a selector",
                                              metavar="NAME")] = None
    karta_resources: Annotated[bool, Opt("also read Karta custom resources (kartas.run.ai) when that CRD is "
                                         "served")] = True
    manage_kartas: Annotated[bool, Opt(
        "write each Karta resource's status conditions, index labels and Events; one replica at a time, elected "
        "with the Lease workload-map-karta-manager in --namespace")] = False
    auth: Annotated[Literal["auto", "none", "kubernetes"], Opt(
        "request authorization: kubernetes = bearer token checked with TokenReview and SubjectAccessReview; "
        "auto = kubernetes when running in a pod, else none")] = "auto"
    allow_inline_definitions: Annotated[bool, Opt("accept definitions inside requests")] = True
    actions: Annotated[bool, Opt("allow writes to workloads: suspend, resume and /interpret/update?apply=true, "
                                 "each with the caller's `patch` right; off: 403 actions-disabled")] = False
    eval_deadline: Annotated[float, Opt("time limit of one evaluation", metavar="SECONDS")] = 2.0
    max_body_bytes: Annotated[int, Opt("largest request body (the default is the API server's)")] = 3 * MiB
    eval_workers: Annotated[int, Opt("evaluation processes per HTTP worker")] = 2
    eval_queue_timeout: Annotated[float, Opt("how long a request waits for a free evaluation worker before a 503 "
                                             "with Retry-After", metavar="SECONDS")] = 5.0
    eval_worker_memory: Annotated[int, Opt("address-space limit of each evaluation worker; an evaluation that "
                                           "reaches it fails with a 422 and its worker is replaced; 0 = unlimited",
                                           metavar="MIB")] = 1024
    shutdown_timeout: Annotated[float, Opt("on SIGTERM, how long open requests may finish before they are "
                                           "cancelled; streams end at once", metavar="SECONDS")] = 10.0
    isolation: Annotated[Literal["untrusted", "all", "none"], Opt(
        "which definitions run in supervised worker processes with a deadline: untrusted = all but the built-in "
        "catalog, all, none")] = "untrusted"
    jq_result_cache: Annotated[bool, Opt("reuse jq results when the same object (as jq sees it) is interpreted "
                                         "again")] = True
    log_level: Annotated[Literal["debug", "info", "warning", "error"], Opt(
        "log level; info logs one line per request")] = "info"
    log_format: Annotated[Literal["auto", "text", "json"], Opt(
        "log lines: auto = text for a person when stderr is a terminal, else JSON lines")] = "auto"
    cache: Annotated[bool, Opt("answer live reads from a watch-maintained model of the cluster; false reads the "
                               "API server on every request")] = True
    watch_namespaces: Annotated[list[str], Opt("limit the model to this namespace (repeatable)",
                                               flag="--watch-namespace", metavar="NS",
                                               default_text="every namespace")] = []
    stream_buffer: Annotated[int, Opt("changes buffered per stream client; one that falls further behind is told "
                                      "and disconnected", metavar="EVENTS")] = 1000
    stream_write_timeout: Annotated[float, Opt("a stream client that takes no data for this long is disconnected",
                                               metavar="SECONDS")] = 10.0
    max_streams_per_caller: Annotated[int, Opt("watch streams one caller may hold open at once (the authenticated "
                                               "user, else the client address); more is a 429", metavar="N")] = 10
    max_streams: Annotated[int, Opt("watch streams open at once in each HTTP worker; more is a 429",
                                    metavar="N")] = 1000
    max_pods: Annotated[int, Opt("pods sent in one request (an interpretation, or a whole batch); more is a 413 (a "
                                 "batch holds at most 1,000 items)",
                                 metavar="N")] = 10000
    max_inflight_body_bytes: Annotated[int, Opt("request bodies all requests in progress may hold together (per "
                                                "HTTP worker, at least --max-body-bytes); more is a 503 with "
                                                "Retry-After", metavar="BYTES")] = 32 * MiB
    body_read_timeout: Annotated[float, Opt("time a request body may take to arrive; slower is a 408",
                                            metavar="SECONDS")] = 30.0
    clusters: Annotated[list[str], Opt("also serve this cluster (repeatable)", flag="--cluster",
                                       env="WLMAP_CLUSTERS", metavar="NAME=KUBECONFIG[#CONTEXT]")] = []
    kubeconfig_contexts: Annotated[Literal["current", "all"], Opt(
        "all: serve every context of the kubeconfig as a cluster named after it")] = "current"
    cluster_name: Annotated[str | None, Opt("name of the service's own cluster", metavar="NAME",
                                            default_text="in-cluster in a pod, else the kubeconfig's current "
                                                         "context")] = None
    cluster_secrets: Annotated[bool, Opt("also serve the clusters of Secrets labelled workload-map.dev/cluster=true "
                                         "in the service namespace, each holding a kubeconfig; watched")] = False
    cluster_secret_selector: Annotated[str, Opt("label selector of cluster Secrets",
                                                metavar="LABELS")] = "workload-map.dev/cluster=true"
    cluster_secret_names: Annotated[list[str], Opt(
        "watch only this cluster Secret (repeatable): the service reads no other Secret, so RBAC can grant exactly "
        "these (resourceNames); implies --cluster-secrets", flag="--cluster-secret", metavar="NAME")] = []
    cluster_secret_allow_insecure: Annotated[bool, Opt(
        "let a cluster Secret's kubeconfig set insecure-skip-tls-verify: true (its server's certificate is then "
        "not checked); otherwise only inline credentials and an https:// server are accepted")] = False
    pool_labels: Annotated[list[str], Opt(
        "a node label that names a node's pool in `capacity` (GET /clusters) and the capacity metrics: a node is in "
        "the pool of the first of these labels it has (repeatable, replaces the list)", flag="--pool-label",
        env="WLMAP_POOL_LABELS", metavar="KEY")] = list(DEFAULT_POOL_LABELS)
    cluster_probe_interval: Annotated[float, Opt("how often each cluster's API server is probed; a cluster that "
                                                 "does not answer is marked unavailable", metavar="SECONDS")] = 10.0
    loop: Annotated[Literal["auto", "asyncio", "uvloop"], Opt(
        "event loop: auto = asyncio's when the service connects to any API server (uvloop's TLS client can abort "
        "the process when a cluster's network drops), else uvloop")] = "auto"
    tls_cert_file: Annotated[str | None, Opt("serve HTTPS with this certificate (chain), PEM; reloaded when the "
                                             "file changes; needs --tls-key-file", metavar="FILE")] = None
    tls_key_file: Annotated[str | None, Opt("private key of --tls-cert-file, PEM", metavar="FILE")] = None
    token_audiences: Annotated[list[str], Opt(
        "accept only bearer tokens issued for this audience: sent as the TokenReview's audiences, the answer "
        "must name one of them (repeatable)",
        flag="--token-audience", metavar="AUDIENCE", default_text="the API server's own")] = []
    accelerator_resources: Annotated[list[str], _resources("accelerator resource"), Opt(
        "a requested resource counted in `accelerators` (shell-style *; repeatable, replaces the list)",
        flag="--accelerator-resource", metavar="PATTERN", serve=False)] = list(accelerators.DEFAULT_ACCELERATORS)
    gpu_resources: Annotated[list[str], _resources("GPU resource"), Opt(
        "a resource counted as whole GPUs in `gpus` (repeatable, replaces the list)", flag="--gpu-resource",
        metavar="NAME", serve=False)] = list(accelerators.DEFAULT_GPUS)
    store: Annotated[str | None, AfterValidator(_store_url), Opt(
        "share the live state through this Redis or Valkey (redis://host:6379/0, rediss:// for TLS; the password "
        "from the URL or WLMAP_STORE_PASSWORD): shards own clusters and write to it, API replicas answer from it",
        metavar="URL", default_text="none, one process in memory")] = None
    store_password: Annotated[str | None, Opt("the store's password when the URL carries none (a Secret's value, "
                                              "in a pod)", flag="")] = None
    role: Annotated[Literal["all", "shard", "api"], Opt(
        "with --store: shard = watch the clusters this process claims (Leases in --namespace) and write them to "
        "the store; api = answer every read and stream from the store, watch nothing; all = both")] = "all"
    shard_buckets: Annotated[int, Field(ge=1, le=256), Opt(
        "with --role shard|all: split each cluster into N namespace buckets claimed separately, for a cluster "
        "too big for one shard (all replicas must agree on N)", metavar="N")] = 1
    shard_lease: Annotated[int, Field(ge=3, le=300), Opt(
        "with --role shard|all: the duration of the shards' Leases; a shard that dies has its clusters taken over "
        "about this long after its last renewal (renewed every quarter of it; every store write is fenced, so a "
        "short Lease never lets two shards write one cluster)", metavar="SECONDS")] = 6
    store_stream_length: Annotated[int, Field(ge=1000), Opt(
        "change events the store keeps for stream resumes; an older token is a 410", metavar="EVENTS")] = 100000
    gc_thresholds: Annotated[str, AfterValidator(_thresholds), Opt(
        "the garbage collector's generation thresholds in the service process (Python's own: 700,10,10); larger "
        "young generations mean fewer collections while objects are parsed and interpreted",
        metavar="N,N,N")] = "20000,20,100"
    gc_freeze: Annotated[bool, Opt(
        "once a cluster's model has synced, and after it relisted, collect once and freeze what is alive "
        "(gc.freeze): the model's objects leave the generations the collector walks")] = True

    # fmt: on
    _specs: tuple[ClusterSpec | None, list[ClusterSpec]] | None = PrivateAttr(default=None)

    @model_validator(mode="after")
    def _implied(self) -> Settings:
        self.cluster_secrets = self.cluster_secrets or bool(self.cluster_secret_names)  # --cluster-secret implies it
        return self

    @classmethod
    def from_env(cls, **given: Any) -> Settings:
        """Settings from WLMAP_* variables (what worker processes get), `given` taking precedence
        (pydantic's ValidationError, a ValueError, names a bad one)."""
        values: dict[str, Any] = {name: v for name, o in OPTS.items() if (v := env_value(name, o)) is not None}
        if "port" in values and values["port"].startswith(("tcp://", "udp://")):
            del values["port"]  # the service link Kubernetes gives every pod of a namespace with a Service `wlmap`
        return cls(**{**values, **given})

    def to_env(self) -> dict[str, str]:
        """The same settings as WLMAP_* variables: Settings.from_env() in a worker gives them back."""
        out = {}
        for name, o in OPTS.items():
            v = getattr(self, name)
            if v is not None and o.env:
                out[o.env] = o.sep.join(v) if isinstance(v, list) else str(v).lower() if isinstance(v, bool) else str(v)
        return out

    def cluster_specs(self) -> tuple[ClusterSpec | None, list[ClusterSpec]]:
        """The home cluster's spec (None: no home) and the other clusters given by flags, computed
        once (a bad --cluster is an error at start, not a member that never works)."""
        if self._specs is None:
            self._specs = _cluster_specs(self)
        return self._specs

    def check(self) -> Settings:
        """Every rule across fields, before the service starts (ValueError: the CLI's `error:`)."""
        from .tls import check_pair

        home = cluster_enabled(self)
        if auth_mode(self) == "kubernetes" and not home:
            raise SettingsError("--auth kubernetes needs cluster access: give --kubeconfig, or run in a pod")
        if self.role != "all" and not self.store:
            raise SettingsError(f"--role {self.role} needs --store (a Redis or Valkey URL)")
        if self.store and self.role != "api" and not home:
            raise SettingsError(
                f"--store with --role {self.role} needs a home cluster for its Leases: give "
                "--kubeconfig, or run in a pod"
            )
        if self.store and not self.cache:
            raise SettingsError("--store shares the live model: it cannot be used with --cache false")
        self.cluster_specs()  # SpecError (a ValueError)
        if self.token_audiences and auth_mode(self) != "kubernetes":
            raise SettingsError("--token-audience needs --auth kubernetes (no token is reviewed otherwise)")
        if bool(self.tls_cert_file) != bool(self.tls_key_file):
            raise SettingsError("--tls-cert-file and --tls-key-file go together")
        if self.tls_cert_file and self.tls_key_file and (bad := check_pair(self.tls_cert_file, self.tls_key_file)):
            raise SettingsError(bad)
        return self


def _named(name: str, field: Any) -> Opt:
    o = next(m for m in field.metadata if isinstance(m, Opt))
    flag = f"--{name.replace('_', '-')}" if o.flag is None else o.flag
    return dataclasses.replace(o, flag=flag, env=o.env or f"WLMAP_{(flag[2:] or name).upper().replace('-', '_')}")


OPTS: dict[str, Opt] = {name: _named(name, f) for name, f in Settings.model_fields.items()}  # flag and env filled in


def env_value(name: str, o: Opt) -> Any:
    """One field's variable: None when unset or empty; a list's items split on its separator."""
    v = os.environ.get(o.env or "")
    if not v:
        return None
    if kind(name) is list:
        return [x.strip() if o.sep == "," else x for x in v.split(o.sep) if x.strip()]
    return v


def kind(name: str) -> Any:
    """list, bool, int, float, str or a Literal's choices (a tuple) of a field."""
    t = Settings.model_fields[name].annotation
    if typing.get_origin(t) is list:
        return list
    if typing.get_origin(t) is Literal:
        return typing.get_args(t)
    if typing.get_origin(t) in (typing.Union, types.UnionType):  # X | None
        t = next(a for a in typing.get_args(t) if a is not type(None))
    return t


def cluster_enabled(s: Settings) -> bool:
    """The service has a home cluster: definitions from ConfigMaps, tokens reviewed there."""
    return bool(s.kubeconfig) or in_cluster()


def fleet_mode(s: Settings) -> bool:
    """Clusters are registered beyond the home one (or may be, by Secret): every live row,
    interpretation and metric names its cluster."""
    return bool(s.clusters) or s.kubeconfig_contexts == "all" or s.cluster_secrets


def event_loop(s: Settings) -> str:
    """uvicorn's loop.  uvloop 0.23 is not safe as a TLS client of a peer that resets connections
    (a cluster whose network drops): measured with a real API server behind a resetting relay,
    3 of 4 client processes aborted and another raised "File descriptor N is used by transport"
    on later connects (benchmarks/loop_faults.py, BENCHMARKS.md).  asyncio's loop has neither, so it
    runs whenever the service talks to an API server; uvloop only serves the stateless mode."""
    if s.loop != "auto":
        return s.loop
    if cluster_enabled(s) or fleet_mode(s):
        return "asyncio"
    try:
        import uvloop  # noqa: F401
    except ImportError:
        return "asyncio"
    return "uvloop"


def auth_mode(s: Settings) -> str:
    if s.auth == "auto":
        return "kubernetes" if in_cluster() else "none"
    return s.auth


def _cluster_specs(s: Settings) -> tuple[ClusterSpec | None, list[ClusterSpec]]:
    home = specs.home(s.cluster_name, s.kubeconfig, in_cluster()) if cluster_enabled(s) else None
    others: list[ClusterSpec] = []
    if s.kubeconfig_contexts == "all":
        _, current = specs.contexts(s.kubeconfig)
        for spec in specs.from_contexts(s.kubeconfig):
            if home is not None and spec.context == current and (s.kubeconfig or not in_cluster()):
                continue  # the home cluster already is this context
            others.append(spec)
    others += [specs.from_flag(v) for v in s.clusters]
    names = [x.name for x in ([home] if home else []) + others]
    dup = sorted({n for n in names if names.count(n) > 1})
    if dup:
        raise specs.SpecError(
            f"cluster {dup[0]!r} is registered twice (names must be unique; rename with NAME= or --cluster-name)"
        )
    if s.cluster_secrets and home is None:
        raise specs.SpecError(
            "--cluster-secrets needs a home cluster to watch Secrets in: give --kubeconfig, or run in a pod"
        )
    return home, others
