"""One workload object + its definition (+ optional pods) -> the interpretation contract.

Data flow: prepare the input once (inputs.py) -> one batched evaluation (native, libjq for
the rest) -> per-component extraction (instances.py) and root status (status.py) -> tree with
per-pod requests and totals (requests.py) -> gang hints (gang.py) -> pod attribution when pods
are given (attribution.py).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from itertools import repeat
from typing import Any

import orjson

from ..jqlang.inputs import LAST_APPLIED, Input, exact, input_text, prepare, strip_noise  # noqa: F401 (re-exported)
from ..jqlang.jqbatch import Result
from ..karta.load import Definition
from .accelerators import ResourceRules, request_values
from .accelerators import clamp as _clamp
from .attribution import Layout, PodPart, assemble, layout_of, pod_part
from .compiled import CompiledDefinition, compiled
from .dependencies import Ref, dependencies, pod_spec_refs
from .gang import ComponentFailed, group_pods, pods_gang, workload_gang
from .instances import ComponentValues, ExtractedInstance, ExtractionError, desired, extract_component
from .memo import PY_OBJECT_FACTOR, Memo, held_bytes
from .options import DEFAULT_OPTIONS, JQ_RESULT_BYTES, EngineOptions, JqResults  # noqa: F401 (JQ_RESULT_BYTES: re-exported)
from .pods import PodInput
from .quantity import QuantityError
from .requests import (
    Requests,
    fragmented_requests,
    fragmented_requests_key,
    multiply,
    pod_requests,
    pod_requests_key,
    to_strings,
)
from .status import evaluate_status
from .totals import Sums


class InterpretationError(Exception):
    """The definition could not be applied to this object; `errors` name path and expression."""

    def __init__(self, title: str, errors: list[dict[str, Any]]):
        super().__init__(title + ": " + "; ".join(e["message"] for e in errors))
        self.title, self.errors = title, errors


def _results(cd_batch_index: dict[str, int], row: list[Result]) -> dict[str, Result]:
    return {t: row[i] for t, i in cd_batch_index.items()}


@dataclass
class _Ctx:
    cd: CompiledDefinition
    values: dict[str, ComponentValues | ExtractionError]
    errors: list[dict[str, Any]]  # one per failed part, in the contract's "errors" shape
    rules: ResourceRules  # the accelerator rules of this interpretation


def part_error(part: str, e: ExtractionError, component: str | None = None, path: str | None = None) -> dict[str, Any]:
    """One entry of `errors`: which part, which component, the definition path and expression,
    and the reference's message."""
    out: dict[str, Any] = {"part": part}
    if component is not None:
        out["component"] = component
    out.update(path=path if path is not None else e.path, expression=e.expression, message=e.message)
    return out


# Where a pod may run, copied from its definition into the pod view (what a scheduler placing
# the workload on a cluster honours).  The engine reads these fields of a pod spec (compiled.py's
# input projection), so the live model keeps them too.
PLACEMENT_FIELDS = (
    "nodeSelector",
    "tolerations",
    "affinity",
    "topologySpreadConstraints",
    "runtimeClassName",
    "resourceClaims",
)


def _requests_source(inst: ExtractedInstance) -> tuple[Callable[..., Requests], Callable[..., bytes | None], tuple]:
    """How an instance's per-pod requests are computed, what their cache key is made of
    (requests.py: both read the same parts), and those parts."""
    if inst.pod_template_spec is not None:
        return pod_requests, pod_requests_key, (inst.pod_template_spec.get("spec") or {},)
    if inst.pod_spec is not None:
        return pod_requests, pod_requests_key, (inst.pod_spec,)
    if inst.fragmented is not None:
        f = inst.fragmented
        return (
            fragmented_requests,
            fragmented_requests_key,
            (f.get("containers"), f.get("container"), f.get("resources")),
        )
    return dict, lambda: b"none", ()


