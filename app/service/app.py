"""The HTTP API (docs/api-contract.md): interpret manifests, list and validate definitions.

Request flow: body (bounded by the middleware) -> caller authenticated (with --auth
kubernetes) -> parse JSON/YAML -> envelope, raw manifest or reference to a live object ->
definition (inline, or the registry by exact GVK) -> evaluator (in-process for the built-in
catalog, supervised worker for anything else) -> contract JSON or problem+json.

With a cluster (cluster.py): definitions also come from ConfigMaps and Karta resources, and
/workloads reads live objects and their pods, each read authorized for the caller.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import logging
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import orjson
import yaml
from fastapi import Depends, FastAPI, Query, Request
from fastapi.exceptions import RequestValidationError
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.responses import Response

from .. import __version__
from ..cluster.listing import ListQuery, QueryError, parse_query
from ..cluster.reader import Known, LookupFailed, Reader, matches_token
from ..documents import DocumentError, UnencodableValue, loads_json, parse_documents
from ..engine import accelerators
from ..engine import compiled as compiled_cache
from ..engine import interpret as interpret_mod
from ..engine.batch_totals import group_totals, item_totals, sum_totals
from ..engine.interpret import InterpretationError, phase_of
from ..fleet.member import Member
from ..karta.load import Definition, NotAKarta, definition_from_document
from ..karta.registry import AmbiguousDefinition
from ..karta.store import DefinitionStore, summary
from ..karta.validate import reference_text
from ..store.errors import store_unavailable
from ..ui import mount_ui
from . import actions, fleet_reads, metrics, streams
from .auth import Authorizer
from .cluster import Cluster
from .evaluator import (
    EvaluationBusy,
    EvaluationCrashed,
    EvaluationOutOfMemory,
    EvaluationTimeout,
    Evaluator,
)
from .inline import InlineDefinitions
from .middleware import BodyLimits, ServiceMiddleware
from .models import (
    ActedInterpretation,
    BatchRequest,
    BatchResponse,
    ClusterList,
    ClusterStatus,
    DefinitionList,
    DefinitionSummary,
    Health,
    Interpretation,
    InterpretRequest,
    LiveInterpretation,
    ModelStatus,
    Problem,
    UpdateRequest,
    UpdateResponse,
    ValidationResponse,
    WatchEvent,
    WorkloadList,
)
from .problems import (
    ProblemError,
    envelope,
    lookup_problem,
    on_http,
    on_problem,
    on_unexpected,
    on_validation,
    problem_body,
    unencodable_problem,
)
from .settings import Settings, auth_mode, fleet_mode
from .shutdown import stop_on_signal
from .updates import update_doc
from .workload_metrics import WorkloadMetrics

JSON = "application/json"
BATCH_CONCURRENCY = 32  # items of one batch in flight at once (each may read the cluster and review rights)
YAML_TYPES = {"application/yaml", "application/x-yaml", "text/yaml", "text/x-yaml"}
STREAM_RESPONSE = {"description": "the answer; with watch=true a stream of events {type, object, id}",
                   "content": {"text/event-stream": {"schema": {"type": "string"}},
                               "application/json;stream=watch": {"schema": {"$ref": "#/components/schemas/WatchEvent"}}}}
PROBLEMS = {code: {"model": Problem, "content": {"application/problem+json": {}}} for code in
            (400, 401, 403, 404, 409, 413, 415, 422, 500, 501, 503)}


def _media_type(request: Request) -> str:
    return request.headers.get("content-type", JSON).split(";")[0].strip().lower() or JSON


def _decode(body: bytes, media: str, what: str = "body") -> list[Any]:
    # curl's -d default (form-urlencoded) carries JSON in practice: read it as JSON.
    as_json = media in (JSON, "application/x-www-form-urlencoded") or media.endswith("+json")
    if media in YAML_TYPES or as_json:
        try:
            return [loads_json(body)] if as_json else parse_documents(body)
        except UnencodableValue as e:  # a number no JSON can carry: refused before it reaches a worker
            raise unencodable_problem(e, what) from None
        except DocumentError as e:
            raise ProblemError(400, "malformed-body", "Malformed body", f"{what}: {e}") from None
    raise ProblemError(415, "unsupported-media-type", "Unsupported media type",
                       f"send application/json or application/yaml, not {media}")


@dataclass(frozen=True)
class ListParams:
    """The query of both workload lists (GET /workloads, /clusters/{c}/workloads), declared once."""

    namespace: str | None
    kind: str | None
    watch: bool
    phase: str | None
    labelSelector: str | None
    minGpus: int | None
    sort: str | None
    limit: int | None
    continue_: str | None

    def query(self, cluster: str | None) -> ListQuery | None:
        """The filters, order and page (None: none asked, the list as it always was); a continue
        token is good only for the namespace, kind and clusters it was made for."""
        if all(v is None for v in (self.phase, self.labelSelector, self.minGpus, self.sort, self.limit,
                                   self.continue_)):
            return None
        try:
            return parse_query(phase=self.phase, label_selector=self.labelSelector, min_gpus=self.minGpus,
                               sort=self.sort, limit=self.limit, continue_=self.continue_,
                               scope=(self.namespace, self.kind, cluster))
        except QueryError as e:
            raise ProblemError(400, "invalid-list-query", "Invalid list query", str(e)) from None


def list_params(namespace: str | None = None, kind: str | None = None, watch: bool = False,
                resumeFrom: str | None = None, phase: str | None = None, labelSelector: str | None = None,
                minGpus: int | None = None, sort: str | None = None, limit: int | None = None,
                continue_: str | None = Query(None, alias="continue")) -> ListParams:
    # resumeFrom is read by the stream from the request itself; declared here for the schema
    return ListParams(namespace, kind, watch, phase, labelSelector, minGpus, sort, limit, continue_)


def _is_manifest(doc: Any) -> bool:
    return isinstance(doc, dict) and "apiVersion" in doc and "kind" in doc and "object" not in doc


def metric_label(d: Definition) -> str:
    """A definition's name as a metric label: a request's own definition is "inline" (its name
    is the caller's to choose, and every new label value is a series kept for good)."""
    return "inline" if d.source == "inline" else d.name


def _dumps(v: Any) -> Response:
    return Response(orjson.dumps(v), media_type=JSON)


class Service:
    """State shared by the handlers of one process."""

    def __init__(self, settings: Settings):
        self.settings = settings
        home, others = settings.check().cluster_specs()  # ValueError: settings that cannot work together
        self.cluster_wanted = home is not None or bool(others)
        self.fleet_mode = fleet_mode(settings)  # rows, interpretations and metrics name their cluster
        self.store = DefinitionStore(settings.definitions, Cluster.source_keys(settings) if home is not None else None)
        self.cluster: Cluster | None = None
        # every read of cluster data is made with the caller's rights, asked here (auth.py)
        self.auth = Authorizer(auth_mode(settings) == "kubernetes",
                               lambda: self.cluster.access if self.cluster is not None else None)
        self.evaluator = Evaluator(settings.isolation, settings.eval_workers, settings.eval_deadline,
                                   settings.eval_queue_timeout, settings.eval_worker_memory)
        self.inline = InlineDefinitions()  # bounded by bytes; invalid ones kept only as their findings
        self.ready = False
        self.stop = asyncio.Event()
        self.workload_metrics: WorkloadMetrics | None = None
        self.background: list[asyncio.Task[None]] = []

    async def warm_metrics(self, model: Any) -> None:
        """Render the workload metrics once the model is synced, so the first scrape finds every
        workload's lines ready (later scrapes render only what changed)."""
        while not self.stop.is_set() and not (model.synced if model is not None else True):
            await asyncio.sleep(0.5)
        self.metrics_renderer().render()

    def metrics_renderer(self) -> WorkloadMetrics:
        if self.workload_metrics is None:
            fleet = self.need_cluster("workload metrics").fleet
            self.workload_metrics = WorkloadMetrics(
                lambda: [m.model for m in fleet.members.values() if m.model is not None], self.fleet_mode)
        return self.workload_metrics

    # -- definitions -----------------------------------------------------------------------
    def inline_definition(self, doc: Any) -> Definition:
        if not self.settings.allow_inline_definitions:
            raise ProblemError(403, "inline-definitions-disabled", "Inline definitions are disabled",
                               "this service does not accept definitions in requests")
        return self.inline.definition(doc)

    def bound_pods(self, n: int) -> None:
        """Pods are interpreted one by one: their number in one request is bounded (--max-pods)."""
        if n > self.settings.max_pods:
            raise ProblemError(413, "too-many-pods", "Too many pods",
                               f"{n} pods in one request; at most {self.settings.max_pods} (--max-pods)")

    def resolve(self, obj: dict[str, Any]) -> Definition:
        try:
            d = self.store.registry.resolve_object(obj)
        except AmbiguousDefinition as e:
            raise ProblemError(409, "ambiguous-definition", "Ambiguous definition", str(e)) from None
        if d is None:
            raise ProblemError(404, "no-definition", "No definition",
                               f"no Karta definition covers {obj.get('apiVersion')} {obj.get('kind')}")
        return d

    # -- interpretation --------------------------------------------------------------------
    async def interpret_body(self, body: bytes, media: str, request_state: dict[str, Any]) -> dict[str, Any]:
        docs = _decode(body, media)
        if len(docs) != 1:
            raise ProblemError(400, "malformed-body", "Malformed body",
                               f"expected exactly one document, got {len(docs)}")
        return await self.interpret_doc(docs[0], request_state)

    async def interpret_doc(self, doc: Any, request_state: dict[str, Any]) -> dict[str, Any]:
        if _is_manifest(doc):
            env = InterpretRequest(object=doc)
        else:
            env = envelope(InterpretRequest, doc, "expected a manifest or an object {\"object\": ..., \"definition\"?, "
                                                  "\"pods\"?}")
        self.bound_pods(len(env.pods or ()))
        obj, d = await self.subject(env, request_state)
        pods = env.pods
        if pods is not None and not all(isinstance(p, dict) for p in pods):
            raise ProblemError(422, "invalid-request", "Invalid request", "every pod must be an object")
        result = await self.evaluate(d, obj, pods)
        request_state["phase"] = phase_of(result)
        if "freshness" in request_state:
            result["freshness"] = request_state.pop("freshness")
        if "cluster" in request_state:
            result = {"cluster": request_state.pop("cluster"), **result}
        return result

    async def subject(self, env: Any, request_state: dict[str, Any], whole: bool = False,
                      member: Member | None = None) -> tuple[dict[str, Any], Definition]:
        """The object of an envelope (sent, or read with the caller's rights by `ref`; `whole`:
        as the API server holds it) and the definition to read it with (inline, or the registry's)."""
        obj = env.object
        if env.ref is not None:
            if env.object is not None:
                raise ProblemError(422, "invalid-request", "Invalid request", "give either \"object\" or \"ref\", not both")
            obj = await self.fetch_ref(env.ref.model_dump(), request_state, whole, member)
        if obj is None:
            raise ProblemError(422, "invalid-request", "Invalid request", "give either \"object\" or \"ref\"")
        meta = obj.get("metadata")
        request_state["labels"] = meta.get("labels") if isinstance(meta, dict) else None  # a batch's groupBy reads them
        if not isinstance(obj.get("apiVersion"), str) or not isinstance(obj.get("kind"), str):
            raise ProblemError(422, "invalid-object", "Invalid object", "the object declares no apiVersion and kind")
        d = self.inline_definition(env.definition) if env.definition is not None else self.resolve(obj)
        request_state["definition"] = d.name
        return obj, d

    async def evaluate(self, d: Definition, obj: dict[str, Any], pods: list[dict[str, Any]] | None) -> dict[str, Any]:
        label = metric_label(d)
        try:
            result = await self.evaluator.interpret(d, obj, pods)
        except InterpretationError as e:
            metrics.INTERPRETATION_ERRORS.labels(label, "definition").inc()
            raise ProblemError(422, "interpretation-failed", "Interpretation failed", str(e), e.errors) from None
        except EvaluationTimeout as e:
            metrics.DEADLINE_HITS.labels(label).inc()
            metrics.INTERPRETATION_ERRORS.labels(label, "deadline").inc()
            raise ProblemError(422, "evaluation-deadline-exceeded", "Evaluation deadline exceeded", str(e),
                               [{"path": e.path, "message": str(e), "expression": e.expression}]) from None
        except EvaluationOutOfMemory as e:
            metrics.INTERPRETATION_ERRORS.labels(label, "memory").inc()
            raise ProblemError(422, "evaluation-memory-exceeded", "Evaluation memory exceeded", str(e)) from None
        except EvaluationBusy as e:  # the live model retries these later; a client is told when
            raise ProblemError(503, "evaluation-busy", "Evaluation workers busy", str(e),
                               headers={"Retry-After": str(e.retry_after)}) from None
        except EvaluationCrashed as e:
            metrics.INTERPRETATION_ERRORS.labels(label, "crash").inc()
            raise ProblemError(500, "evaluation-crashed", "Evaluation failed", str(e)) from None
        metrics.INTERPRETATIONS.labels(label, phase_of(result)).inc()
        for e in result.get("errors") or []:
            metrics.PARTIAL_PARTS.labels(label, e["part"]).inc()
        return result

    # -- cluster ---------------------------------------------------------------------------
    def need_cluster(self, what: str) -> Cluster:
        if self.cluster is None:
            raise ProblemError(501, "no-cluster", "No cluster configured",
                               f"{what} need cluster access; this service runs without a cluster "
                               "(start it with --kubeconfig, or in a cluster)")
        return self.cluster

    def reader(self, member: Member, kind: str | None = None, api_version: str | None = None,
               namespace: str | None = None, whole: bool = False) -> Reader:
        """Where a read of `member` is answered from: its live model when it can answer this read
        from memory, else the API server (while it answers).  The one place this is decided.
        `whole`: the object as stored (the model keeps only what definitions read): the API server."""
        model = member.model
        if not whole and model is not None and self.store.ready() and model.answers(kind, api_version, namespace):
            return model
        if self.settings.store and not whole:  # behind a store, reads come from it or not at all
            raise model.refusal() if model is not None else fleet_reads.not_synced(member)
        if member.workloads is not None and member.available:
            return member.workloads
        raise fleet_reads.unavailable(member) if not member.available else fleet_reads.not_synced(member)

    # -- the fleet -------------------------------------------------------------------------
    @property
    def sharing(self) -> Any:
        """The store's parts (--store), else None."""
        return self.cluster.sharing if self.cluster is not None else None

    def need_store(self) -> None:
        """Behind a store, no read is answered while it is away (503), rather than from rows that
        may be stale: every read of cluster data passes here."""
        if self.sharing is not None and not self.sharing.hub.connected:
            raise store_unavailable()

    def member(self, name: str | None, what: str = "live workloads") -> Member:
        """The cluster a request names (None: the service's own); 404 unknown, 503 down."""
        cluster = self.need_cluster(what)
        self.need_store()
        if name is None:
            m = cluster.home or (next(iter(cluster.fleet.members.values())) if len(cluster.fleet.members) == 1
                                 else None)
            if m is None:
                raise ProblemError(400, "cluster-required", "Cluster required",
                                   "this service has no cluster of its own: name one (?cluster= or ref.cluster)")
            return m
        m = cluster.fleet.get(name)
        if m is None:
            raise ProblemError(404, "cluster-not-found", "Cluster not found",
                               f"no cluster named {name!r} (GET /clusters lists them)")
        if not m.available:
            raise fleet_reads.unavailable(m)
        return m

    def members(self, names: str | None) -> list[Member]:
        """?cluster=a,b (every cluster without it); a cluster named that is down is a 503."""
        cluster = self.need_cluster("live workloads")
        self.need_store()
        if not names:
            return sorted(cluster.fleet.members.values(), key=lambda m: m.name)
        return [self.member(n.strip()) for n in dict.fromkeys(names.split(",")) if n.strip()]

    async def describe(self, member: Member, namespace: str, name: str, kind: str | None, api_version: str | None,
                       pods: bool, state: dict[str, Any]) -> Response:
        allow = self.auth.rights(state, member)
        try:
            body = await self.reader(member, kind, api_version, namespace).describe(
                namespace, name, kind, api_version, with_pods=pods, allow=allow)
        except LookupFailed as e:
            raise self.explained(e, namespace, name, kind) from None
        return Response(body, media_type=JSON)

    async def ref_member(self, ref: dict[str, Any], request_state: dict[str, Any], whole: bool = False) -> Member:
        """The cluster a `ref` names (in a fleet without one: the one cluster that has it)."""
        self.need_cluster("object references")
        namespace = ref.get("namespace")
        if ref.get("cluster") is None and self.fleet_mode:
            return await fleet_reads.find_in_fleet(self.members(None), namespace or "", ref["name"],
                                                   ref["kind"], ref["apiVersion"],
                                                   lambda m: self.auth.rights(request_state, m),
                                                   lambda m: self.reader(m, ref["kind"], ref["apiVersion"],
                                                                         namespace, whole))
        return self.member(ref.get("cluster"), "object references")

    async def fetch_ref(self, ref: dict[str, Any], request_state: dict[str, Any], whole: bool = False,
                        member: Member | None = None) -> dict[str, Any]:
        namespace = ref.get("namespace")
        member = member or await self.ref_member(ref, request_state, whole)
        allow = self.auth.rights(request_state, member)
        try:
            obj, freshness = await self.reader(member, ref["kind"], ref["apiVersion"], namespace, whole).object(
                ref["apiVersion"], ref["kind"], namespace, ref["name"], allow=allow)
        except LookupFailed as e:
            raise self.explained(e, namespace or "", ref["name"], ref["kind"]) from None
        request_state["freshness"] = freshness
        if self.fleet_mode:
            request_state["cluster"] = member.name
        return obj

    def explained(self, e: LookupFailed, namespace: str, name: str, kind: str | None) -> ProblemError:
        """A lookup that found nothing, where an invalid definition is why: say so, and where."""
        if e.status == 404 and e.slug in ("workload-not-found", "no-definition", "kind-not-served"):
            reg = self.store.registry
            bad = [d for st in self.store.all_states() for d in st.rejected
                   if d.gvk is not None and not reg.covers(d.gvk)
                   and (not kind or matches_token(kind, Known(d, None)))]
            if bad:
                notes = []
                for d in bad:
                    g, v, k = d.gvk  # type: ignore[misc]
                    first = next((f.message for f in d.findings if f.level == "error"), "invalid")
                    notes.append(f"the only definition of {k} ({g + '/' if g else ''}{v}), {d.name or '?'} from "
                                 f"{d.origin}, is invalid: {first}")
                return ProblemError(404, "definition-invalid", "Definition invalid",
                                    e.message + "; " + "; ".join(notes),
                                    [{"path": d.origin, "message": next((f.message for f in d.findings
                                                                         if f.level == "error"), "invalid")}
                                     for d in bad])
        return lookup_problem(e)


class _StateCollector:
    """Counters kept by the engine and the definition store, read at scrape time."""

    def __init__(self) -> None:
        self.store: DefinitionStore | None = None
        self.service: Service | None = None

    def collect(self) -> Any:
        c = CounterMetricFamily("wlmap_compile_cache", "Compiled-definition cache lookups (in-process)",
                                labels=["result"])
        c.add_metric(["hit"], compiled_cache.stats["hits"])
        c.add_metric(["miss"], compiled_cache.stats["misses"])
        yield c
        if self.store is not None:
            r = CounterMetricFamily("wlmap_definition_reloads", "Definition source reloads, by result",
                                    labels=["result"])
            r.add_metric(["ok"], self.store.reloads["ok"])
            r.add_metric(["failed"], self.store.reloads["failed"])
            yield r
        cluster = self.service.cluster if self.service is not None else None
        if cluster is not None:
            d = CounterMetricFamily("wlmap_discovery_fetches", "API discovery documents fetched (misses are cached, "
                                    "so unknown kinds cannot cause discovery storms)")
            d.add_metric([], sum(m.kube.discovery.fetches for m in cluster.fleet.members.values()
                                 if m.kube is not None))
            yield d
            up = GaugeMetricFamily("wlmap_cluster_available", "1 when the cluster's API server answered the last "
                                   "probe", labels=["cluster"])
            synced = GaugeMetricFamily("wlmap_cluster_synced", "1 when the cluster's live model has synced",
                                       labels=["cluster"])
            for m in cluster.fleet.members.values():
                up.add_metric([m.name], 1 if m.available else 0)
                synced.add_metric([m.name], 1 if m.synced else 0)
            yield up
            yield synced
            if cluster.sharing is not None:
                yield from cluster.sharing.metrics()


_STATE = _StateCollector()
metrics.REGISTRY.register(_STATE)


def create_app(settings: Settings | None = None) -> FastAPI:
    settings = settings or Settings()
    interpret_mod.JQ_RESULT_CACHE = settings.jq_result_cache
    accelerators.configure(settings.accelerator_resources, settings.gpu_resources)  # before workers are spawned
    streams.Limits.buffer, streams.Limits.write_timeout = settings.stream_buffer, settings.stream_write_timeout
    streams.Limits.per_caller, streams.Limits.total = settings.max_streams_per_caller, settings.max_streams
    BodyLimits.inflight, BodyLimits.seconds = settings.max_inflight_body_bytes, settings.body_read_timeout
    service = Service(settings)

    @contextlib.asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        # Workers start with the first definition that needs one (a catalog-only service never
        # pays their ~40 MB each); a service given definition folders starts them at once.
        await service.evaluator.start(eager=bool(settings.definitions) or settings.isolation == "all")
        watcher = asyncio.create_task(service.store.watch(service.stop)) if service.store.folders else None
        restore_signals = stop_on_signal(service.stop)  # SIGTERM: streams end at once, not at the timeout
        service.background.append(asyncio.create_task(streams.end_on(service.stop)))
        if service.cluster_wanted:
            service.cluster = await Cluster.connect(service.store, settings, service.evaluate)
            service.cluster.start(service.stop)
            if settings.cache:
                service.background.append(asyncio.create_task(service.warm_metrics(service.cluster.model)))
        # The catalog, compiled programs and app objects live for the process: keep them out of
        # the collector's sight, so full collections stay short (they showed as p99 spikes).
        gc.collect()
        gc.freeze()
        service.ready = True
        logging.getLogger("wlmap").info("serving on %s's event loop",
                                        type(asyncio.get_running_loop()).__module__.split(".")[0])
        try:
            yield
        finally:
            restore_signals()
            service.ready = False
            service.stop.set()
            for t in service.background:
                t.cancel()
            if watcher is not None:
                watcher.cancel()
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await watcher
            if service.cluster is not None:
                await service.cluster.close()
            await service.evaluator.close()

    app = FastAPI(title="workload-map", version=__version__, lifespan=lifespan,
                  description="Interpret any Kubernetes AI workload through Karta (NVIDIA Workload Map) definitions: "
                              "normalized status, component tree, scale and resource totals, gang hints.")
    app.state.service = service
    app.add_exception_handler(ProblemError, on_problem)
    app.add_exception_handler(StarletteHTTPException, on_http)
    app.add_exception_handler(RequestValidationError, on_validation)
    app.add_exception_handler(Exception, on_unexpected)
    app.add_middleware(ServiceMiddleware, max_body=settings.max_body_bytes, fast_interpret=service.interpret_body,
                       authenticate=service.auth.authenticate if service.auth.enabled else None)
    _STATE.store, _STATE.service = service.store, service

    interpret_body = {
        "required": True,
        "content": {
            JSON: {"schema": {"anyOf": [{"$ref": "#/components/schemas/InterpretRequest"},
                                        {"$ref": "#/components/schemas/KubernetesObject"}]}},
            "application/yaml": {"schema": {"type": "string", "description": "one manifest, or an envelope, "
                                                                             "as YAML"}},
        },
    }

    @app.post("/interpret", response_model=Interpretation, operation_id="interpret", responses=PROBLEMS, tags=["interpret"],
              summary="Interpret one workload", openapi_extra={"requestBody": interpret_body})
    async def interpret_endpoint(request: Request) -> Response:
        """A raw manifest (JSON or YAML), or an envelope `{"object", "definition"?, "pods"?}`."""
        return _dumps(await service.interpret_body(await request.body(), _media_type(request),
                                                   request.scope["state"]))

    @app.post("/interpret/update", operation_id="interpretUpdate", response_model=UpdateResponse, responses=PROBLEMS,
              tags=["interpret"], summary="Write labels, a scheduler, tolerations... into every pod of a workload")
    async def update_endpoint(req: UpdateRequest, request: Request, apply: bool = False) -> Response:
        """Rewrites the object through its definition's pod paths and returns it with the RFC 6902
        patch that makes it.  `ref` reads the object with the caller's rights.  `apply=true` (with
        `ref`, and --actions true): the patch is applied, guarded by the resourceVersion read (409
        when the object changed since), with the caller's `patch` right; `applied` says so and
        `object` is the object as stored."""
        return _dumps(await update_doc(service, req.model_dump(by_alias=True, exclude_none=True),
                                       request.scope["state"], apply))

    @app.post("/interpret/batch", operation_id="interpretBatch", response_model=BatchResponse, responses=PROBLEMS, tags=["interpret"],
              summary="Interpret many workloads; one bad item never fails the others")
    async def batch_endpoint(req: BatchRequest, request: Request, groupBy: str | None = None) -> Response:
        """`totals` sums the items that interpreted with whole totals; the others (failed, or
        partial with `totals` null) count in `totals.failed`.  `groupBy=<label key>` adds
        `groups`: the items by that label's value on the workload, each with its totals."""
        if groupBy is not None and not 0 < len(groupBy) <= 317:  # a label key: prefix (253) / name (63)
            raise ProblemError(422, "invalid-request", "Invalid request", "groupBy must be a label key")
        state = request.scope["state"]
        running = asyncio.Semaphore(BATCH_CONCURRENCY)
        labels: list[Any] = [None] * len(req.items)  # each item's workload labels, once known

        async def one(n: int, item: InterpretRequest) -> dict[str, Any]:
            sub = service.auth.substate(state)  # each item reads with the caller's rights, in a state of its own
            try:
                async with running:
                    return await service.interpret_doc(item.model_dump(exclude_none=True), sub)
            except ProblemError as e:
                return {"error": problem_body(e.status, e.slug, e.title, e.detail, None, e.errors)}
            finally:
                labels[n] = sub.get("labels")

        request.scope["state"]["items"] = len(req.items)
        service.bound_pods(sum(len(i.pods or ()) for i in req.items))
        results = await asyncio.gather(*(one(n, i) for n, i in enumerate(req.items)))
        out: dict[str, Any] = {"items": results, "totals": sum_totals(map(item_totals, results))}
        if groupBy is not None:
            values = [ls.get(groupBy) if isinstance(ls, dict) and isinstance(ls.get(groupBy), str) else None
                      for ls in labels]
            out["groups"] = group_totals(results, values)
        return _dumps(out)

    @app.get("/definitions", response_model=DefinitionList, operation_id="listDefinitions", tags=["definitions"],
             summary="Every definition: source, digest, state and findings")
    async def list_definitions() -> Response:
        sources: list[dict[str, Any]] = [{"name": "builtin", "state": "static"}]
        sources += [{"name": str(p), "state": "watching"} for p in service.store.folders]
        if service.cluster is not None:
            sources[1:1] = service.cluster.source_status()
        for src in sources:
            state = service.store.sources.get(src["name"])
            src["problems"] = list(state.problems) if state else []
        return _dumps({"items": service.store.summaries(), "sources": sources})

    @app.get("/definitions/{name}", operation_id="getDefinition", tags=["definitions"], responses={
        200: {"description": "the Karta (JSON, or YAML with Accept: application/yaml)",
              "content": {JSON: {"schema": {"type": "object", "additionalProperties": True}},
                          "application/yaml": {"schema": {"type": "string"}}}}, **PROBLEMS},
        summary="One definition as served (the active one of that name)")
    async def get_definition(name: str, request: Request, evaluation: bool = False) -> Response:
        """`evaluation=true`: how each expression is evaluated instead, natively (in Python, on
        the parsed object) or through libjq, and why not natively."""
        d = service.store.registry.by_name(name)
        if d is None:
            raise ProblemError(404, "no-definition", "No definition", f"no Karta definition named \"{name}\"")
        if evaluation:
            from ..engine.compiled import evaluation as evaluation_of

            return _dumps(evaluation_of(d))
        accept = request.headers.get("accept", "")
        if any(t in accept for t in YAML_TYPES):
            return Response(yaml.safe_dump(d.raw, sort_keys=False, allow_unicode=True),
                            media_type="application/yaml")
        return _dumps(d.raw)

    validate_body = {"required": True, "content": {
        JSON: {"schema": {"anyOf": [{"type": "object", "additionalProperties": True},
                                    {"type": "array", "items": {"type": "object", "additionalProperties": True}}]}},
        "application/yaml": {"schema": {"type": "string"}}}}

    @app.post("/definitions/validate", operation_id="validateDefinitions", response_model=ValidationResponse, responses=PROBLEMS, tags=["definitions"],
              summary="Validate definitions: every finding, in the reference wording",
              openapi_extra={"requestBody": validate_body})
    async def validate_endpoint(request: Request) -> Response:
        docs = _decode(await request.body(), _media_type(request))
        if len(docs) == 1 and isinstance(docs[0], list):
            docs = docs[0]
        items = []
        for i, doc in enumerate(docs):
            try:
                d = definition_from_document(doc, "inline", f"document {i}")
            except NotAKarta as e:
                raise ProblemError(422, "not-a-definition", "Not a Karta definition", str(e)) from None
            s = summary(d, "invalid" if not d.valid else "active")
            items.append({"valid": d.valid, "name": d.name or None,
                          "gvk": str(d.karta.root_gvk) if d.karta.root_gvk else None,
                          "errors": s["errors"], "warnings": s["warnings"],
                          "referenceText": reference_text(d.findings)})
        return _dumps({"items": items})

    workload_doc = """Without `kind`, every kind with a definition is looked up (404 when none has the name,
        409 listing the candidates when several do).  `kind` takes a Kind, a plural, or either
        qualified by group (`jobsets.jobset.x-k8s.io`).  Pods are those owned by the workload
        through the controller owner-reference chain, placed on components and instances;
        `pods=false` skips them (and the pods `list` permission they need).  Answers come from the
        live model once it is synced (`freshness` says from where, and as of when).

        `watch=true`: a stream of the full interpretation (with `live`), an event each time its
        phase, readiness, totals, gang or pods change: Server-Sent Events with `Accept:
        text/event-stream`, else newline-delimited JSON; `Last-Event-ID` (or `resumeFrom`) resumes."""

    async def one_workload(request: Request, cluster: str | None, namespace: str, name: str, kind: str | None,
                           apiVersion: str | None, pods: bool, watch: bool) -> Response:
        service.need_cluster("live workloads")
        state = request.scope["state"]
        if cluster is None and service.fleet_mode:
            # no cluster named: the one cluster that holds it (the service's own is no default here,
            # so one name means one workload across the fleet, or a 409 naming the clusters)
            member = await fleet_reads.find_in_fleet(service.members(None), namespace, name, kind, apiVersion,
                                                     lambda m: service.auth.rights(state, m),
                                                     lambda m: service.reader(m, kind, apiVersion, namespace))
        else:
            member = service.member(cluster)
        if watch:
            try:
                return await streams.workload_stream(request, streams.need_model(member.model), namespace, name,
                                                     kind, apiVersion, pods, service.auth.rights(state, member))
            except LookupFailed as e:
                raise service.explained(e, namespace, name, kind) from None
        return await service.describe(member, namespace, name, kind, apiVersion, pods, state)

    @app.get("/workloads/{namespace}/{name}", operation_id="getWorkload", response_model=LiveInterpretation,
             responses={**PROBLEMS, 200: STREAM_RESPONSE}, tags=["workloads"], description=workload_doc,
             summary="A live workload: interpretation plus its pods (or, with watch=true, a stream of it)")
    async def get_workload(namespace: str, name: str, request: Request, kind: str | None = None,
                           apiVersion: str | None = None, pods: bool = True, watch: bool = False,
                           resumeFrom: str | None = None, cluster: str | None = None) -> Response:
        return await one_workload(request, cluster, namespace, name, kind, apiVersion, pods, watch)

    @app.get("/clusters/{cluster}/workloads/{namespace}/{name}", operation_id="getClusterWorkload",
             response_model=LiveInterpretation, responses={**PROBLEMS, 200: STREAM_RESPONSE}, tags=["clusters"],
             description=workload_doc, summary="A live workload of one cluster (or, with watch=true, a stream of it)")
    async def get_cluster_workload(cluster: str, namespace: str, name: str, request: Request, kind: str | None = None,
                                   apiVersion: str | None = None, pods: bool = True, watch: bool = False,
                                   resumeFrom: str | None = None) -> Response:
        return await one_workload(request, cluster, namespace, name, kind, apiVersion, pods, watch)

    for which in ("suspend", "resume"):
        actions.add_routes(app, service, which, ActedInterpretation, PROBLEMS)

    list_doc = """Top-level workloads (objects controlled by another known workload are left out) in a
        namespace, or in all namespaces without `namespace`.  Kinds the caller may not list are
        left out and named in `warnings`.  With several clusters: every cluster's rows (each with
        `cluster`), or those of `cluster` (comma-separated names); a cluster that does not answer
        keeps its rows as last seen, marked `unavailable`, and only a request naming it fails (503).

        Filters, order and pages: `phase=Running,Failed`, `labelSelector=` (Kubernetes syntax, on the
        workload's labels), `minGpus=`, `sort=namespace | name | -gpus | gpus | age | -age | phase |
        -phase` (`age`: youngest first), `limit=` with the `metadata.continue` token of the answer as
        `continue=` for the next page (paging by key: stable while rows come and go).

        `watch=true`: the current rows as ADDED events, a BOOKMARK with `initialEventsEnd`, then an
        ADDED / MODIFIED / DELETED event for every row that changes (phase, readiness, totals)."""

    async def workload_list(request: Request, cluster: str | None, namespace: str | None, kind: str | None,
                            watch: bool, query: ListQuery | None = None) -> Response:
        state = request.scope["state"]
        if watch and query is not None and query.pages:
            raise ProblemError(400, "paging-not-on-streams", "Streams are not paged",
                               "sort, limit and continue apply to lists; a stream takes namespace, kind, phase, "
                               "labelSelector and minGpus")
        if not service.fleet_mode and cluster is None:
            member = service.member(None)
            allow = service.auth.rights(state, member)
            try:
                if watch:
                    return await streams.list_stream(request, streams.need_model(member.model), namespace or None,
                                                     kind, allow, query)
                # taken before the read: a stream resumed from it replays any change the read
                # may already hold (harmless: events carry whole rows), and misses none
                resume = member.model.events.token() if member.model is not None else None
                result = await service.reader(member, kind, None, namespace or None).summaries(
                    namespace or None, kind, allow=allow)
            except LookupFailed as e:
                raise lookup_problem(e) from None
        else:
            members = service.members(cluster)
            if watch:
                return await streams.fleet_list_stream(request, service.need_cluster("live workloads").fleet,
                                                       [m.name for m in members] if cluster else None,
                                                       namespace or None, kind,
                                                       lambda m: service.auth.rights(state, m),
                                                       service.auth.enabled, query)
            fleet = service.need_cluster("live workloads").fleet
            resume = fleet.events.token() if all(m.model is not None for m in fleet.members.values()) else None
            result = await fleet_reads.fleet_summaries(members, namespace or None, kind,
                                                       lambda m: service.auth.rights(state, m),
                                                       lambda m: service.reader(m, kind, None, namespace or None))
        meta = {"resumeFrom": resume} if resume else {}
        if query is not None:
            result["items"], token = query.apply(result["items"])
            if token:
                meta["continue"] = token
        if meta:
            result = {"metadata": meta, **result}
        state["items"] = len(result["items"])
        return _dumps(result)

    @app.get("/workloads", operation_id="listWorkloads", response_model=WorkloadList, description=list_doc,
             responses={**PROBLEMS, 200: STREAM_RESPONSE}, tags=["workloads"],
             summary="One summary row per workload of every known kind (or, with watch=true, a stream of rows)")
    async def list_workloads(request: Request, cluster: str | None = None,
                             p: ListParams = Depends(list_params)) -> Response:
        return await workload_list(request, cluster, p.namespace, p.kind, p.watch, p.query(cluster))

    @app.get("/clusters/{cluster}/workloads", operation_id="listClusterWorkloads", response_model=WorkloadList,
             description=list_doc, responses={**PROBLEMS, 200: STREAM_RESPONSE}, tags=["clusters"],
             summary="The workloads of one cluster (or, with watch=true, a stream of rows)")
    async def list_cluster_workloads(cluster: str, request: Request,
                                     p: ListParams = Depends(list_params)) -> Response:
        return await workload_list(request, cluster, p.namespace, p.kind, p.watch, p.query(cluster))

    @app.get("/clusters", operation_id="listClusters", response_model=ClusterList, tags=["clusters"],
             responses={**PROBLEMS, 200: STREAM_RESPONSE},
             summary="Every cluster the service reads: server, version, sync state, last error, workloads, GPUs")
    async def list_clusters(request: Request, watch: bool = False, resumeFrom: str | None = None) -> Response:
        """`watch=true`: the clusters as ADDED events, then an event each time one changes (it goes
        down or comes back, syncs, its counts change), as the workload streams frame them."""
        fleet = service.need_cluster("clusters").fleet
        await service.auth.require_path(request.scope["state"], "/clusters")
        service.need_store()
        if watch:
            return await streams.cluster_stream(request, fleet)
        return _dumps({"items": fleet.items()})

    @app.get("/clusters/{cluster}", operation_id="getCluster", response_model=ClusterStatus, tags=["clusters"],
             responses=PROBLEMS, summary="One cluster")
    async def get_cluster(cluster: str, request: Request) -> Response:
        fleet = service.need_cluster("clusters").fleet
        await service.auth.require_path(request.scope["state"], "/clusters")
        service.need_store()
        item = next((i for i in fleet.items() if i["name"] == cluster), None)
        if item is None:
            raise ProblemError(404, "cluster-not-found", "Cluster not found",
                               f"no cluster named {cluster!r} (GET /clusters lists them)")
        return _dumps(item)

    @app.get("/model", operation_id="getModel", tags=["workloads"], response_model=ModelStatus,
             responses=PROBLEMS, summary="The live model: sync state, watched kinds, objects held, freshness")
    async def model_status(request: Request, cluster: str | None = None) -> Response:
        """The model of the service's own cluster, or of `cluster`.  With `--auth kubernetes` the
        caller needs `get` on the non-resource URL `/model` (it names every watched kind, namespace
        and count)."""
        await service.auth.require_path(request.scope["state"], "/model")
        member = None
        if service.cluster is not None:
            member = service.cluster.fleet.get(cluster) if cluster else service.cluster.home
            if member is None and cluster:
                raise ProblemError(404, "cluster-not-found", "Cluster not found", f"no cluster named {cluster!r}")
        model = member.model if member is not None else None
        if model is None:
            return _dumps({"enabled": False, "synced": False,
                           "reason": "no cluster" if member is None else "--cache false"})
        return _dumps(model.status() | {"definitionsSynced": service.store.ready(), "streams": dict(streams.Limits.open)}
                      | ({"store": service.sharing.status()} if service.sharing is not None else {}))

    @app.get("/metrics/workloads", operation_id="workloadMetrics", tags=["health"], response_class=Response,
             responses={200: {"content": {CONTENT_TYPE_LATEST: {"schema": {"type": "string"}}},
                              "description": "Prometheus text format: one set of series per workload"},
                        **PROBLEMS})
    async def workload_metrics(request: Request) -> Response:
        """Per-workload series from the live model (kube-state-metrics style).  With `--auth
        kubernetes` the caller needs `get` on the non-resource URL `/metrics/workloads`."""
        service.need_cluster("workload metrics")
        await service.auth.require_path(request.scope["state"], "/metrics/workloads")
        if not settings.cache:
            raise ProblemError(400, "metrics-need-the-model", "Workload metrics need the live model",
                               "this service reads the API server directly (--cache false)")
        return Response(service.metrics_renderer().render(), media_type=CONTENT_TYPE_LATEST)

    @app.get("/healthz", operation_id="healthz", response_model=Health, tags=["health"])
    async def healthz() -> Response:
        return _dumps({"status": "ok"})

    @app.get("/readyz", operation_id="readyz", response_model=Health, tags=["health"], responses={503: {"model": Health}})
    async def readyz() -> Response:
        served, _ = service.store.counts()
        if not service.ready:
            return Response(orjson.dumps({"status": "not ready", "detail": "starting"}), status_code=503,
                            media_type=JSON)
        if not service.store.ready():
            waiting = [k for k, done in service.store.synced.items() if not done]
            return Response(orjson.dumps({"status": "not ready", "definitions": served,
                                          "detail": "waiting for the first sync of " + ", ".join(waiting)}),
                            status_code=503, media_type=JSON)
        return _dumps({"status": "ok", "definitions": served})

    @app.get("/metrics", operation_id="metrics", tags=["health"], response_class=Response,
             responses={200: {"content": {CONTENT_TYPE_LATEST: {"schema": {"type": "string"}}},
                              "description": "Prometheus text format"}})
    async def metrics_endpoint() -> Response:
        served, invalid = service.store.counts()
        metrics.DEFINITIONS.labels("served").set(served)
        metrics.DEFINITIONS.labels("invalid").set(invalid)
        return Response(generate_latest(metrics.REGISTRY), media_type=CONTENT_TYPE_LATEST)

    mount_ui(app)
    _patch_openapi(app)
    return app


def _patch_openapi(app: FastAPI) -> None:
    """Add the schemas that hand-parsed bodies refer to."""
    original = app.openapi

    def openapi() -> dict[str, Any]:
        if app.openapi_schema:
            return app.openapi_schema
        schema = original()
        comps = schema.setdefault("components", {}).setdefault("schemas", {})
        for model in (InterpretRequest, DefinitionSummary, WatchEvent):
            model_schema = model.model_json_schema(ref_template="#/components/schemas/{model}")
            for name, sub in model_schema.pop("$defs", {}).items():
                comps.setdefault(name, sub)
            comps.setdefault(model.__name__, model_schema)
        comps["KubernetesObject"] = {
            "type": "object", "title": "KubernetesObject", "additionalProperties": True,
            "required": ["apiVersion", "kind"],
            "properties": {"apiVersion": {"type": "string"}, "kind": {"type": "string"},
                           "metadata": {"type": "object", "additionalProperties": True}},
        }
        # Errors are problem+json: move the Problem schema FastAPI filed under application/json.
        for ops in schema.get("paths", {}).values():
            for op in ops.values():
                for code, resp in (op.get("responses") or {}).items():
                    content = resp.get("content") or {}
                    if code.startswith(("4", "5")) and "application/problem+json" in content:
                        sch = content.pop(JSON, {}).get("schema") or {"$ref": "#/components/schemas/Problem"}
                        content["application/problem+json"] = {"schema": sch}
        app.openapi_schema = schema
        return schema

    app.openapi = openapi  # type: ignore[method-assign]
