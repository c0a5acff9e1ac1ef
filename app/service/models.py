"""The HTTP contract as pydantic models (docs/api-contract.md), for OpenAPI and generated clients.

Responses are produced by the engine as plain dicts and sent as they are (validation of every
response would double the cost); `tests/service/test_openapi.py` checks real responses against
these models, so the schema and the engine cannot drift apart.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

Phase = Literal[
    "Initializing", "Running", "Completed", "Failed", "Degraded", "Suspended", "Suspending", "Resuming", "Undefined"
]
Source = Literal["builtin", "directory", "configmap", "inline", "cluster"]


class _M(BaseModel):
    model_config = ConfigDict(extra="allow")


# -- interpretation ----------------------------------------------------------------------


class WorkloadRef(_M):
    apiVersion: str | None
    kind: str | None
    namespace: str | None
    name: str | None
    uid: str | None


class DefinitionRef(_M):
    name: str = Field(description="metadata.name of the Karta")
    source: Source
    digest: str = Field(description="sha256 of the canonical definition", examples=["sha256:…"])


class Condition(_M):
    type: str
    status: str | None
    reason: str | None
    message: str


class Status(_M):
    phase: Phase = Field(
        description="one primary phase: Resuming > Suspending > Suspended > Failed > Completed > "
        "Degraded > Running > Initializing > Undefined"
    )
    matched: list[Phase] = Field(description="every matched status, in the format's evaluation order")
    rawPhase: str | None = Field(None, description="phaseDefinition result, when the definition has one")
    conditions: list[Condition]
    deleting: bool = Field(description="metadata.deletionTimestamp is set")
    stale: bool = Field(description="status.observedGeneration is behind metadata.generation")


class GVK(_M):
    group: str
    version: str
    kind: str


class ContainerBrief(_M):
    name: str | None
    image: str | None


_ACCELERATORS = (
    "accelerator resources (--accelerator-resource patterns: nvidia.com/gpu, nvidia.com/mig-*, "
    "amd.com/gpu, gpu.intel.com/*, habana.ai/gaudi, aws.amazon.com/neuron*, google.com/tpu by "
    "default) as integer counts, rounded up"
)
_GPUS = (
    "whole GPU devices: the sum over the --gpu-resource resources (nvidia.com/gpu, amd.com/gpu, "
    "gpu.intel.com/i915, gpu.intel.com/xe, habana.ai/gaudi by default), each rounded up; MIG slices and other "
    "partitions are in accelerators, never here"
)
_REQUEST_VALUES = (
    "the same keys as requests as integers in base units, rounded up: cpu in millicores, memory, "
    "storage and hugepages-* in bytes, other resources as counts"
)


class PodView(_M):
    requests: dict[str, str] = Field(
        description="effective per-pod requests (Kubernetes quantities), every resource name"
    )
    requestValues: dict[str, int] = Field(
        description=_REQUEST_VALUES, examples=[{"cpu": 4000, "memory": 17179869184, "nvidia.com/gpu": 8}]
    )
    gpus: int = Field(description=_GPUS + " (per pod)")
    accelerators: dict[str, int] = Field(
        description=_ACCELERATORS + " (per pod)", examples=[{"nvidia.com/gpu": 8}, {"nvidia.com/mig-1g.5gb": 2}]
    )
    containers: list[ContainerBrief]
    schedulerName: str | None
    priorityClassName: str | None
    initContainers: list[ContainerBrief] | None = None
    # Placement, as written in the pod definition; each absent when unset.
    nodeSelector: dict[str, str] | None = None
    tolerations: list[dict[str, Any]] | None = None
    affinity: dict[str, Any] | None = Field(
        None, description="a fragmented definition's nodeAffinity and podAffinity appear here, as in a pod spec"
    )
    topologySpreadConstraints: list[dict[str, Any]] | None = None
    runtimeClassName: str | None = None
    resourceClaims: list[dict[str, Any]] | None = None
    labels: dict[str, str] | None = None
    annotations: dict[str, str] | None = Field(
        None,
        description="the pod template's annotations as written (e.g. a fractional-GPU request such as "
        'gpu-fraction: "0.5", which is reported and never counted as GPUs)',
    )


class Totals(_M):
    pods: int
    gpus: int = Field(description=_GPUS)
    accelerators: dict[str, int] = Field(description=_ACCELERATORS)
    requests: dict[str, str] = Field(description="Kubernetes quantities, every resource name")
    requestValues: dict[str, int] = Field(
        description=_REQUEST_VALUES, examples=[{"cpu": 13000, "memory": 695784701952, "nvidia.com/gpu": 12}]
    )


class InstanceLive(_M):
    current: int
    ready: int
    desired: int
    nodes: list[str]


class Instance(_M):
    id: str | None = Field(description="null for the implicit single instance")
    replicas: int | None
    minReplicas: int | None
    maxReplicas: int | None
    pod: PodView | None = Field(None, description="only on pod-bearing components")
    totals: Totals
    live: InstanceLive | None = None


class PartError(_M):
    """A part of the interpretation that could not be computed (docs/api-contract.md, "Partial
    interpretations")."""

    part: Literal["status", "component", "gang"]
    component: str | None = Field(
        None,
        description="the component that failed (component errors), or the one "
        "whose failure left the gang unknown (gang errors)",
    )
    path: str | None = Field(
        description="the definition field, e.g. spec.structureDefinition.childComponents[1]"
        ".scaleDefinition.replicasPath"
    )
    expression: str | None = Field(None, description="the jq expression at that path")
    message: str = Field(description="the reference library's wording")


class ComponentNode(_M):
    name: str
    kind: GVK | None
    podBearing: bool
    instances: list[Instance] = Field(description="empty when the component could not be computed")
    totals: Totals | None = Field(description="null when this component or one below it could not be computed")
    children: list[ComponentNode]
    error: PartError | None = Field(None, description="why this component could not be computed")


class Topology(_M):
    topologyName: str | None
    preferredTopologyLevel: str | None
    requiredTopologyLevel: str | None


class SubGroup(_M):
    name: str | None
    minAvailable: int | None
    topology: Topology | None = None
    error: str | None = None


class PodGroupV2(_M):
    name: str = Field(description="KAI PodGroup name: pg-<uid>-<podGroup.name>")
    definitionName: str | None
    minAvailable: int | None
    minSubGroup: int
    subGroups: list[SubGroup]
    topology: Topology | None = None
    error: str | None = None


class GroupMember(_M):
    component: str | None
    minAvailable: int | None
    groupByKeyPaths: list[str]
    filters: list[str]
    error: str | None = None


class PodGroupAlpha(_M):
    name: str | None
    members: list[GroupMember]


class PodGang(_M):
    pod: str
    component: str | None = None
    instance: str | None = None
    effectiveComponent: str | None = None
    podGroupDefinition: str | None = None
    groupKeys: list[str] | None = None
    podGroup: str | None = None
    subGroups: list[str | None] | None = None
    minAvailable: int | None = None
    error: str | None = None


class PodGroupInstance(_M):
    name: str
    minAvailable: int | None
    pods: list[str]


class Gang(_M):
    mode: Literal["podGroup", "podGroups"] | None = None
    podGroup: PodGroupV2 | None = None
    podGroups: list[PodGroupAlpha] | None = None
    pods: list[PodGang] | None = Field(None, description="per supplied pod: what KAI's Karta grouper decides")
    groups: list[PodGroupInstance] | None = None


class LivePod(_M):
    name: str
    component: str
    instance: str | None
    phase: str | None
    ready: bool
    node: str | None
    reason: str | None = Field(
        description="why not ready: PodScheduled=False reason, else status.reason, else the Ready=False reason"
    )
    containerReason: str | None = Field(None, description="a waiting container's reason (CrashLoopBackOff, ...)")


class Dependency(_M):
    kind: Literal[
        "ConfigMap",
        "PersistentVolumeClaim",
        "PriorityClass",
        "ResourceClaim",
        "ResourceClaimTemplate",
        "Secret",
        "ServiceAccount",
    ]
    name: str
    components: list[str] = Field(description="the pod-bearing components whose pods refer to it")
    optional: bool = Field(
        description="true only when every reference to it is marked optional: the pods start without it"
    )
    exists: bool | None = Field(
        None,
        description="live answers only: whether it is in the workload's cluster; null when the caller "
        "(or the service) may not read it there or the cluster cannot say",
    )


class Live(_M):
    current: int
    ready: int
    desired: int | None = Field(
        description="desired pods of the whole workload (null when a component could not be computed)"
    )
    pods: list[LivePod]
    unplaced: list[str] | None = None
    deleting: bool | None = None
    stale: bool | None = None


class Freshness(_M):
    """How current a live answer is."""

    source: Literal["model", "direct", "store"] = Field(
        description="model: answered from the watch-maintained model; direct: read from the API server for this "
        "request; store: from the shared store a shard keeps (--store)"
    )
    resourceVersion: str | None = Field(
        description="model: the newest resourceVersion the model has applied; direct: the object's"
    )
    observedAt: str = Field(
        description="the time the answer reflects: now while every watch is connected, "
        "else when the model last heard from the API server"
    )
    watching: bool = Field(description="every watch behind the answer is connected")


class Interpretation(_M):
    workload: WorkloadRef
    definition: DefinitionRef
    complete: bool = Field(
        True,
        description="false when some part (status, a component, the gang) could not be "
        "computed; every part that could is still given, and `errors` names "
        "the rest",
    )
    errors: list[PartError] = Field(default_factory=list, description="the parts that could not be computed")
    status: Status | None = Field(description="null when the status could not be computed")
    tree: ComponentNode
    totals: Totals | None = Field(
        description="null unless every component was computed: a partial count is never given as the whole"
    )
    gang: Gang | None = Field(
        description="{} when the definition has no gang instructions; null when a component "
        "it sizes could not be computed"
    )
    dependencies: list[Dependency] = Field(
        default_factory=list,
        description="the objects its pods refer to by name (volumes, env, image pull secrets, service "
        "account, priority class, resource claims), sorted by kind then name",
    )
    warnings: list[str]
    live: Live | None = Field(None, description="present when pods were supplied or read from the cluster")
    freshness: Freshness | None = Field(None, description="live reads only (ref, /workloads): from where, as of when")
    cluster: str | None = Field(
        None, description="the cluster the workload was read from (when clusters are configured)"
    )


class ObjectRefOut(_M):
    apiVersion: str
    kind: str
    namespace: str
    name: str
    cluster: str | None = Field(None, description="the cluster holding it (a name found in several clusters)")


# -- errors ------------------------------------------------------------------------------


class ProblemError(_M):
    path: str | None = None
    message: str
    expression: str | None = None
    level: str | None = None


class Problem(_M):
    """RFC 9457 problem details (application/problem+json)."""

    type: str
    title: str
    status: int
    detail: str
    instance: str | None = None
    errors: list[ProblemError] | None = None
    candidates: list[ObjectRefOut] | None = Field(
        None, description="409 ambiguous-workload: the workloads that share the name; repeat with kind and apiVersion"
    )


# -- requests ----------------------------------------------------------------------------


class ObjectRef(BaseModel):
    model_config = ConfigDict(extra="forbid")
    apiVersion: str = Field(min_length=1)
    kind: str = Field(min_length=1)
    namespace: str | None = None
    name: str = Field(min_length=1)
    cluster: str | None = Field(
        None,
        min_length=1,
        description="which cluster (default: the service's own, or the only one that has the object)",
    )


class InterpretRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")
    object: dict[str, Any] | None = Field(None, description="the workload manifest")
    ref: ObjectRef | None = Field(None, description="a live object to fetch (needs a cluster)")
    definition: dict[str, Any] | None = Field(None, description="a Karta to use instead of the registry's (inline)")
    pods: list[dict[str, Any]] | None = Field(None, description="pods of the workload, for placement and gang groups")


Count = Annotated[int, Field(strict=True, ge=0, le=2**31 - 1)]  # a replica count (int32, as the reference reads it)


class PodSet(BaseModel):
    """What `POST /interpret/update` writes into every pod of the chosen components."""

    model_config = ConfigDict(extra="forbid")
    labels: dict[str, str] | None = Field(None, description="merged into the pods' labels (keys not set are kept)")
    annotations: dict[str, str] | None = Field(None, description="merged into the pods' annotations")
    schedulerName: str | None = Field(None, min_length=1, description="replaces the pods' scheduler")
    priorityClassName: str | None = Field(None, min_length=1, description="replaces the pods' priority class")
    nodeSelector: dict[str, str] | None = Field(None, description="merged into the pods' node selector")
    tolerations: list[dict[str, Any]] | None = Field(
        None, description="appended where not already there (equal = the same toleration)"
    )


class UpdateRequest(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)
    object: dict[str, Any] | None = Field(None, description="the workload manifest")
    ref: ObjectRef | None = Field(None, description="a live object to read, with the caller's rights (needs a cluster)")
    definition: dict[str, Any] | None = Field(None, description="a Karta to use instead of the registry's (inline)")
    set_: PodSet | None = Field(None, alias="set", description="the fields to write (`set`, `replicas` or both)")
    components: list[str] | None = Field(
        None,
        min_length=1,
        max_length=1000,
        description="the components `set` rewrites (default: every one that defines pods)",
    )
    replicas: dict[str, Count] | None = Field(
        None,
        min_length=1,
        max_length=1000,
        description='counts written through each component\'s replicasPath: `{"<component>": n}` for every '
        'instance of it, `{"<component>/<instance id>": n}` for one',
    )


class ScaleRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")
    replicas: dict[str, Count] = Field(
        min_length=1,
        max_length=1000,
        description='counts written through each component\'s replicasPath: `{"<component>": n}` for every '
        'instance of it, `{"<component>/<instance id>": n}` for one (as POST /interpret/update takes them)',
    )


class PatchOperation(_M):
    op: str = Field(
        description="test (the resourceVersion the patch was made from) | add | replace | remove (RFC 6902)"
    )
    path: str = Field(description="RFC 6901 JSON pointer")
    value: Any = None


class UpdateWrite(_M):
    component: str
    form: str = Field(
        description="podTemplateSpec | podSpec | metadata, the fragment written (labels, ...), or replicas"
    )
    fields: list[str] = Field(description="the set fields written there")
    expression: str = Field(description="the definition's path")
    path: str = Field(description="the location, as a JSON pointer into the object")
    changed: bool
    instance: str | None = Field(None, description="replicas: the instance whose count is there (null: the only one)")
    skipped: str | None = Field(None, description="why nothing was written (no pod there)")
    created: bool | None = Field(None, description="the fragment's parent object was absent and was created")


class UpdateResponse(_M):
    cluster: str | None = Field(None, description="the cluster the `ref` was read from (several clusters served)")
    object: dict[str, Any] = Field(description="the rewritten object")
    patch: list[PatchOperation] = Field(description="RFC 6902 operations that turn the object into the rewritten one")
    changed: int = Field(description="locations whose value changed")
    components: list[str]
    writes: list[UpdateWrite] = Field(description="every location resolved, in order")
    definition: DefinitionRef
    totals: Totals | None = Field(None, description="the rewritten object's totals (as it reads back)")
    applied: bool | None = Field(
        None,
        description="with apply=true: the patch was applied (false: nothing to "
        "change); `object` is then the object as stored",
    )


class BatchRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")
    items: list[InterpretRequest] = Field(max_length=1000)


class BatchError(BaseModel):
    error: Problem


class BatchTotals(Totals):
    """The items' totals summed (requests exactly; requestValues from the exact sum)."""

    failed: int = Field(description="items that add nothing: failed, or partial with totals null")


class BatchGroup(BaseModel):
    value: str | None = Field(description="the label's value; null for the items without the label")
    items: list[int] = Field(description="indexes into items")
    totals: BatchTotals


class BatchResponse(BaseModel):
    items: list[Interpretation | BatchError | dict[str, Any]] = Field(
        description="per item its interpretation, or its consumer shape with format=, or its error"
    )
    totals: BatchTotals | None = Field(
        None, description="summed over the items whose totals are known (absent with format=)"
    )
    groups: list[BatchGroup] | None = Field(
        None, description="with groupBy: by label value, ordered by value, null last"
    )


# -- definitions -------------------------------------------------------------------------


class Finding(BaseModel):
    path: str
    message: str
    level: Literal["error", "warning"]


class DefinitionSummary(BaseModel):
    name: str
    group: str | None
    version: str | None
    kind: str | None
    source: Source
    origin: str
    digest: str
    state: Literal["active", "shadowed", "ambiguous", "invalid", "last-good"] = Field(
        description="active: serves its GVK; shadowed: a higher source serves it; ambiguous: another definition of "
        "the same source claims the GVK; invalid: refused; last-good: this version is served because "
        "a newer edit is invalid"
    )
    errors: list[Finding]
    warnings: list[Finding]


class SourceStatus(BaseModel):
    name: str = Field(description="builtin, cluster (Karta custom resources), configmap, or a folder path")
    state: Literal["static", "starting", "synced", "unavailable", "forbidden", "not-served", "watching"]
    error: str | None = None
    resourceVersion: str | None = None
    objects: int | None = Field(None, description="ConfigMaps or Karta resources currently read")
    relists: int | None = Field(None, description="full lists so far (the first, then one per 410 Gone)")
    reconnects: int | None = Field(None, description="watches resumed after a broken connection")
    problems: list[str] = Field(
        default_factory=list,
        description="documents that could not be read (the last good definitions they held stay in service)",
    )
    kartaManager: KartaManagerStatus | None = Field(
        None, description="the cluster source with --manage-kartas: this replica's part in writing Karta status"
    )


class KartaManagerStatus(BaseModel):
    lease: str = Field(description="namespace/name of the Lease that elects the one replica writing Karta status")
    holder: str = Field(description="this replica's identity in the Lease")
    leading: bool = Field(description="this replica holds the Lease and writes")
    writes: dict[str, int] = Field(description="writes by this replica so far: status, labels, events")


SourceStatus.model_rebuild()


class DefinitionList(BaseModel):
    items: list[DefinitionSummary]
    sources: list[SourceStatus] | None = Field(None, description="each definition source, lowest precedence first")


# -- live workloads ----------------------------------------------------------------------


class Diagnosis(_M):
    """One reason a workload is not (fully) running."""

    severity: Literal["error", "warning"]
    reason: str = Field(
        description="Unschedulable, PendingVolumeClaim, ImagePullBackOff, CrashLoopBackOff, OOMKilled, "
        "FailedCreate, GangMinimumNotMet, ... (the scheduler's, kubelet's or controller's "
        "own word); NoCapacity: the pods that wait fit nowhere in the cluster's free capacity now (only for a "
        "caller who may `list nodes` there)"
    )
    message: str = Field(description="as they wrote it; an event on an owner is prefixed with its kind and name")
    component: str | None = Field(description="the component of the pods (or owner) it concerns")
    pods: int = Field(description="pods it concerns (0: it concerns the workload or an owner)")
    since: str | None = Field(description="RFC 3339: when it began, as far as the cluster says")
    instances: list[str] | None = Field(None, description="the component instances of those pods")
    insufficient: list[str] | None = Field(None, description="Unschedulable: the resources the scheduler found short")
    fitsIn: list[str] | None = Field(
        None,
        description="NoCapacity: the other clusters of the fleet where the whole workload fits now (among those "
        "where the caller may `list nodes`)",
    )


class LiveInterpretation(Interpretation):
    live: Live | None = Field(None, description="pods attributed by owner references (absent with pods=false)")
    diagnosis: list[Diagnosis] | None = Field(
        None, description="why it is not (fully) running, most severe first (with pods; empty when it is)"
    )


class ActionDone(_M):
    name: str = Field(description="suspend | resume | scale | restart")
    changed: bool = Field(description="false: the object already was that way, nothing was written")


class ActedInterpretation(LiveInterpretation):
    action: ActionDone = Field(description="what POST .../suspend, .../resume, .../scale or .../restart did")


class PodCounts(_M):
    ready: int | None = Field(
        description="pods owned by the workload whose Ready condition is True (null when the caller may not list pods)"
    )
    desired: int | None


class ComponentPods(_M):
    name: str
    pods: int | None = Field(description="desired pods; null when the component could not be computed")


class AggregateStatus(_M):
    phase: Phase = Field(
        description="one phase over the clusters' phases, first rule that applies: any Failed; any Degraded; all "
        "Completed; all Suspended, Suspending or Completed (Suspending if any is); any Resuming; any "
        "Initializing; any Running; else Undefined"
    )


class AggregatePart(_M):
    cluster: str
    phase: Phase | None = Field(description="this cluster's primary phase (null: its status could not be read)")
    live: PodCounts
    totals: Totals | None = Field(description="this cluster's totals (null when a component could not be computed)")
    uid: str | None = Field(description="the object's uid in this cluster")


class FleetWorkload(_M):
    """GET /fleet/workloads/{namespace}/{name}: one workload across the clusters that hold it."""

    workload: WorkloadRef = Field(description="apiVersion, kind, namespace and name (uid: null; each part has its own)")
    status: AggregateStatus
    totals: Totals | None = Field(description="the parts' totals summed (null when any part's is null)")
    clusters: list[AggregatePart] = Field(description="one part per cluster holding it, by cluster name")
    warnings: list[str] = Field(description="clusters that could not be searched, left out")


class ListMetadata(_M):
    """Paging, as Kubernetes lists page."""

    continue_: str | None = Field(
        None, alias="continue", description="give it as `continue` for the next page; absent on the last page"
    )
    resumeFrom: str | None = Field(
        None,
        description="the list stream's resume token as of this read: "
        "`?watch=true` with it (Last-Event-ID or resumeFrom) and the same filters "
        "sends only what changed since, not every row again (absent without streams)",
    )


class WorkloadSummary(_M):
    workload: WorkloadRef
    phase: str | None
    matched: list[str] | None = None
    pods: PodCounts
    gpus: int | None = Field(description="whole GPU devices (totals.gpus); null when not computed")
    accelerators: dict[str, int] | None = Field(None, description="totals.accelerators; null when not computed")
    definition: str | None = None
    createdAt: str | None = None
    labels: dict[str, str] | None = Field(None, description="the workload's labels (what labelSelector matches)")
    components: list[ComponentPods] | None = Field(
        None, description="every component that runs pods, with the pods it wants; null when not computed"
    )
    complete: bool | None = Field(
        None,
        description="false when a part could not be computed: the phase is kept, "
        "counts that would be partial (gpus, pods.desired) are null",
    )
    errors: list[PartError] | None = Field(None, description="the parts that could not be computed")
    error: str | None = Field(None, description="why this workload could not be interpreted")
    reason: str | None = Field(
        None,
        description="the top diagnosis reason (null: none, or the caller may not list "
        "the pods and events it is read from)",
    )
    cluster: str | None = Field(None, description="the cluster that holds it (when clusters are configured)")
    unavailable: bool | None = Field(
        None,
        description="true: its cluster does not answer now; the row is as last "
        "seen (freshness.observedAt of that cluster)",
    )


class ClusterRow(_M):
    """One cluster of the fleet in a workload list: did it answer, and as of when."""

    name: str
    available: bool
    synced: bool
    freshness: Freshness | None = None


class WorkloadList(_M):
    metadata: ListMetadata | None = None
    items: list[WorkloadSummary]
    warnings: list[str] = Field(default_factory=list)
    freshness: Freshness | None = None
    clusters: list[ClusterRow] | None = Field(None, description="when clusters are configured: each cluster read")


class PhaseTotals(_M):
    workloads: int
    gpus: float


# -- capacity (GET /clusters, /clusters/{cluster}/nodes) -----------------------------------------

CAPACITY_UNITS = (
    "integers (the same figures as the quantities beside them): `cpu` in millicores, memory-like resources (memory, "
    "ephemeral-storage, hugepages-*) in bytes, every other resource (GPUs, MIG slices, extended resources) "
    "as a count, `pods` as pods"
)


# Examples openapi.json shows (app/service/openapi.py), each validated by tests/service/test_openapi.py
_GPU = "nvidia.com/gpu"
_H100 = "NVIDIA-H100-80GB-HBM3"
_GPU_NODE = {  # the one GPU node of the examples, with a 4-GPU pod bound
    "allocatable": {"cpu": "64", "memory": "512Gi", _GPU: "8", "pods": "110"},
    "requested": {"cpu": "2", "memory": "8Gi", _GPU: "4", "pods": "1"},
    "free": {"cpu": "62", "memory": "504Gi", _GPU: "4", "pods": "109"},
    "allocatableValues": {"cpu": 64000, "memory": 549755813888, _GPU: 8, "pods": 110},
    "requestedValues": {"cpu": 2000, "memory": 8589934592, _GPU: 4, "pods": 1},
    "freeValues": {"cpu": 62000, "memory": 541165879296, _GPU: 4, "pods": 109},
}
_LARGEST = {
    "largestFree": _GPU_NODE["free"],
    "largestFreeValues": _GPU_NODE["freeValues"],
    "largestFreeNodes": {"cpu": "gpu-1", "memory": "gpu-1", _GPU: "gpu-1", "pods": "gpu-1"},
}
CAPACITY_EXAMPLE: dict[str, Any] = {  # the GPU node and a 16-cpu node without GPUs or pods
    "nodes": {"total": 2, "ready": 2, "schedulable": 2},
    "allocatable": {"cpu": "80", "memory": "576Gi", _GPU: "8", "pods": "220"},
    "requested": {"cpu": "2", "memory": "8Gi", _GPU: "4", "pods": "1"},
    "free": {"cpu": "78", "memory": "568Gi", _GPU: "4", "pods": "219"},
    "allocatableValues": {"cpu": 80000, "memory": 618475290624, _GPU: 8, "pods": 220},
    "requestedValues": {"cpu": 2000, "memory": 8589934592, _GPU: 4, "pods": 1},
    "freeValues": {"cpu": 78000, "memory": 609885356032, _GPU: 4, "pods": 219},
    **_LARGEST,
    "pools": [
        {
            "label": f"nvidia.com/gpu.product={_H100}",
            "key": "nvidia.com/gpu.product",
            "value": _H100,
            "nodes": 1,
            "nodeCounts": {"total": 1, "ready": 1, "schedulable": 1},
            **_GPU_NODE,
            **_LARGEST,
        }
    ],
    "partial": None,
    "watching": True,
    "podsOnUnknownNodes": 0,
}
NODE_EXAMPLE: dict[str, Any] = {
    "name": "gpu-1",
    "labels": {"nvidia.com/gpu.product": _H100},
    "pool": {"label": "nvidia.com/gpu.product", "value": _H100},
    "taints": [{"key": _GPU, "value": None, "effect": "NoSchedule"}],
    "unschedulable": False,
    "ready": True,
    "schedulable": True,
    **_GPU_NODE,
    "pods": 1,
}
_SHORT = "no node has 8 free nvidia.com/gpu (the most on one node is 4: gpu-1)"
FIT_EXAMPLE: dict[str, Any] = {
    "workload": {
        "apiVersion": "jobset.x-k8s.io/v1alpha2",
        "kind": "JobSet",
        "namespace": "team-a",
        "name": "train",
        "uid": None,
    },
    "totals": None,
    "policy": "pack",
    "groups": [
        {
            "name": "replicated-job/trainer",
            "component": "replicated-job",
            "instance": "trainer",
            "pods": 2,
            "requests": {"cpu": "4", "memory": "16Gi", _GPU: "8"},
            "requestValues": {"cpu": 4000, "memory": 17179869184, _GPU: 8},
            "gang": "train",
            "topologyKey": None,
        }
    ],
    "clusters": [
        {
            "cluster": "b",
            "available": True,
            "state": "ready",
            "fits": True,
            "sets": 3,
            "setsBounded": False,
            "exact": True,
            "policy": "pack",
            "placement": [
                {"component": "replicated-job", "instance": "trainer", "pods": 2, "nodes": {"b-gpu-1": 1, "b-gpu-2": 1}}
            ],
            "shortfall": [],
            "message": "fits now: 3 complete copies at once",
            "partial": None,
        },
        {
            "cluster": "a",
            "available": True,
            "state": "ready",
            "fits": False,
            "sets": 0,
            "setsBounded": False,
            "exact": True,
            "policy": "pack",
            "placement": [],
            "shortfall": [
                {
                    "component": "replicated-job",
                    "instance": "trainer",
                    "resource": _GPU,
                    "perPod": "8",
                    "perPodValue": 8,
                    "pods": 2,
                    "podsUnplaced": 2,
                    "largestFree": {"node": "gpu-1", "free": "4", "value": 4},
                    "reason": _SHORT,
                }
            ],
            "message": _SHORT,
            "partial": None,
        },
        {
            "cluster": "c",
            "available": False,
            "state": "forbidden",
            "fits": None,
            "message": "not allowed to list nodes in this cluster",
        },
    ],
    "best": "b",
}


class NodeCounts(_M):
    total: int
    ready: int = Field(description="the Ready condition is True")
    schedulable: int = Field(description="Ready and not cordoned (`spec.unschedulable`)")


class CapacityAmounts(_M):
    allocatable: dict[str, str] = Field(description="per resource (summed over the nodes), as quantities")
    requested: dict[str, str] = Field(description="what bound, non-terminal pods request (`pods`: bound pods)")
    free: dict[str, str] = Field(description="allocatable - requested (negative on over-committed nodes)")
    allocatableValues: dict[str, int] = Field(description=CAPACITY_UNITS)
    requestedValues: dict[str, int]
    freeValues: dict[str, int]


class CapacityFigures(CapacityAmounts):
    largestFree: dict[str, str] = Field(
        description="the most free on one schedulable node (a resource no schedulable node has is absent)"
    )
    largestFreeValues: dict[str, int]
    largestFreeNodes: dict[str, str] = Field(description="that node (ties: the name that sorts first)")


class PoolCapacity(CapacityFigures):
    label: str | None = Field(
        description="`<key>=<value>` of the pool's label (--pool-label); null for nodes with none"
    )
    key: str | None
    value: str | None
    nodes: int = Field(description="the pool's nodes")
    nodeCounts: NodeCounts


class ClusterCapacity(CapacityFigures):
    """A cluster's capacity: its nodes' figures, then per node pool."""

    nodes: NodeCounts = Field(description="total; ready; schedulable: Ready and not cordoned")
    pools: list[PoolCapacity] = Field(
        description="per node pool: the node's first label among --pool-label; nodes with none last"
    )
    partial: str | None = Field(
        None, description="why pods of some namespaces are not counted (--watch-namespace): free is an upper bound"
    )
    watching: bool | None = Field(None, description="the node watch is open (false: the last list's figures)")
    podsOnUnknownNodes: int = Field(0, description="pods bound to a node the model does not hold")


class NodePool(_M):
    label: str
    value: str


class NodeTaint(_M):
    key: str
    value: str | None
    effect: str


class NodeCapacity(CapacityAmounts):
    name: str
    labels: dict[str, str]
    pool: NodePool | None
    taints: list[NodeTaint]
    unschedulable: bool
    ready: bool
    schedulable: bool = Field(description="Ready and not cordoned")
    pods: int = Field(description="pods bound to the node")


class NodeList(_M):
    metadata: ListMetadata | None = None
    cluster: str
    items: list[NodeCapacity]
    partial: str | None = Field(None, description="as in `capacity`: pods of some namespaces are not counted")
    watching: bool


class ClusterStatus(_M):
    """A cluster the service reads (GET /clusters).  Credentials never appear here."""

    name: str
    server: str | None = Field(description="the API server URL")
    version: str | None = Field(description="its Kubernetes version (gitVersion), once it answered")
    synced: bool = Field(description="its live model has finished the first sync")
    available: bool = Field(description="its API server answered the last probe")
    lastError: str | None
    workloads: int = Field(description="top-level workloads")
    gpus: float = Field(description="GPUs (whole devices) requested by those workloads")
    accelerators: dict[str, int] = Field(
        default_factory=dict, description="accelerators requested by those workloads, by resource"
    )
    phases: dict[str, PhaseTotals] = Field(default_factory=dict, description="workloads and GPUs by phase")
    origin: Literal["home", "flag", "context", "secret"]
    source: str | None = Field(None, description="the Secret (namespace/name) that registers it")
    context: str | None = None
    checkedAt: str | None = Field(None, description="when its API server was last probed")
    since: str | None = Field(None, description="since when it is available (or not)")
    capacity: ClusterCapacity | None = Field(
        None,
        description="nodes, and allocatable / requested / free per resource and per node pool, from the cluster's "
        "model; null when withheld (the caller may not `list nodes` there: `capacityVisible` false) or unavailable "
        "(`capacityState`, `capacityReason`); not sent on `watch=true` events",
    )
    capacityVisible: bool | None = Field(None, description="the caller may `list nodes` in this cluster")
    capacityState: Literal["ready", "starting", "forbidden", "unavailable"] | None = Field(
        None,
        description="forbidden: the caller (or the service) may not list nodes; starting: the node and pod lists "
        "have not arrived; unavailable: no model holds them, or nodes are not served",
    )
    capacityReason: str | None = Field(None, description="why `capacity` is null")


class ClusterList(_M):
    items: list[ClusterStatus]


# -- fit (POST /fit) ----------------------------------------------------------------------------


class FitRequest(BaseModel):
    """What `POST /fit` takes beside a raw manifest: the envelope of `POST /interpret` (without
    pods); the fit's options are in the query."""

    model_config = ConfigDict(extra="forbid")
    object: dict[str, Any] | None = Field(None, description="the workload manifest")
    ref: ObjectRef | None = Field(None, description="a live object to read, with the caller's rights (needs a cluster)")
    definition: dict[str, Any] | None = Field(None, description="a Karta to use instead of the registry's (inline)")


class FitGroup(_M):
    name: str = Field(description="component/instance (the component alone for an instance without an id)")
    component: str
    instance: str | None
    pods: int = Field(description="the pods that must place at once: all, or the group's share of a gang minimum")
    requests: dict[str, str] = Field(description="per pod, effective, as quantities")
    requestValues: dict[str, int] = Field(description="per pod, effective: " + CAPACITY_UNITS)
    gang: str | None = Field(description="the gang the group belongs to (null: none: every pod must place)")
    topologyKey: str | None = Field(description="the gang's required topology level: one value of this node label")


class FitPlacement(_M):
    component: str
    instance: str | None
    pods: int
    nodes: dict[str, int] = Field(description="node name -> pods placed there")


class FitLargestFree(_M):
    node: str
    free: str = Field(description="as a quantity")
    value: int


class FitShortfall(_M):
    component: str
    instance: str | None
    resource: str
    perPod: str = Field(description="what one pod requests, as a quantity")
    perPodValue: int
    pods: int = Field(description="the group's pods that had to place")
    podsUnplaced: int = Field(description="the pods left over once the pods that do fit are placed")
    largestFree: FitLargestFree | None = Field(
        description="what remains on the best eligible node once the pods that do fit are placed (null: no node "
        "passes the group's filters)"
    )
    reason: str = Field(description="the group's sentence")


class ClusterFit(_M):
    """One cluster's verdict; without the caller's `list nodes` right there (or without an
    inventory), `available` false, `fits` null, `state` and `message` only."""

    cluster: str
    available: bool
    state: Literal["ready", "starting", "forbidden", "unavailable"]
    fits: bool | None = Field(description="all of it (every gang at once) fits now; null: no verdict")
    message: str = Field(description="a sentence a person can act on")
    sets: int | None = Field(None, description="complete copies of the workload that fit at once")
    setsBounded: bool | None = Field(
        None, description="the copies stopped at the plan's work bound: `sets` is a lower bound"
    )
    exact: bool | None = Field(None, description="the verdict is proven (false: first-fit's, on a large problem)")
    policy: Literal["pack", "spread"] | None = None
    placement: list[FitPlacement] | None = Field(None, description="one copy's plan when it fits (empty otherwise)")
    shortfall: list[FitShortfall] | None = Field(
        None, description="per component and resource, when it does not fit (empty when it fits)"
    )
    partial: str | None = Field(None, description="as in `capacity`: pods of some namespaces are not counted")


class FitResponse(_M):
    workload: WorkloadRef | None
    totals: Totals | None
    policy: Literal["pack", "spread"]
    groups: list[FitGroup] = Field(description="the interpretation's pods as they are fitted")
    clusters: list[ClusterFit] = Field(description="fitting first, then more sets, then by name")
    best: str | None = Field(description="the first cluster where it fits (null: it fits nowhere)")


class WatchEvent(_M):
    """One event of a `watch=true` stream (one line of newline-delimited JSON, or one SSE `data:`)."""

    type: Literal["ADDED", "MODIFIED", "DELETED", "BOOKMARK", "ERROR"]
    object: dict[str, Any] | None = Field(
        None,
        description="the summary row (list stream), the full "
        "interpretation with live (one workload), or a problem "
        "(ERROR)",
    )
    id: str | None = Field(None, description="resume token (SSE carries it as the event id)")
    initialEventsEnd: bool | None = Field(None, description="on the BOOKMARK after the initial state")


class ModelKind(_M):
    group: str
    version: str
    kind: str
    resource: str
    namespace: str | None
    mode: Literal["full", "metadata"]
    state: str
    error: str | None
    objects: int
    resourceVersion: str | None
    relists: int
    reconnects: int
    events: int
    definition: str | None


class StoreUnit(_M):
    """One unit (a cluster, or a namespace bucket of it) as the store holds it."""

    unit: str
    owner: str | None = Field(None, description="the shard that owns it (its identity)")
    epoch: int = Field(0, description="the unit's fencing epoch (its Lease's leaseTransitions)")
    synced: bool
    watching: bool
    heartbeatAge: float | None = Field(None, description="seconds since its owner's last heartbeat")
    rows: int
    error: str | None = None


class ModelStatus(_M):
    enabled: bool
    synced: bool
    cluster: str | None = None
    reason: str | None = None
    server: str | None = Field(None, description="the API server the model watches")
    startedAt: str | None = None
    syncedAt: str | None = None
    namespaces: list[str] | None = None
    kinds: list[ModelKind] | None = None
    notServed: list[str] | None = None
    objects: int | None = None
    pods: int | None = None
    workloads: int | None = None
    pending: int | None = Field(None, description="changes received and not yet applied")
    interpretations: int | None = None
    answersReady: int | None = Field(None, description="live answers (with pods) kept for the next read")
    answerParts: dict[str, int] | None = Field(
        None,
        description="what live answers are assembled from: the bases kept (interpretations without pods), "
        "and how many bases and pod parts were computed (null: every definition is evaluated out of process)",
    )
    warningEvents: dict[str, Any] | None = Field(
        None, description="Warning Events kept for the diagnosis: kept, evicted (bounds), the informers"
    )
    resumeToken: str | None = None
    freshness: Freshness | None = None
    definitionsSynced: bool | None = None
    streams: dict[str, int] | None = Field(None, description="stream clients connected now, by stream (list, workload)")
    source: Literal["store"] | None = Field(
        None, description="behind a store (--store): the cluster as the store holds it, not a model of this process"
    )
    storeConnected: bool | None = None
    units: list[StoreUnit] | None = Field(
        None, description="behind a store: the cluster's units, their owners and heartbeats"
    )
    store: dict[str, Any] | None = Field(
        None, description="behind a store: this process's role, the store's state and (a shard) what it owns"
    )


class ValidationResult(BaseModel):
    valid: bool
    name: str | None
    gvk: str | None
    errors: list[Finding]
    warnings: list[Finding]
    referenceText: str = Field(description="the reference validator's joined error text (empty when valid)")


class ValidationResponse(BaseModel):
    items: list[ValidationResult]


class Health(BaseModel):
    status: Literal["ok", "not ready"]
    definitions: int | None = None
    detail: str | None = None


class DivideCluster(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: str = Field(min_length=1, max_length=253)
    weight: Count | None = Field(None, description="its share (required unless `by` is capacity)")


class DivideRequest(BaseModel):
    """`POST /divide`: the workload (as `POST /interpret/update` takes it) and where to divide it."""

    model_config = ConfigDict(extra="forbid")
    object: dict[str, Any] | None = Field(None, description="the workload manifest")
    ref: ObjectRef | None = Field(None, description="a live object to read, with the caller's rights (needs a cluster)")
    definition: dict[str, Any] | None = Field(None, description="a Karta to use instead of the registry's (inline)")
    clusters: list[DivideCluster] | None = Field(
        None, min_length=1, max_length=100, description="the clusters and their weights (with `by`: names only)"
    )
    by: Literal["capacity"] | None = Field(
        None,
        description="capacity: weights from the fit (copies of one pod of each group that fit in each cluster "
        "now); over `clusters` when named, else every cluster",
    )


class DividePart(_M):
    cluster: str
    replicas: dict[str, int] = Field(description="per component with a count: its count in this part")
    instances: dict[str, int] | None = Field(
        None, description="per `<component>/<instance id>`, for components with instance ids"
    )
    object: dict[str, Any] = Field(description="the workload with this part's counts written (names unchanged)")
    totals: Totals | None


class DivideKept(_M):
    component: str
    reason: str


class DivideResponse(_M):
    workload: WorkloadRef | None = None
    weights: dict[str, int] = Field(description="the weight each cluster was given")
    divided: bool = Field(description="more than one part")
    kept: list[DivideKept] = Field(description="the components kept whole in one part, and why")
    parts: list[DividePart] = Field(description="one per cluster that gets a count above 0")