def _pod_definition(inst: ExtractedInstance) -> tuple[dict[str, Any], dict[str, Any]]:
    """An instance's pod spec and metadata, a fragmented definition's parts assembled as a pod
    template would hold them."""
    if inst.pod_template_spec is not None:
        spec, meta = inst.pod_template_spec.get("spec") or {}, inst.pod_template_spec.get("metadata") or {}
    elif inst.pod_spec is not None:
        spec, meta = inst.pod_spec, inst.metadata or {}
    else:
        f = inst.fragmented or {}
        containers = list(f.get("containers") or []) + ([f["container"]] if f.get("container") is not None else [])
        if f.get("image") and containers and not containers[-1].get("image"):
            containers[-1] = dict(containers[-1], image=f["image"])
        elif f.get("image") and not containers:
            containers = [{"image": f["image"]}]
        # A fragmented definition names the two affinity parts apart; the pod they make holds
        # them under one `affinity`, as a template would.
        affinity = {k: f[k] for k in ("nodeAffinity", "podAffinity") if f.get(k)}
        spec = {
            "containers": containers,
            "schedulerName": f.get("schedulerName") or None,
            "priorityClassName": f.get("priorityClassName") or None,
            "resourceClaims": f.get("resourceClaims") or None,
            "affinity": affinity or None,
            "nodeSelector": f.get("nodeSelector") or None,
            "tolerations": f.get("tolerations") or None,
        }
        meta = {"labels": f.get("labels") or {}, "annotations": f.get("annotations") or {}}
    return spec, meta


# What pod definitions refer to, by their JSON texts (instances.py: `key`, the keys `_pod_views`
# holds too): the same templates recur across a team's workloads and across a live workload's
# reinterpretations.  Bounded by the texts' bytes, as the views are.
_refs_memo: Memo[tuple[bytes | None, ...], tuple[Ref, ...]] = Memo(maxsize=4096, max_bytes=32 * 1024 * 1024)


def _refs(inst: ExtractedInstance) -> tuple[Ref, ...]:
    key = inst.key()  # None: not cached (as in _pod)
    hit = _refs_memo.get(key) if key is not None else None
    if hit is None:
        hit = tuple(pod_spec_refs(_pod_definition(inst)[0]))
        if key is not None:
            _refs_memo.put(key, hit, sum(len(t) for t in key if t is not None))
    return hit


def _pod_view(inst: ExtractedInstance, facts: _PodFacts) -> dict[str, Any]:
    """The `pod` of an instance entry: its requests and counts (from its facts, shared by every
    pod definition with the same resources) and what it runs and where (from the definition
    itself: names, images and labels differ between any two workloads)."""
    spec, meta = _pod_definition(inst)

    def brief(cs: Any) -> list[dict[str, Any]]:
        return [{"name": c.get("name"), "image": c.get("image")} for c in (cs or []) if isinstance(c, dict)]

    view: dict[str, Any] = {
        "requests": facts.strings,
        "requestValues": facts.values,
        "gpus": facts.gpus,
        "accelerators": facts.accelerators,
        "containers": brief(spec.get("containers")),
        "schedulerName": spec.get("schedulerName"),
        "priorityClassName": spec.get("priorityClassName"),
    }
    if spec.get("initContainers"):
        view["initContainers"] = brief(spec.get("initContainers"))
    for field in PLACEMENT_FIELDS:  # as written in the template; absent when unset or empty
        if v := spec.get(field):
            # a null list element reads as Go reads it: the zero value of its struct
            view[field] = [{} if x is None else x for x in v] if isinstance(v, list) else v
    # Labels and annotations as written: a fractional-GPU or queue request (KAI's and Run:ai's
    # gpu-fraction, gpu-memory) lives there, and is reported rather than turned into GPUs.
    for field in ("labels", "annotations"):
        if m := meta.get(field):
            view[field] = {k: "" if x is None else x for k, x in m.items()}  # null: Go's ""
    return view


@dataclass(frozen=True)
class _PodFacts:
    """What one pod definition's resources yield: requests per pod, their strings, integer values
    and accelerator counts, and totals per replica count.  Exact quantity arithmetic is costly
    and the same resources recur across workloads (a team's runs differ in names, images and
    env, not in what their pods request), so these are cached by what determines them
    (requests.py's keys), not by the whole definition."""

    per_pod: Requests
    strings: dict[str, str]
    values: dict[str, int]
    gpus: int
    accelerators: dict[str, int]
    rules: ResourceRules  # the accelerator rules the counts were made with
    scaled: dict[int, Sums]

    def times(self, n: int) -> Sums:
        """The sums of n such pods."""
        hit = self.scaled.get(n)
        if hit is None:
            acc = {k: _clamp(v * n) for k, v in self.accelerators.items()}
            hit = Sums(n, _clamp(self.gpus * n), acc, multiply(self.per_pod, n))
            if len(self.scaled) < 64:  # replica counts of one pod definition are few
                self.scaled[n] = hit
        return hit


