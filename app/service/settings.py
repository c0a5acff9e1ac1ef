"""Serving options: every flag also reads an environment variable `WLMAP_<NAME>`."""

from __future__ import annotations

import argparse
import os
from dataclasses import dataclass, field

from ..cluster.kube import in_cluster
from ..engine import accelerators


def _csv(name: str) -> list[str]:
    """A comma-separated WLMAP_* list (empty items dropped)."""
    return [v.strip() for v in (_env(name) or "").split(",") if v.strip()]


def _env(name: str, default: str | None = None) -> str | None:
    return os.environ.get(f"WLMAP_{name.upper().replace('-', '_')}", default)


def _bool(v: str | bool | None) -> bool:
    if isinstance(v, bool):
        return v
    if v is None:
        return False
    if v.lower() in ("1", "true", "yes", "on"):
        return True
    if v.lower() in ("0", "false", "no", "off"):
        return False
    raise argparse.ArgumentTypeError(f"expected true or false, got {v!r}")


def _port(v: str | None, default: int) -> int:
    """WLMAP_PORT, unless it is Kubernetes' service link for a Service named `wlmap`
    (`tcp://10.0.0.7:8080`), which every pod of that namespace gets."""
    if not v or v.startswith(("tcp://", "udp://")):
        return default
    return int(v)


