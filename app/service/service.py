"""The state one service process shares between its handlers, and the steps they share: decode
and interpret a body, resolve a definition, pick the reader of a cluster's data, explain a miss.

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
from collections.abc import AsyncIterator, Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import orjson

from ..cluster.reader import Known, LookupFailed, WorkloadReader, matches_token
from ..engine.attribution import PodPart
from ..engine.interpret import InterpretationError, LiveBase, live_base_and_result, phase_of, pod_parts
from ..engine.options import EngineOptions
from ..engine.pool import (
    EvaluationBusy,
    EvaluationCrashed,
    EvaluationOutOfMemory,
    EvaluationTimeout,
    Evaluator,
    PoolCounters,
)
from ..fleet.member import Member
from ..karta.load import Definition
from ..karta.registry import AmbiguousDefinition
from ..karta.store import DefinitionStore
from ..model.protocol import ClusterModel
from ..store.errors import StoreUnavailable
from . import fleet_reads
from .auth import Authorizer
from .bodies import decode
from .cluster import Cluster
from .consumer_formats import consumer_format
from .dependency_checks import DependencyChecks
from .errors import lookup_problem
from .gc_policy import CollectorPolicy
from .inline import InlineDefinitions
from .metrics import Metrics
from .middleware import BodyLimits
from .models import InterpretRequest
from .problems import ProblemError, envelope
from .settings import Settings, auth_mode, fleet_mode
from .shutdown import stop_on_signal
from .streams import Limits
from .workload_metrics import WorkloadMetrics

if TYPE_CHECKING:  # (the store's parts load the Redis client: only behind a store)
    from .sharing import Sharing


@dataclass
class Read:
    """What reading one request's subject learned beside the object, for its answer: how fresh
    a `ref` read is and (in a fleet) its cluster; and the object's labels, which a batch groups
    its items by (known even when the item fails after the read).  Only the labels: a batch of
    many large objects must not keep each one alive until the last item is done (the collector's
    full passes grow with them)."""

    labels: Any = None
    freshness: dict[str, Any] | None = None
    cluster: str | None = None
    member: Member | None = None  # the cluster a `ref` was read from


def _is_manifest(doc: Any) -> bool:
    return isinstance(doc, dict) and "apiVersion" in doc and "kind" in doc and "object" not in doc


def one_document(body: bytes, media: str) -> Any:
    """The one document of a JSON or YAML body (400 for none or several)."""
    docs = decode(body, media)
    if len(docs) != 1:
        raise ProblemError(400, "malformed-body", "Malformed body", f"expected exactly one document, got {len(docs)}")
    return docs[0]


def metric_label(d: Definition) -> str:
    """A definition's name as a metric label: a request's own definition is "inline" (its name
    is the caller's to choose, and every new label value is a series kept for good)."""
    return "inline" if d.source == "inline" else d.name


class Service:
    """State shared by the handlers of one process.  Its parts are made from the settings by
    wiring.build (the one place that does), and passed in: the engine's options, the stream
    and body limits, the metrics."""

    def __init__(
        self,
        settings: Settings,
        *,
        engine: EngineOptions,
        streams: Limits,
        body_limits: BodyLimits,
        metrics: Metrics,
        collector: CollectorPolicy | None = None,
    ):
        self.settings = settings
        self.collector = collector  # None: Python's own thresholds, no freeze after a sync
        self.engine, self.streams, self.body_limits, self.metrics = engine, streams, body_limits, metrics
        home, others = settings.check().cluster_specs()  # ValueError: settings that cannot work together
        self.cluster_wanted = home is not None or bool(others)
        self.fleet_mode = fleet_mode(settings)  # rows, interpretations and metrics name their cluster
        self.store = DefinitionStore(settings.definitions, Cluster.source_keys(settings) if home is not None else None)
        self.cluster: Cluster | None = None
        # every read of cluster data is made with the caller's rights, asked here (auth.py)
        self.auth = Authorizer(
            auth_mode(settings) == "kubernetes", lambda: self.cluster.access if self.cluster is not None else None
        )
        self.evaluator = Evaluator(
            settings.isolation,
            settings.eval_workers,
            settings.eval_deadline,
            settings.eval_queue_timeout,
            settings.eval_worker_memory,
            engine,
            PoolCounters(
                restarts=metrics.worker_restarts.inc,
                queue_timeouts=metrics.worker_queue_timeouts.inc,
                retries=metrics.worker_retries.inc,
            ),
        )
        self.inline = InlineDefinitions()  # bounded by bytes; invalid ones kept only as their findings
        self.dependency_checks = DependencyChecks()  # `exists` of live answers' dependencies, bounded
        self.ready = False
        self.stop = asyncio.Event()
        self.workload_metrics: WorkloadMetrics | None = None
        self.background: list[asyncio.Task[None]] = []

    @contextlib.asynccontextmanager
    async def running(self) -> AsyncIterator[None]:
        """The process's life (the app's lifespan): evaluator, definition watch, cluster, then
        serving; on the way out, each stopped in turn."""
        settings = self.settings
        if self.collector is not None:
            self.collector.apply()
        # Workers start with the first definition that needs one (a catalog-only service never
        # pays their ~40 MB each); a service given definition folders starts them at once.
        await self.evaluator.start(eager=bool(settings.definitions) or settings.isolation == "all")
        watcher = asyncio.create_task(self.store.watch(self.stop)) if self.store.folders else None
        restore_signals = stop_on_signal(self.stop)  # SIGTERM: streams end at once, not at the timeout
        self.background.append(asyncio.create_task(self.streams.end_on(self.stop)))
        if self.cluster_wanted:
            self.cluster = await Cluster.connect(self.store, settings, ModelEvaluation(self))
            self.cluster.start(self.stop)
            if settings.cache:
                self.background.append(asyncio.create_task(self.warm_metrics(self.cluster.model)))
            if self.collector is not None:
                self.background.append(asyncio.create_task(self.collector.watch(self.cluster.live_models, self.stop)))
        # The catalog, compiled programs and app objects live for the process: keep them out of
        # the collector's sight, so full collections stay short (they showed as p99 spikes).
        gc.collect()
        gc.freeze()
        self.ready = True
        logging.getLogger("wlmap").info(
            "serving on %s's event loop", type(asyncio.get_running_loop()).__module__.split(".")[0]
        )
        try:
            yield
        finally:
            restore_signals()
            self.ready = False
            self.stop.set()
            for t in self.background:
                t.cancel()
            if watcher is not None:
                watcher.cancel()
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await watcher
            if self.cluster is not None:
                await self.cluster.close()
            await self.evaluator.close()

    async def warm_metrics(self, model: ClusterModel | None) -> None:
        """Render the workload metrics once the model is synced, so the first scrape finds every
        workload's lines ready (later scrapes render only what changed)."""
        while not self.stop.is_set() and not (model.synced if model is not None else True):
            await asyncio.sleep(0.5)
        renderer = self.metrics_renderer()
        await renderer.warm()  # in chunks: changes keep being applied meanwhile
        renderer.render()

    def metrics_renderer(self) -> WorkloadMetrics:
        if self.workload_metrics is None:
            fleet = self.need_cluster("workload metrics").fleet
            self.workload_metrics = WorkloadMetrics(
                lambda: [m.model for m in fleet.members.values() if m.model is not None], self.fleet_mode
            )
        return self.workload_metrics

    # -- definitions -----------------------------------------------------------------------
    def inline_definition(self, doc: Any) -> Definition:
        if not self.settings.allow_inline_definitions:
            raise ProblemError(
                403,
                "inline-definitions-disabled",
                "Inline definitions are disabled",
                "this service does not accept definitions in requests",
            )
        return self.inline.definition(doc)

    def bound_pods(self, n: int) -> None:
        """Pods are interpreted one by one: their number in one request is bounded (--max-pods)."""
        if n > self.settings.max_pods:
            raise ProblemError(
                413,
                "too-many-pods",
                "Too many pods",
                f"{n} pods in one request; at most {self.settings.max_pods} (--max-pods)",
            )

    def resolve(self, obj: dict[str, Any]) -> Definition:
        try:
            d = self.store.registry.resolve_object(obj)
        except AmbiguousDefinition as e:
            raise ProblemError(409, "ambiguous-definition", "Ambiguous definition", str(e)) from None
        if d is None:
            raise ProblemError(
                404,
                "no-definition",
                "No definition",
                f"no Karta definition covers {obj.get('apiVersion')} {obj.get('kind')}",
            )
        return d

    # -- interpretation --------------------------------------------------------------------
    async def interpret_body(
        self, body: bytes, media: str, request_state: dict[str, Any], fmt: str | None = None
    ) -> dict[str, Any]:
        return await self.interpret_doc(one_document(body, media), request_state, fmt=fmt)

    async def interpret_doc(
        self, doc: Any, request_state: dict[str, Any], read: Read | None = None, fmt: str | None = None
    ) -> dict[str, Any]:
        """One interpretation; `read` (a batch's, per item) gets what reading its subject learned."""
        if _is_manifest(doc):
            env = InterpretRequest(object=doc)
        else:
            env = envelope(
                InterpretRequest, doc, 'expected a manifest or an object {"object": ..., "definition"?, "pods"?}'
            )
        return await self.interpret_request(env, request_state, read, fmt)

    async def interpret_request(
        self,
        env: InterpretRequest,
        request_state: dict[str, Any],
        read: Read | None = None,
        fmt: str | None = None,
        member: Member | None = None,
    ) -> dict[str, Any]:
        """One interpretation of a validated envelope (a batch's items come this way, neither
        dumped nor validated again); `fmt` (a key of app.formats.FORMATS): in that consumer's shape."""
        self.bound_pods(len(env.pods or ()))
        read = read if read is not None else Read()
        # a shape carries the whole pod template; the live model keeps only what definitions read
        obj, d = await self.subject(env, request_state, read, whole=fmt is not None, member=member)
        pods = env.pods
        if pods is not None and not all(isinstance(p, dict) for p in pods):
            raise ProblemError(422, "invalid-request", "Invalid request", "every pod must be an object")
        result = await self.evaluate(d, obj, pods, templates=fmt is not None)
        request_state["phase"] = phase_of(result)  # (the access log's)
        if fmt is not None:
            return consumer_format(fmt, result)
        if read.freshness is not None:
            result["freshness"] = read.freshness
        if read.member is not None and result.get("dependencies"):
            await self.check_dependencies(read.member, obj, result["dependencies"], request_state)
        if read.cluster is not None:
            result = {"cluster": read.cluster, **result}
        return result

    async def subject(
        self, env: Any, request_state: dict[str, Any], read: Read, whole: bool = False, member: Member | None = None
    ) -> tuple[dict[str, Any], Definition]:
        """The object of an envelope (sent, or read with the caller's rights by `ref`; `whole`:
        as the API server holds it) and the definition to read it with (inline, or the registry's);
        `read` gets what the read learned, as soon as it is known."""
        obj = env.object
        if env.ref is not None:
            if env.object is not None:
                raise ProblemError(422, "invalid-request", "Invalid request", 'give either "object" or "ref", not both')
            obj, read.freshness, read.member = await self.fetch_ref(env.ref.model_dump(), request_state, whole, member)
            read.cluster = read.member.name if self.fleet_mode else None
        if obj is None:
            raise ProblemError(422, "invalid-request", "Invalid request", 'give either "object" or "ref"')
        meta = obj.get("metadata")
        read.labels = meta.get("labels") if isinstance(meta, dict) else None
        if not isinstance(obj.get("apiVersion"), str) or not isinstance(obj.get("kind"), str):
            raise ProblemError(422, "invalid-object", "Invalid object", "the object declares no apiVersion and kind")
        d = self.inline_definition(env.definition) if env.definition is not None else self.resolve(obj)
        request_state["definition"] = d.name
        return obj, d

    async def evaluate(
        self, d: Definition, obj: dict[str, Any], pods: list[dict[str, Any]] | None, templates: bool = False
    ) -> dict[str, Any]:
        with self.evaluation_problems(d):
            result = await self.evaluator.interpret(d, obj, pods, templates)
        self.count_interpretation(d, phase_of(result), [e["part"] for e in result.get("errors") or []])
        return result

    @contextlib.contextmanager
    def evaluation_problems(self, d: Definition) -> Iterator[None]:
        """An evaluation's failures as the problems a caller is answered with (counted)."""
        label, metrics = metric_label(d), self.metrics
        try:
            yield
        except InterpretationError as e:
            metrics.interpretation_errors.labels(label, "definition").inc()
            raise ProblemError(422, "interpretation-failed", "Interpretation failed", str(e), e.errors) from None
        except EvaluationTimeout as e:
            metrics.deadline_hits.labels(label).inc()
            metrics.interpretation_errors.labels(label, "deadline").inc()
            raise ProblemError(
                422,
                "evaluation-deadline-exceeded",
                "Evaluation deadline exceeded",
                str(e),
                [{"path": e.path, "message": str(e), "expression": e.expression}],
            ) from None
        except EvaluationOutOfMemory as e:
            metrics.interpretation_errors.labels(label, "memory").inc()
            raise ProblemError(422, "evaluation-memory-exceeded", "Evaluation memory exceeded", str(e)) from None
        except EvaluationBusy as e:  # the live model retries these later; a client is told when
            raise ProblemError(
                503, "evaluation-busy", "Evaluation workers busy", str(e), headers={"Retry-After": str(e.retry_after)}
            ) from None
        except EvaluationCrashed as e:
            metrics.interpretation_errors.labels(label, "crash").inc()
            raise ProblemError(500, "evaluation-crashed", "Evaluation failed", str(e)) from None

    def count_interpretation(self, d: Definition, phase: str, failed: Sequence[str]) -> None:
        """An interpretation made: its phase, and each part that could not be computed."""
        label, metrics = metric_label(d), self.metrics
        metrics.interpretations.labels(label, phase).inc()
        for part in failed:
            metrics.partial_parts.labels(label, part).inc()

    # -- cluster ---------------------------------------------------------------------------
    def need_cluster(self, what: str) -> Cluster:
        if self.cluster is None:
            raise ProblemError(
                501,
                "no-cluster",
                "No cluster configured",
                f"{what} need cluster access; this service runs without a cluster "
                "(start it with --kubeconfig, or in a cluster)",
            )
        return self.cluster

    def reader(
        self,
        member: Member,
        kind: str | None = None,
        api_version: str | None = None,
        namespace: str | None = None,
        whole: bool = False,
    ) -> WorkloadReader:
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
    def sharing(self) -> Sharing | None:
        """The store's parts (--store), else None."""
        return self.cluster.sharing if self.cluster is not None else None

    def need_store(self) -> None:
        """Behind a store, no read is answered while it is away (503), rather than from rows that
        may be stale: every read of cluster data passes here."""
        if self.sharing is not None and not self.sharing.hub.connected:
            raise StoreUnavailable()

    def member(self, name: str | None, what: str = "live workloads") -> Member:
        """The cluster a request names (None: the service's own); 404 unknown, 503 down."""
        cluster = self.need_cluster(what)
        self.need_store()
        if name is None:
            m = cluster.home or (
                next(iter(cluster.fleet.members.values())) if len(cluster.fleet.members) == 1 else None
            )
            if m is None:
                raise ProblemError(
                    400,
                    "cluster-required",
                    "Cluster required",
                    "this service has no cluster of its own: name one (?cluster= or ref.cluster)",
                )
            return m
        m = cluster.fleet.get(name)
        if m is None:
            raise ProblemError(
                404, "cluster-not-found", "Cluster not found", f"no cluster named {name!r} (GET /clusters lists them)"
            )
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

    async def describe(
        self,
        member: Member,
        namespace: str,
        name: str,
        kind: str | None,
        api_version: str | None,
        pods: bool,
        state: dict[str, Any],
    ) -> bytes:
        """One live workload's answer (JSON), read with the caller's rights."""
        allow = self.auth.rights(state, member)
        try:
            body = await self.reader(member, kind, api_version, namespace).describe(
                namespace, name, kind, api_version, with_pods=pods, allow=allow
            )
        except LookupFailed as e:
            raise self.explained(e, namespace, name, kind) from None
        return body

    async def ref_member(self, ref: dict[str, Any], request_state: dict[str, Any], whole: bool = False) -> Member:
        """The cluster a `ref` names (in a fleet without one: the one cluster that has it)."""
        self.need_cluster("object references")
        namespace = ref.get("namespace")
        if ref.get("cluster") is None and self.fleet_mode:
            return await fleet_reads.find_in_fleet(
                self.members(None),
                namespace or "",
                ref["name"],
                ref["kind"],
                ref["apiVersion"],
                lambda m: self.auth.rights(request_state, m),
                lambda m: self.reader(m, ref["kind"], ref["apiVersion"], namespace, whole),
            )
        return self.member(ref.get("cluster"), "object references")

    async def fetch_ref(
        self, ref: dict[str, Any], request_state: dict[str, Any], whole: bool = False, member: Member | None = None
    ) -> tuple[dict[str, Any], dict[str, Any], Member]:
        """The object a `ref` names, how fresh the read is, and the cluster it was read from."""
        namespace = ref.get("namespace")
        member = member or await self.ref_member(ref, request_state, whole)
        allow = self.auth.rights(request_state, member)
        try:
            obj, freshness = await self.reader(member, ref["kind"], ref["apiVersion"], namespace, whole).object(
                ref["apiVersion"], ref["kind"], namespace, ref["name"], allow=allow
            )
        except LookupFailed as e:
            raise self.explained(e, namespace or "", ref["name"], ref["kind"]) from None
        return obj, freshness, member

    async def check_dependencies(
        self, member: Member, obj: dict[str, Any], deps: list[dict[str, Any]], state: dict[str, Any]
    ) -> None:
        """A live answer's dependencies gain `exists`, each checked with the caller's rights."""
        namespace = (obj.get("metadata") or {}).get("namespace")
        await self.dependency_checks.annotate(member, namespace, deps, self.auth.rights(state, member))

    async def with_dependency_checks(self, member: Member, body: bytes, state: dict[str, Any]) -> bytes:
        """A live answer (JSON) with `exists` on its dependencies; a workload without any costs a
        byte search."""
        if b'"dependencies":[]' in body or b'"dependencies"' not in body:
            return body
        doc = orjson.loads(body)
        await self.check_dependencies(member, {"metadata": doc.get("workload") or {}}, doc["dependencies"], state)
        return orjson.dumps(doc)

    def explained(self, e: LookupFailed, namespace: str, name: str, kind: str | None) -> ProblemError:
        """A lookup that found nothing, where an invalid definition is why: say so, and where."""
        if e.status == 404 and e.slug in ("workload-not-found", "no-definition", "kind-not-served"):
            reg = self.store.registry
            bad = [
                d
                for st in self.store.all_states()
                for d in st.rejected
                if d.gvk is not None and not reg.covers(d.gvk) and (not kind or matches_token(kind, Known(d, None)))
            ]
            if bad:
                notes = []
                for d in bad:
                    g, v, k = d.gvk  # type: ignore[misc]
                    first = next((f.message for f in d.findings if f.level == "error"), "invalid")
                    notes.append(
                        f"the only definition of {k} ({g + '/' if g else ''}{v}), {d.name or '?'} from "
                        f"{d.origin}, is invalid: {first}"
                    )
                return ProblemError(
                    404,
                    "definition-invalid",
                    "Definition invalid",
                    e.message + "; " + "; ".join(notes),
                    [
                        {
                            "path": d.origin,
                            "message": next((f.message for f in d.findings if f.level == "error"), "invalid"),
                        }
                        for d in bad
                    ],
                )
        return lookup_problem(e)


class ModelEvaluation:
    """How the live models evaluate (model/answers.py `PartsEngine`): every interpretation as
    `Service.evaluate` makes it, and for a definition evaluated in this process the base of a live
    view and its pods' parts, with the same problems and counts."""

    def __init__(self, service: Service):
        self.service = service

    async def __call__(self, d: Definition, obj: dict[str, Any], pods: list[dict[str, Any]] | None) -> dict[str, Any]:
        return await self.service.evaluate(d, obj, pods)

    def live_base(self, d: Definition, obj: dict[str, Any]) -> tuple[LiveBase, dict[str, Any]] | None:
        s = self.service
        if s.evaluator.isolated(d):
            return None
        with s.evaluation_problems(d):
            base, result = live_base_and_result(obj, d, s.evaluator.options)
        s.count_interpretation(d, base.phase, base.failed)
        return base, result

    def pod_parts(self, base: LiveBase, pods: list[dict[str, Any]]) -> list[PodPart]:
        with self.service.evaluation_problems(base.cd.definition):
            return pod_parts(base, pods)