# Keyed by what a pod definition's requests are computed from (resources as the caller wrote
# them: up to a request body each); an entry holds their parsed quantities and strings:
# accounted at the key's length x (1 + PY_OBJECT_FACTOR).
_pod_facts: Memo[bytes, _PodFacts] = Memo(maxsize=4096, max_bytes=64 * 1024 * 1024)


def _facts(inst: ExtractedInstance, rules: ResourceRules) -> _PodFacts:
    compute, key_of, parts = _requests_source(inst)
    key = key_of(*parts)  # None (a part cannot be printed, e.g. an integer beyond 64 bits): not cached
    hit = _pod_facts.get(key) if key is not None else None
    if hit is not None and hit.rules is rules:
        return hit
    per_pod = compute(*parts)
    facts = _PodFacts(
        per_pod,
        to_strings(per_pod),
        request_values(per_pod),
        rules.gpu_count(per_pod),
        rules.accelerator_counts(per_pod),
        rules,
        {},
    )
    if key is not None:
        _pod_facts.put(key, facts, len(key) * (1 + PY_OBJECT_FACTOR))
    return facts


# The pod views by the whole pod definition (ExtractedInstance.key: the JSON texts its type check
# printed anyway): an unchanged workload interpreted again gets its views back without reading
# them afresh; a view holds parts of the template: accounted at the key's length x
# (1 + PY_OBJECT_FACTOR).  A workload seen for the first time misses here and shares its facts.
_pod_views: Memo[tuple[bytes | None, ...], tuple[_PodFacts, dict[str, Any]]] = Memo(
    maxsize=4096, max_bytes=64 * 1024 * 1024
)


def _pod(inst: ExtractedInstance, rules: ResourceRules) -> tuple[_PodFacts, dict[str, Any]]:
    """An instance's pod facts and its pod view."""
    key = inst.key()  # None (a part cannot be printed, e.g. an integer beyond 64 bits): not cached
    hit = _pod_views.get(key) if key is not None else None
    if hit is not None and hit[0].rules is rules:
        return hit
    facts = _facts(inst, rules)
    entry = (facts, _pod_view(inst, facts))
    if key is not None:
        _pod_views.put(key, entry, sum(len(t) for t in key if t is not None) * (1 + PY_OBJECT_FACTOR))
    return entry


def _instances(bearing: bool, v: ComponentValues, path: str, rules: ResourceRules) -> tuple[list[dict[str, Any]], Sums]:
    """The instance entries of one extracted component (pod-bearing or not) and their sums.
    Raises ExtractionError when a pod definition holds a quantity the reference cannot parse."""
    total = Sums()
    instances = []
    for inst in v.instances:
        s = inst.scale
        entry: dict[str, Any] = {
            "id": inst.id or None,
            "replicas": s.replicas if s else None,
            "minReplicas": s.min_replicas if s else None,
            "maxReplicas": s.max_replicas if s else None,
        }
        if bearing:
            try:
                facts, view = _pod(inst, rules)
            except QuantityError as e:
                raise ExtractionError(f"instance {inst.id!r}: {e}", f"{path}.specDefinition") from None
            n = max(0, desired(s))  # the scale keeps a negative count as written; no total goes below 0
            entry["pod"] = dict(view)
            i_sums = facts.times(n)
            entry["totals"] = i_sums.as_json()
            total = total + i_sums
        else:
            entry["totals"] = Sums().as_json()
        instances.append(entry)
    return instances, total


_Sums = Sums | None  # None: a component in the subtree failed, no count is whole


def _totals(sums: _Sums) -> dict[str, Any] | None:
    return None if sums is None else sums.as_json()