@dataclass
class Settings:
    host: str = "127.0.0.1"
    port: int = 8080
    workers: int = 1
    definitions: list[str] = field(default_factory=list)
    kubeconfig: str | None = None
    namespace: str | None = None
    configmap_selector: str | None = None
    configmap_name: str | None = None
    karta_resources: bool = True
    manage_kartas: bool = False  # write Karta resources' status, labels and Events (one replica, by Lease)
    auth: str = "auto"
    allow_inline_definitions: bool = True
    actions: bool = False  # suspend/resume and ?apply=true write to the cluster (off by default)
    eval_deadline: float = 2.0
    max_body_bytes: int = 3 * 1024 * 1024
    eval_workers: int = 2
    eval_queue_timeout: float = 5.0  # seconds a request waits for a free evaluation worker, then 503
    eval_worker_memory: int = 1024  # MiB of address space per evaluation worker; 0: unlimited
    shutdown_timeout: float = 10.0  # seconds SIGTERM waits for open requests before cancelling them
    isolation: str = "untrusted"
    jq_result_cache: bool = True
    log_level: str = "info"
    cache: bool = True
    watch_namespaces: list[str] = field(default_factory=list)
    stream_buffer: int = 1000
    stream_write_timeout: float = 10.0
    max_streams_per_caller: int = 10
    max_streams: int = 1000
    max_pods: int = 10000
    max_inflight_body_bytes: int = 32 * 1024 * 1024
    body_read_timeout: float = 30.0
    clusters: list[str] = field(default_factory=list)  # NAME=KUBECONFIG[#CONTEXT]
    kubeconfig_contexts: str = "current"  # current | all
    cluster_name: str | None = None
    cluster_secrets: bool = False
    cluster_secret_selector: str = "workload-map.dev/cluster=true"
    cluster_secret_names: list[str] = field(default_factory=list)
    cluster_secret_allow_insecure: bool = False
    cluster_probe_interval: float = 10.0
    loop: str = "auto"  # auto | asyncio | uvloop: see event_loop()
    tls_cert_file: str | None = None
    tls_key_file: str | None = None
    token_audiences: list[str] = field(default_factory=list)
    accelerator_resources: list[str] = field(default_factory=lambda: list(accelerators.DEFAULT_ACCELERATORS))
    gpu_resources: list[str] = field(default_factory=lambda: list(accelerators.DEFAULT_GPUS))
    # Past one process (app/store): a shared Redis/Valkey; shards own clusters, API replicas read it
    store: str | None = None  # redis://[:password@]host:port/db or rediss://...; None: in memory (one process)
    store_password: str | None = None  # when the URL carries none (a Secret's value, in a pod)
    role: str = "all"  # all | shard | api (shard and api need --store)
    shard_buckets: int = 1  # each cluster split into this many namespace buckets, each claimed on its own
    store_stream_length: int = 100000  # change events the store's stream keeps (resume window)

    @classmethod
    def from_env(cls) -> Settings:
        """Settings from environment variables only (used by worker processes and tests)."""
        s = cls()
        s.host = _env("host", s.host) or s.host
        s.port = _port(_env("port"), s.port)
        s.workers = int(_env("workers", str(s.workers)) or s.workers)
        defs = _env("definitions")
        s.definitions = [p for p in (defs or "").split(os.pathsep) if p]
        s.kubeconfig = _env("kubeconfig")
        s.namespace = _env("namespace")
        s.configmap_selector = _env("configmap_selector")
        s.configmap_name = _env("configmap_name")
        s.karta_resources = _bool(_env("karta_resources", "true"))
        s.manage_kartas = _bool(_env("manage_kartas", "false"))
        s.auth = _env("auth", s.auth) or s.auth
        s.allow_inline_definitions = _bool(_env("allow_inline_definitions", "true"))
        s.actions = _bool(_env("actions", "false"))
        s.eval_deadline = float(_env("eval_deadline", str(s.eval_deadline)) or s.eval_deadline)
        s.max_body_bytes = int(_env("max_body_bytes", str(s.max_body_bytes)) or s.max_body_bytes)
        s.eval_workers = int(_env("eval_workers", str(s.eval_workers)) or s.eval_workers)
        s.eval_queue_timeout = float(_env("eval_queue_timeout", str(s.eval_queue_timeout)) or s.eval_queue_timeout)
        s.eval_worker_memory = int(_env("eval_worker_memory", str(s.eval_worker_memory)) or s.eval_worker_memory)
        s.shutdown_timeout = float(_env("shutdown_timeout", str(s.shutdown_timeout)) or s.shutdown_timeout)
        s.isolation = _env("isolation", s.isolation) or s.isolation
        s.jq_result_cache = _bool(_env("jq_result_cache", "true"))
        s.log_level = _env("log_level", s.log_level) or s.log_level
        s.cache = _bool(_env("cache", "true"))
        s.watch_namespaces = _csv("watch_namespace")
        s.stream_buffer = int(_env("stream_buffer", str(s.stream_buffer)) or s.stream_buffer)
        s.stream_write_timeout = float(_env("stream_write_timeout", str(s.stream_write_timeout)) or
                                       s.stream_write_timeout)
        s.max_streams_per_caller = int(_env("max_streams_per_caller", str(s.max_streams_per_caller)) or
                                       s.max_streams_per_caller)
        s.max_streams = int(_env("max_streams", str(s.max_streams)) or s.max_streams)
        s.max_pods = int(_env("max_pods", str(s.max_pods)) or s.max_pods)
        s.max_inflight_body_bytes = int(_env("max_inflight_body_bytes", str(s.max_inflight_body_bytes)) or
                                        s.max_inflight_body_bytes)
        s.body_read_timeout = float(_env("body_read_timeout", str(s.body_read_timeout)) or s.body_read_timeout)
        s.clusters = _csv("clusters")
        s.kubeconfig_contexts = _env("kubeconfig_contexts", s.kubeconfig_contexts) or s.kubeconfig_contexts
        s.cluster_name = _env("cluster_name") or None
        s.cluster_secrets = _bool(_env("cluster_secrets", "false"))
        s.cluster_secret_selector = _env("cluster_secret_selector", s.cluster_secret_selector) or \
            s.cluster_secret_selector
        s.cluster_secret_names = _csv("cluster_secret")
        s.cluster_secret_allow_insecure = _bool(_env("cluster_secret_allow_insecure", "false"))
        s.cluster_probe_interval = float(_env("cluster_probe_interval", str(s.cluster_probe_interval)) or
                                         s.cluster_probe_interval)
        s.loop = _env("loop", s.loop) or s.loop
        s.tls_cert_file = _env("tls_cert_file") or None
        s.tls_key_file = _env("tls_key_file") or None
        s.token_audiences = _csv("token_audience")
        s.accelerator_resources, s.gpu_resources = resource_rules_from_env()
        s.store = _env("store") or None
        s.store_password = _env("store_password") or None
        s.role = _env("role", s.role) or s.role
        s.shard_buckets = int(_env("shard_buckets", str(s.shard_buckets)) or s.shard_buckets)
        s.store_stream_length = int(_env("store_stream_length", str(s.store_stream_length)) or s.store_stream_length)
        return s

    def to_env(self) -> dict[str, str]:
        """The same settings as WLMAP_* variables (hand-off to uvicorn worker processes)."""
        import os as _os

        return {"WLMAP_HOST": self.host, "WLMAP_PORT": str(self.port), "WLMAP_WORKERS": str(self.workers),
                "WLMAP_DEFINITIONS": _os.pathsep.join(self.definitions),
                **({"WLMAP_KUBECONFIG": self.kubeconfig} if self.kubeconfig else {}),
                **({"WLMAP_NAMESPACE": self.namespace} if self.namespace else {}),
                **({"WLMAP_CONFIGMAP_SELECTOR": self.configmap_selector} if self.configmap_selector else {}),
                **({"WLMAP_CONFIGMAP_NAME": self.configmap_name} if self.configmap_name else {}),
                "WLMAP_KARTA_RESOURCES": str(self.karta_resources).lower(),
                "WLMAP_MANAGE_KARTAS": str(self.manage_kartas).lower(),
                "WLMAP_AUTH": self.auth, "WLMAP_ALLOW_INLINE_DEFINITIONS": str(self.allow_inline_definitions).lower(),
                "WLMAP_ACTIONS": str(self.actions).lower(),
                "WLMAP_EVAL_DEADLINE": str(self.eval_deadline), "WLMAP_MAX_BODY_BYTES": str(self.max_body_bytes),
                "WLMAP_EVAL_WORKERS": str(self.eval_workers), "WLMAP_ISOLATION": self.isolation,
                "WLMAP_EVAL_QUEUE_TIMEOUT": str(self.eval_queue_timeout),
                "WLMAP_EVAL_WORKER_MEMORY": str(self.eval_worker_memory),
                "WLMAP_SHUTDOWN_TIMEOUT": str(self.shutdown_timeout),
                "WLMAP_JQ_RESULT_CACHE": str(self.jq_result_cache).lower(),
                "WLMAP_LOG_LEVEL": self.log_level, "WLMAP_CACHE": str(self.cache).lower(),
                "WLMAP_WATCH_NAMESPACE": ",".join(self.watch_namespaces),
                "WLMAP_STREAM_BUFFER": str(self.stream_buffer), "WLMAP_STREAM_WRITE_TIMEOUT": str(self.stream_write_timeout),
                "WLMAP_MAX_STREAMS_PER_CALLER": str(self.max_streams_per_caller),
                "WLMAP_MAX_STREAMS": str(self.max_streams),
                "WLMAP_MAX_PODS": str(self.max_pods), "WLMAP_MAX_INFLIGHT_BODY_BYTES": str(self.max_inflight_body_bytes),
                "WLMAP_BODY_READ_TIMEOUT": str(self.body_read_timeout),
                "WLMAP_CLUSTERS": ",".join(self.clusters), "WLMAP_KUBECONFIG_CONTEXTS": self.kubeconfig_contexts,
                **({"WLMAP_CLUSTER_NAME": self.cluster_name} if self.cluster_name else {}),
                "WLMAP_CLUSTER_SECRETS": str(self.cluster_secrets).lower(),
                "WLMAP_CLUSTER_SECRET_SELECTOR": self.cluster_secret_selector,
                "WLMAP_CLUSTER_SECRET": ",".join(self.cluster_secret_names),
                "WLMAP_CLUSTER_SECRET_ALLOW_INSECURE": str(self.cluster_secret_allow_insecure).lower(),
                "WLMAP_CLUSTER_PROBE_INTERVAL": str(self.cluster_probe_interval), "WLMAP_LOOP": self.loop,
                **({"WLMAP_TLS_CERT_FILE": self.tls_cert_file} if self.tls_cert_file else {}),
                **({"WLMAP_TLS_KEY_FILE": self.tls_key_file} if self.tls_key_file else {}),
                "WLMAP_TOKEN_AUDIENCE": ",".join(self.token_audiences),
                "WLMAP_ACCELERATOR_RESOURCE": ",".join(self.accelerator_resources),
                "WLMAP_GPU_RESOURCE": ",".join(self.gpu_resources),
                **({"WLMAP_STORE": self.store} if self.store else {}),
                **({"WLMAP_STORE_PASSWORD": self.store_password} if self.store_password else {}),
                "WLMAP_ROLE": self.role, "WLMAP_SHARD_BUCKETS": str(self.shard_buckets),
                "WLMAP_STORE_STREAM_LENGTH": str(self.store_stream_length)}


def add_serve_arguments(p: argparse.ArgumentParser) -> None:
    d = Settings.from_env()
    p.add_argument("--host", default=d.host, help="address to bind (WLMAP_HOST; default 127.0.0.1)")
    p.add_argument("--port", type=int, default=d.port, help="port (WLMAP_PORT; default 8080)")
    p.add_argument("--workers", type=int, default=d.workers, help="HTTP worker processes (WLMAP_WORKERS)")
    p.add_argument("--definitions", action="append", default=list(d.definitions), metavar="DIR",
                   help="definition folders, watched for changes (WLMAP_DEFINITIONS, path-separated)")
    p.add_argument("--kubeconfig", default=d.kubeconfig,
                   help="kubeconfig for cluster features (WLMAP_KUBECONFIG); in a pod the service account is used "
                        "without it")
    p.add_argument("--namespace", default=d.namespace,
                   help="namespace of definition ConfigMaps (WLMAP_NAMESPACE; default: the pod's namespace, else the "
                        "kubeconfig context's, else default)")
    p.add_argument("--configmap-selector", default=d.configmap_selector, metavar="LABELS",
                   help="label selector of definition ConfigMaps (WLMAP_CONFIGMAP_SELECTOR; default "
                        "workload-map.dev/definitions)")
    p.add_argument("--configmap-name", default=d.configmap_name, metavar="NAME",
                   help="read definitions from this one ConfigMap instead of a selector (WLMAP_CONFIGMAP_NAME)")
    p.add_argument("--karta-resources", type=_bool, default=d.karta_resources, metavar="true|false",
                   help="also read Karta custom resources (kartas.run.ai) when that CRD is served "
                        "(WLMAP_KARTA_RESOURCES; default true)")
    p.add_argument("--manage-kartas", type=_bool, default=d.manage_kartas, metavar="true|false",
                   help="write each Karta resource's status conditions, index labels and Events; one replica at a "
                        "time, elected with a Lease in --namespace (WLMAP_MANAGE_KARTAS; default false)")
    p.add_argument("--auth", choices=["auto", "none", "kubernetes"], default=d.auth,
                   help="request authorization (WLMAP_AUTH): kubernetes = bearer token checked with TokenReview and "
                        "SubjectAccessReview; auto (default) = kubernetes when running in a pod, else none")
    p.add_argument("--allow-inline-definitions", type=_bool, default=d.allow_inline_definitions,
                   metavar="true|false", help="accept definitions inside requests (WLMAP_ALLOW_INLINE_DEFINITIONS)")
    p.add_argument("--actions", type=_bool, default=d.actions, metavar="true|false",
                   help="allow writes to workloads: suspend, resume and /interpret/update?apply=true, each with "
                        "the caller's `patch` right (WLMAP_ACTIONS; default false)")
    p.add_argument("--eval-deadline", type=float, default=d.eval_deadline, metavar="SECONDS",
                   help="time limit of one evaluation (WLMAP_EVAL_DEADLINE; default 2)")
    p.add_argument("--max-body-bytes", type=int, default=d.max_body_bytes,
                   help="largest request body (WLMAP_MAX_BODY_BYTES; default 3 MiB, like the API server)")
    p.add_argument("--eval-workers", type=int, default=d.eval_workers,
                   help="evaluation processes per HTTP worker (WLMAP_EVAL_WORKERS; default 2)")
    p.add_argument("--eval-queue-timeout", type=float, default=d.eval_queue_timeout, metavar="SECONDS",
                   help="how long a request waits for a free evaluation worker before a 503 with Retry-After "
                        "(WLMAP_EVAL_QUEUE_TIMEOUT; default 5)")
    p.add_argument("--eval-worker-memory", type=int, default=d.eval_worker_memory, metavar="MIB",
                   help="address-space limit of each evaluation worker; an evaluation that reaches it fails with a "
                        "422 and its worker is replaced (WLMAP_EVAL_WORKER_MEMORY; default 1024, 0 = unlimited)")
    p.add_argument("--shutdown-timeout", type=float, default=d.shutdown_timeout, metavar="SECONDS",
                   help="on SIGTERM, how long open requests may finish before they are cancelled; streams end at "
                        "once (WLMAP_SHUTDOWN_TIMEOUT; default 10)")
    p.add_argument("--isolation", choices=["untrusted", "all", "none"], default=d.isolation,
                   help="which definitions run in supervised worker processes with a deadline: untrusted = all "
                        "but the built-in catalog (default), all, none (WLMAP_ISOLATION)")
    p.add_argument("--jq-result-cache", type=_bool, default=d.jq_result_cache, metavar="true|false",
                   help="reuse jq results when the same object (as jq sees it) is interpreted again "
                        "(WLMAP_JQ_RESULT_CACHE; default true)")
    p.add_argument("--log-level", choices=["debug", "info", "warning", "error"], default=d.log_level,
                   help="log level; info logs one JSON line per request (WLMAP_LOG_LEVEL)")
    p.add_argument("--cache", type=_bool, default=d.cache, metavar="true|false",
                   help="answer live reads from a watch-maintained model of the cluster; false reads the API server "
                        "on every request (WLMAP_CACHE; default true)")
    p.add_argument("--watch-namespace", action="append", default=list(d.watch_namespaces), metavar="NS",
                   dest="watch_namespaces", help="limit the model to this namespace (repeatable; WLMAP_WATCH_NAMESPACE, "
                                                 "comma-separated; default: every namespace)")
    p.add_argument("--stream-buffer", type=int, default=d.stream_buffer, metavar="EVENTS",
                   help="changes buffered per stream client; one that falls further behind is told and disconnected "
                        "(WLMAP_STREAM_BUFFER; default 1000)")
    p.add_argument("--stream-write-timeout", type=float, default=d.stream_write_timeout, metavar="SECONDS",
                   help="a stream client that takes no data for this long is disconnected "
                        "(WLMAP_STREAM_WRITE_TIMEOUT; default 10)")
    p.add_argument("--max-streams-per-caller", type=int, default=d.max_streams_per_caller, metavar="N",
                   help="watch streams one caller may hold open at once (the authenticated user, else the client "
                        "address); more is a 429 (WLMAP_MAX_STREAMS_PER_CALLER; default 10)")
    p.add_argument("--max-streams", type=int, default=d.max_streams, metavar="N",
                   help="watch streams open at once in each HTTP worker; more is a 429 (WLMAP_MAX_STREAMS; "
                        "default 1000)")
    p.add_argument("--max-pods", type=int, default=d.max_pods, metavar="N",
                   help="pods sent in one request (an interpretation, or a whole batch); more is a 413 "
                        "(WLMAP_MAX_PODS; default 10000)")
    p.add_argument("--max-inflight-body-bytes", type=int, default=d.max_inflight_body_bytes, metavar="BYTES",
                   help="request bodies all requests in progress may hold together (per HTTP worker); more is a "
                        "503 with Retry-After (WLMAP_MAX_INFLIGHT_BODY_BYTES; default 32 MiB, at least "
                        "--max-body-bytes)")
    p.add_argument("--body-read-timeout", type=float, default=d.body_read_timeout, metavar="SECONDS",
                   help="time a request body may take to arrive; slower is a 408 (WLMAP_BODY_READ_TIMEOUT; "
                        "default 30)")
    p.add_argument("--cluster", action="append", default=list(d.clusters), metavar="NAME=KUBECONFIG[#CONTEXT]",
                   dest="clusters", help="also serve this cluster (repeatable; WLMAP_CLUSTERS, comma-separated)")
    p.add_argument("--kubeconfig-contexts", choices=["current", "all"], default=d.kubeconfig_contexts,
                   help="all: serve every context of the kubeconfig as a cluster named after it "
                        "(WLMAP_KUBECONFIG_CONTEXTS; default current)")
    p.add_argument("--cluster-name", default=d.cluster_name, metavar="NAME",
                   help="name of the service's own cluster (WLMAP_CLUSTER_NAME; default in-cluster in a pod, else "
                        "the kubeconfig's current context)")
    p.add_argument("--cluster-secrets", type=_bool, default=d.cluster_secrets, metavar="true|false",
                   help="also serve the clusters of Secrets labelled workload-map.dev/cluster=true in the service "
                        "namespace, each holding a kubeconfig; watched (WLMAP_CLUSTER_SECRETS; default false)")
    p.add_argument("--cluster-secret-selector", default=d.cluster_secret_selector, metavar="LABELS",
                   help="label selector of cluster Secrets (WLMAP_CLUSTER_SECRET_SELECTOR)")
    p.add_argument("--cluster-secret", action="append", default=list(d.cluster_secret_names), metavar="NAME",
                   dest="cluster_secret_names",
                   help="watch only this cluster Secret (repeatable; WLMAP_CLUSTER_SECRET, comma-separated): the "
                        "service reads no other Secret, so RBAC can grant exactly these (resourceNames); "
                        "implies --cluster-secrets")
    p.add_argument("--cluster-secret-allow-insecure", type=_bool, default=d.cluster_secret_allow_insecure,
                   metavar="true|false",
                   help="let a cluster Secret's kubeconfig set insecure-skip-tls-verify: true (its server's "
                        "certificate is then not checked) (WLMAP_CLUSTER_SECRET_ALLOW_INSECURE; default false)")
    p.add_argument("--cluster-probe-interval", type=float, default=d.cluster_probe_interval, metavar="SECONDS",
                   help="how often each cluster's API server is probed; a cluster that does not answer is marked "
                        "unavailable (WLMAP_CLUSTER_PROBE_INTERVAL; default 10)")
    p.add_argument("--loop", choices=["auto", "asyncio", "uvloop"], default=d.loop,
                   help="event loop (WLMAP_LOOP): auto (default) = asyncio's when the service connects to any API "
                        "server (uvloop's TLS client can abort the process when a cluster's network drops), else "
                        "uvloop")
    p.add_argument("--tls-cert-file", default=d.tls_cert_file, metavar="FILE",
                   help="serve HTTPS with this certificate (chain), PEM; reloaded when the file changes "
                        "(WLMAP_TLS_CERT_FILE; needs --tls-key-file)")
    p.add_argument("--tls-key-file", default=d.tls_key_file, metavar="FILE",
                   help="private key of --tls-cert-file, PEM (WLMAP_TLS_KEY_FILE)")
    p.add_argument("--token-audience", action="append", default=list(d.token_audiences), metavar="AUDIENCE",
                   dest="token_audiences",
                   help="accept only bearer tokens issued for this audience: sent as the TokenReview's audiences "
                        "(repeatable; WLMAP_TOKEN_AUDIENCE, comma-separated; default: the API server's own)")
    p.add_argument("--store", default=d.store, metavar="URL",
                   help="share the live state through this Redis or Valkey (redis://host:6379/0, rediss:// for "
                        "TLS; the password from the URL or WLMAP_STORE_PASSWORD): shards own clusters and write "
                        "to it, API replicas answer from it (WLMAP_STORE; default: none, one process in memory)")
    p.add_argument("--role", choices=["all", "shard", "api"], default=d.role,
                   help="with --store: shard = watch the clusters this process claims (Leases in --namespace) "
                        "and write them to the store; api = answer every read and stream from the store, watch "
                        "nothing; all = both (WLMAP_ROLE; default all)")
    p.add_argument("--shard-buckets", type=int, default=d.shard_buckets, metavar="N",
                   help="with --role shard|all: split each cluster into N namespace buckets claimed separately, "
                        "for a cluster too big for one shard (WLMAP_SHARD_BUCKETS; default 1)")
    p.add_argument("--store-stream-length", type=int, default=d.store_stream_length, metavar="EVENTS",
                   help="change events the store keeps for stream resumes; an older token is a 410 "
                        "(WLMAP_STORE_STREAM_LENGTH; default 100000)")