def _node(ctx: _Ctx, name: str, path: str) -> tuple[dict[str, Any], _Sums]:
    """One component's node and its subtree's sums.  A failed component keeps its node, with
    `error` and no instances; its children are still built (their paths are their own), but
    no total above it is given, since a partial count must never pass for the whole."""
    cd = ctx.cd
    c = cd.components[name]
    v = ctx.values[name]
    error = None
    if isinstance(v, ExtractionError):
        error = next(e for e in ctx.errors if e.get("component") == name)
        instances: list[dict[str, Any]] = []
        sums: _Sums = None
    else:
        try:
            instances, sums = _instances(name in cd.bearing, v, path, ctx.rules)
        except ExtractionError as e:
            ctx.values[name] = e  # the gang must not size a component whose pods cannot be read
            error = part_error("component", e, name)
            ctx.errors.append(error)
            instances, sums = [], None
    children = []
    for child in cd.children.get(name, []):
        idx = cd.order.index(child) - 1
        node, child_sums = _node(ctx, child, f"spec.structureDefinition.childComponents[{idx}]")
        children.append(node)
        if sums is not None and child_sums is not None:
            sums = sums + child_sums
        else:
            sums = None
    kind = c.kind
    node = {
        "name": name,
        "kind": {"group": kind.group or "", "version": kind.version or "", "kind": kind.kind or ""} if kind else None,
        "podBearing": name in cd.bearing,
        "instances": instances,
        "totals": _totals(sums),
        "children": children,
    }
    if error is not None:
        node["error"] = error
    return node, sums


def _component_path(cd: CompiledDefinition, name: str) -> str:
    i = cd.order.index(name)
    return "spec.structureDefinition.rootComponent" if i == 0 else f"spec.structureDefinition.childComponents[{i - 1}]"


def _workload_ref(obj: dict[str, Any]) -> dict[str, Any]:
    meta = obj.get("metadata") or {}
    return {
        "apiVersion": obj.get("apiVersion"),
        "kind": obj.get("kind"),
        "namespace": meta.get("namespace"),
        "name": meta.get("name"),
        "uid": meta.get("uid"),
    }


def envelope_problems(obj: Any) -> list[dict[str, Any]]:
    """What the API server would refuse in an object's envelope (and what the result echoes)."""
    if not isinstance(obj, dict):
        return [{"path": "", "message": "the object must be a JSON object"}]
    errs = []
    for key in ("apiVersion", "kind"):
        if not isinstance(obj.get(key), str):
            errs.append({"path": key, "message": f"{key} must be a string"})
    meta = obj.get("metadata")
    if meta is not None and not isinstance(meta, dict):
        errs.append({"path": "metadata", "message": "metadata must be an object"})
    elif meta is not None:
        for key in ("name", "namespace", "uid"):
            if meta.get(key) is not None and not isinstance(meta[key], str):
                errs.append({"path": f"metadata.{key}", "message": f"metadata.{key} must be a string"})
    return errs


# The fields of a Pod the engine reads, with the JSON type the API server guarantees (pod_problems
# fetches their values in this order).
_POD_FIELDS = (
    (dict, "spec"),
    (dict, "status"),
    (dict, "metadata.labels"),
    (str, "spec.nodeName"),
    (str, "status.phase"),
    (str, "status.reason"),
    (list, "status.conditions"),
    (list, "status.containerStatuses"),
    (list, "status.initContainerStatuses"),
)


def pod_problems(pod: Any) -> list[dict[str, Any]]:
    """What the API server would refuse in the fields of a Pod the engine reads.  Runs for every
    pod of every interpretation: each part is fetched once, and items are checked by C loops."""
    errs = envelope_problems(pod)
    if errs:
        return errs
    spec, status, labels = pod.get("spec"), pod.get("status"), (pod.get("metadata") or {}).get("labels")
    sp = spec if isinstance(spec, dict) else {}
    st = status if isinstance(status, dict) else {}
    values = (
        spec,
        status,
        labels,
        sp.get("nodeName"),
        st.get("phase"),
        st.get("reason"),
        st.get("conditions"),
        st.get("containerStatuses"),
        st.get("initContainerStatuses"),
    )
    for value, (want, path) in zip(values, _POD_FIELDS, strict=False):
        if value is not None and not isinstance(value, want):
            errs.append({"path": path, "message": f"{path} has the wrong type"})
    if errs:
        return errs  # the checks below read those fields
    for key in ("conditions", "containerStatuses", "initContainerStatuses"):
        items = st.get(key)
        if items and not all(map(isinstance, items, repeat(dict))):
            errs += [
                {"path": f"status.{key}[{j}]", "message": f"status.{key}[{j}] must be an object"}
                for j, c in enumerate(items)
                if not isinstance(c, dict)
            ]
    if labels and not all(map(isinstance, labels.values(), repeat(str))):
        errs.append({"path": "metadata.labels", "message": "label values must be strings"})
    return errs