def settings_from_args(args: argparse.Namespace) -> Settings:
    return Settings(host=args.host, port=args.port, workers=args.workers,
                    definitions=list(args.definitions) + list(getattr(args, "definition", []) or []),
                    kubeconfig=args.kubeconfig, namespace=args.namespace, configmap_selector=args.configmap_selector,
                    configmap_name=args.configmap_name, karta_resources=args.karta_resources,
                    manage_kartas=args.manage_kartas,
                    auth=args.auth, allow_inline_definitions=args.allow_inline_definitions, actions=args.actions,
                    eval_deadline=args.eval_deadline, max_body_bytes=args.max_body_bytes,
                    eval_workers=args.eval_workers, eval_queue_timeout=args.eval_queue_timeout,
                    eval_worker_memory=args.eval_worker_memory, shutdown_timeout=args.shutdown_timeout,
                    isolation=args.isolation, log_level=args.log_level,
                    jq_result_cache=args.jq_result_cache, cache=args.cache,
                    watch_namespaces=list(args.watch_namespaces), stream_buffer=args.stream_buffer,
                    stream_write_timeout=args.stream_write_timeout,
                    max_streams_per_caller=args.max_streams_per_caller, max_streams=args.max_streams,
                    max_pods=args.max_pods, max_inflight_body_bytes=args.max_inflight_body_bytes,
                    body_read_timeout=args.body_read_timeout, clusters=list(args.clusters),
                    kubeconfig_contexts=args.kubeconfig_contexts, cluster_name=args.cluster_name,
                    cluster_secrets=args.cluster_secrets or bool(args.cluster_secret_names),
                    cluster_secret_selector=args.cluster_secret_selector,
                    cluster_secret_names=list(args.cluster_secret_names),
                    cluster_secret_allow_insecure=args.cluster_secret_allow_insecure,
                    cluster_probe_interval=args.cluster_probe_interval, loop=args.loop,
                    tls_cert_file=args.tls_cert_file, tls_key_file=args.tls_key_file,
                    token_audiences=list(args.token_audiences), store=args.store,
                    store_password=Settings.from_env().store_password, role=args.role,
                    shard_buckets=args.shard_buckets, store_stream_length=args.store_stream_length,
                    **_resource_rules(args))