def _checked_input(obj: Any, cd: CompiledDefinition) -> Input:
    return _checked(obj, cd.strip_noise, cd.projection)


def _checked_pod_input(pod: Any, cd: CompiledDefinition) -> Input:
    return _checked(pod, True, cd.pod_projection)


def _checked(obj: Any, strip: bool, projection: Any) -> Input:
    try:
        return prepare(obj, strip, projection)
    except (OverflowError, TypeError, ValueError) as e:
        raise InterpretationError(
            "the object holds a number the reference cannot read (beyond float64)", [{"path": "", "message": str(e)}]
        ) from None


def generic_flags(obj: dict[str, Any]) -> dict[str, bool]:
    """Facts every workload has regardless of its definition (kstatus-style)."""
    meta = obj.get("metadata") or {}
    status = obj.get("status")
    if not isinstance(status, dict):
        status = {}
    gen, observed = meta.get("generation"), status.get("observedGeneration")
    stale = isinstance(gen, (int, float)) and isinstance(observed, (int, float)) and observed < gen
    return {"deleting": bool(meta.get("deletionTimestamp")), "stale": bool(stale)}


def phase_of(result: dict[str, Any]) -> str:
    """The primary phase, or "Unknown" when the status part could not be computed (for logs and
    metric labels; the JSON itself says `status: null`)."""
    st = result.get("status")
    return st["phase"] if st else "Unknown"


Progress = Callable[[int, int], None]  # (stage: 0 workload batch | 1 pod batch, expression index)


def _workload_results(
    cd: CompiledDefinition, inp: Input, progress: Progress | None, cache: JqResults | None
) -> list[Result]:
    key = (cd.definition.digest, inp.key)
    if cd.time_dependent:
        cache = None
    if cache is not None:
        hit = cache.get(key)
        if hit is not None:
            return hit
    row = cd.workload.run(inp, (lambda i: progress(0, i)) if progress else None)
    if cache is not None:
        cache.put(key, row, len(inp.key) + held_bytes([(r.values, r.error) for r in row]))
    return row


def interpret(
    obj: dict[str, Any],
    definition: Definition,
    pods: list[dict[str, Any]] | None = None,
    progress: Progress | None = None,
    options: EngineOptions = DEFAULT_OPTIONS,
    templates: bool = False,
) -> dict[str, Any]:
    """The interpretation of one object (see docs/api-contract.md). Raises InterpretationError.

    `templates`: add `formatInputs` for the consumer formats (app/formats/): the workload's
    labels and annotations and every pod-bearing instance's whole pod template (a fragmented definition's parts
    assembled); the service takes it off before answering.

    `progress(stage, index)` is told which expression is about to run, so a supervisor that
    kills an overrunning evaluation can name the culprit.  `options`: the caller's accelerator
    rules and jq result cache (options.py)."""
    _check_valid(definition)
    bad = envelope_problems(obj)
    if pods is not None:
        for i, pod in enumerate(pods):
            bad += [dict(e, path=f"pods[{i}]" + (f".{e['path']}" if e["path"] else "")) for e in pod_problems(pod)]
    if bad:
        raise InterpretationError("the object is not a valid Kubernetes object", bad)
    out, cd, values, owner_id = _interpret(obj, definition, progress, options, templates)
    if pods is not None:
        layout = layout_of(cd, out["tree"])
        with_parts(out, layout, _pod_parts(cd, values, owner_id, layout, pods, progress, bool(out["gang"])))
    return out


@dataclass(frozen=True, slots=True)
class LiveBase:
    """An interpretation without pods, with what placing pods on it reads.  Computed once per
    version of the object and definition; each pod's part (`pod_parts`) and each live view
    (`with_pods`) derive from it, so a pod that changes costs its own part and an assembly, never
    the object's evaluation again."""

    result: bytes  # the interpretation without pods, as JSON: each view is assembled on its own copy
    cd: CompiledDefinition
    values: dict[str, Any]
    owner_id: str
    layout: Layout
    gang: bool  # the view has gang hints: each pod's part carries its gang row
    phase: str  # `phase_of` the interpretation (logs, metric labels)
    failed: tuple[str, ...]  # the parts its `errors` name (metric labels)


def live_base(obj: dict[str, Any], definition: Definition, options: EngineOptions = DEFAULT_OPTIONS) -> LiveBase:
    """What `interpret(obj, definition, pods)` computes before it reads any pod."""
    return live_base_and_result(obj, definition, options)[0]


def live_base_and_result(
    obj: dict[str, Any], definition: Definition, options: EngineOptions = DEFAULT_OPTIONS
) -> tuple[LiveBase, dict[str, Any]]:
    """`live_base`, and the interpretation without pods it holds as JSON (the caller's to keep)."""
    _check_valid(definition)
    bad = envelope_problems(obj)
    if bad:
        raise InterpretationError("the object is not a valid Kubernetes object", bad)
    out, cd, values, owner_id = _interpret(obj, definition, None, options, False)
    base = LiveBase(
        exact(orjson.dumps(out)),  # kept
        cd,
        values,
        owner_id,
        layout_of(cd, out["tree"]),
        bool(out["gang"]),
        phase_of(out),
        tuple(e["part"] for e in out["errors"]),
    )
    return base, out


def pod_parts(base: LiveBase, pods: list[dict[str, Any]]) -> list[PodPart]:
    """Each pod's part of a live view on `base` (their pod expressions in one batch).  Raises
    InterpretationError for a pod that is not a valid Kubernetes object."""
    bad = [e for pod in pods for e in pod_problems(pod)]
    if bad:
        raise InterpretationError("the object is not a valid Kubernetes object", bad)
    return _pod_parts(base.cd, base.values, base.owner_id, base.layout, pods, None, base.gang)


def with_pods(base: LiveBase, parts: list[PodPart]) -> dict[str, Any]:
    """The interpretation with these pods (in this order: `interpret` takes them sorted by name
    from a cluster), equal to `interpret(obj, definition, pods)`."""
    out: dict[str, Any] = orjson.loads(base.result)
    with_parts(out, base.layout, parts)
    return out


def _check_valid(definition: Definition) -> None:
    if not definition.valid:
        raise InterpretationError(
            f"definition {definition.name} is invalid", [f.as_dict() for f in definition.findings if f.level == "error"]
        )