def _resource_rules(args: argparse.Namespace) -> dict[str, list[str]]:
    acc, gpus = resource_rules_from_env()
    return {"accelerator_resources": list(getattr(args, "accelerator_resources", None) or acc),
            "gpu_resources": list(getattr(args, "gpu_resources", None) or gpus)}


def resource_rules_from_env() -> tuple[list[str], list[str]]:
    """WLMAP_ACCELERATOR_RESOURCE and WLMAP_GPU_RESOURCE (comma-separated), else the defaults."""
    return (_csv("accelerator_resource") or list(accelerators.DEFAULT_ACCELERATORS),
            _csv("gpu_resource") or list(accelerators.DEFAULT_GPUS))


def _resource_name(what: str):  # noqa: ANN202 - an argparse type
    def check(v: str) -> str:
        try:
            return accelerators.check_names([v], what)[0]
        except ValueError as e:
            raise argparse.ArgumentTypeError(str(e)) from None
    return check


def add_resource_arguments(p: argparse.ArgumentParser) -> None:
    """--accelerator-resource / --gpu-resource: every command that interprets takes them.  A flag
    given once or more replaces the list (from the environment, else the default)."""
    acc, gpus = resource_rules_from_env()
    p.add_argument("--accelerator-resource", action="append", type=_resource_name("accelerator resource"),
                   dest="accelerator_resources", metavar="PATTERN",
                   help="a requested resource counted in `accelerators` (shell-style *; repeatable, replaces the "
                        "list; WLMAP_ACCELERATOR_RESOURCE, comma-separated; default " + ",".join(acc) + ")")
    p.add_argument("--gpu-resource", action="append", type=_resource_name("GPU resource"), dest="gpu_resources",
                   metavar="NAME", help="a resource counted as whole GPUs in `gpus` (repeatable, replaces the list; "
                                        "WLMAP_GPU_RESOURCE, comma-separated; default " + ",".join(gpus) + ")")
    p.set_defaults(accelerator_resources=None, gpu_resources=None)