def _interpret(
    obj: dict[str, Any],
    definition: Definition,
    progress: Progress | None,
    options: EngineOptions,
    templates: bool,
) -> tuple[dict[str, Any], CompiledDefinition, dict[str, Any], str]:
    """The interpretation without pods, the compiled definition and component values pods are
    placed with, and the owner id gang groups are named by."""
    cd = compiled(definition)
    results = _results(cd.workload_index, _workload_results(cd, _checked_input(obj, cd), progress, options.jq_results))

    # Status, each component and the gang are computed independently (the reference's status
    # call does not depend on its tree build): whatever computes is returned, the rest is named.
    ctx = _Ctx(cd, {}, [], options.rules)
    root_status = cd.components[cd.order[0]].status_definition
    root_status_path = f"{_component_path(cd, cd.order[0])}.statusDefinition"
    if root_status is None:  # validation requires one, so a valid definition has it
        raise InterpretationError(
            f"definition {definition.name} is invalid",
            [{"path": root_status_path, "message": "root component must have status definition"}],
        )
    status = None
    try:
        status = evaluate_status(root_status, results, root_status_path)
    except ExtractionError as e:
        ctx.errors.append(part_error("status", e))
    for name in cd.order:
        try:
            ctx.values[name] = extract_component(cd.components[name], results, _component_path(cd, name))
        except ExtractionError as e:
            ctx.values[name] = e
            ctx.errors.append(part_error("component", e, name))
    tree, sums = _node(ctx, cd.order[0], _component_path(cd, cd.order[0]))
    if status is None and all(isinstance(v, ExtractionError) for v in ctx.values.values()):
        raise InterpretationError(
            f"cannot interpret {obj.get('kind')}/{(obj.get('metadata') or {}).get('name')} "
            f"with definition {definition.name}",
            ctx.errors,
        )

    status_out: dict[str, Any] | None = None
    if status is not None:
        status_out = {"phase": status.phase, "matched": status.matched}
        if root_status.phase_definition is not None:
            status_out["rawPhase"] = status.raw_phase
        status_out["conditions"] = [c.as_dict() for c in status.conditions]
        status_out.update(generic_flags(obj))

    meta = obj.get("metadata") or {}
    owner_id = str(meta.get("uid") or meta.get("name") or "")
    gang: dict[str, Any] | None
    try:
        gang = workload_gang(cd, ctx.values, owner_id)
    except ComponentFailed as e:
        gang = None
        ctx.errors.append(part_error("gang", e.error, e.component, e.path))
    out: dict[str, Any] = {
        "workload": _workload_ref(obj),
        "definition": {"name": definition.name, "source": definition.source, "digest": definition.digest},
        "complete": not ctx.errors,
        "errors": ctx.errors,
        "status": status_out,
        "tree": tree,
        "totals": _totals(sums),
        "gang": gang,
        "dependencies": dependencies(
            (name, ref)
            for name in cd.order
            if name in cd.bearing and isinstance(v := ctx.values[name], ComponentValues)
            for inst in v.instances
            for ref in _refs(inst)
        ),
        "warnings": [],
    }
    if templates:
        labels, annotations = meta.get("labels"), meta.get("annotations")
        out["formatInputs"] = {
            "labels": labels if isinstance(labels, dict) else {},
            "annotations": annotations if isinstance(annotations, dict) else {},
            "podTemplates": [
                {"component": name, "instance": inst.id or None, "template": _template(inst)}
                for name in cd.order
                if name in cd.bearing and isinstance(v := ctx.values[name], ComponentValues)
                for inst in v.instances
            ],
        }
    return out, cd, ctx.values, owner_id


def _template(inst: ExtractedInstance) -> dict[str, Any] | None:
    """An instance's pod template as a PodTemplateSpec (None: the definition holds no pod there,
    e.g. a PyTorchJob without a Master); unset parts of an assembled one are left out."""
    spec, meta = _pod_definition(inst)
    if not isinstance(spec, dict) or not spec.get("containers"):
        return None
    return {
        "metadata": {k: v for k, v in meta.items() if v} if isinstance(meta, dict) else {},
        "spec": {k: v for k, v in spec.items() if v is not None},
    }


def _pod_parts(
    cd: CompiledDefinition,
    values: dict[str, Any],
    owner_id: str,
    layout: Layout,
    pods: list[dict[str, Any]],
    progress: Progress | None,
    gang: bool,
) -> list[PodPart]:
    rows = cd.pods.run_many([_checked_pod_input(p, cd) for p in pods], (lambda i: progress(1, i)) if progress else None)
    inputs = [PodInput(p, _results(cd.pod_index, r)) for p, r in zip(pods, rows, strict=False)]
    gangs = pods_gang(cd, values, inputs, owner_id) if gang else repeat(None)
    return [pod_part(cd, layout, p, g) for p, g in zip(inputs, gangs, strict=False)]


def with_parts(out: dict[str, Any], layout: Layout, parts: list[PodPart]) -> None:
    """Complete `out`, an interpretation without pods (its own copy), with these pods' parts."""
    if out["gang"]:
        per_pod = [dict(p.gang) for p in parts if p.gang is not None]
        out["gang"]["pods"] = per_pod
        if out["gang"].get("mode") == "podGroups":
            out["gang"]["groups"] = group_pods(per_pod)
    out["live"] = assemble(layout, out["tree"], parts, out["warnings"])