def configure_resources(args: argparse.Namespace) -> None:
    """Resolve the flags (else the environment, else the defaults) into args, and the engine
    options a command interprets with into `args.engine` (ValueError: a bad WLMAP_* value)."""
    from ..engine.options import engine_options

    vars(args).update(_resource_rules(args))
    args.engine = engine_options(args.accelerator_resources, args.gpu_resources)


def cluster_enabled(s: Settings) -> bool:
    """The service has a home cluster: definitions from ConfigMaps, tokens reviewed there."""
    return bool(s.kubeconfig) or in_cluster()


def fleet_mode(s: Settings) -> bool:
    """Clusters are registered beyond the home one (or may be, by Secret): every live row,
    interpretation and metric names its cluster."""
    return bool(s.clusters) or s.kubeconfig_contexts == "all" or s.cluster_secrets or bool(s.cluster_secret_names)


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


def check_roles(s: Settings) -> None:
    """The store flags that cannot work together: refused before the service starts."""
    if s.role != "all" and not s.store:
        raise ValueError(f"--role {s.role} needs --store (a Redis or Valkey URL)")
    if s.store and not s.store.startswith(("redis://", "rediss://", "unix://")):
        raise ValueError("--store takes a redis://, rediss:// or unix:// URL")
    if s.shard_buckets < 1 or s.shard_buckets > 256:
        raise ValueError("--shard-buckets takes 1 to 256")
    if s.store and s.role != "api" and not cluster_enabled(s):
        raise ValueError(f"--store with --role {s.role} needs a home cluster for its Leases: give --kubeconfig, "
                         "or run in a pod")
    if s.store and not s.cache:
        raise ValueError("--store shares the live model: it cannot be used with --cache false")
    if s.store_stream_length < 1000:
        raise ValueError("--store-stream-length takes at least 1000")


def auth_mode(s: Settings) -> str:
    if s.auth == "auto":
        return "kubernetes" if in_cluster() else "none"
    return s.auth
