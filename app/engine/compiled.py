"""A definition prepared for evaluation: its batched programs and its structure summary.

Built once per definition digest and cached (compiling costs ~1-2 ms of libjq time per
program; interpreting must not pay it).  The structure summary mirrors the reference's
`NewStructureSummary`: leaves in root-then-children order, parent/children maps, whether any
component has a scale, and the alpha gang candidates per component.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from ..jqlang import JqParseError, parse
from ..jqlang.calls import called_functions
from ..jqlang.jqbatch import GOJQ_UNDEFINED, Batch
from ..jqlang.native import why_not
from ..jqlang.paths import Tree, merge, needs
from ..karta.load import Definition
from ..karta.model import FRAGMENT_FIELDS, STATUS_KEYS, ComponentDefinition, GangScheduling, PodGroupMember
from .memo import COMPILED_FACTOR, ByteLRU, held_bytes


@dataclass(frozen=True)
class Candidate:
    effective_component: str
    pod_group_name: str
    member: PodGroupMember


@lru_cache(maxsize=4096)  # matches_type asks for it for every pod and selector
def type_selector_expression(key_path: str, value: str | None) -> str:
    """What the reference evaluates for a type selector: `<keyPath> == "<value>"`, concatenated
    as text (no parentheses), so `.a // .b` with a value compares only `.b`."""
    import json

    return key_path if value is None else f"{key_path} == {json.dumps(value)}"


def _component_workload_exprs(c: ComponentDefinition, with_status: bool) -> list[str]:
    out: list[str | None] = [c.instance_id_path]
    sd = c.spec_definition
    if sd is not None:
        out += [sd.pod_template_spec_path, sd.pod_spec_path, sd.metadata_path]
        if sd.fragmented_pod_spec_definition is not None:
            out += [getattr(sd.fragmented_pod_spec_definition, a) for a, _, _ in FRAGMENT_FIELDS]
    if c.scale_definition is not None:
        sc = c.scale_definition
        out += [sc.replicas_path, sc.min_replicas_path, sc.max_replicas_path]
    st = c.status_definition
    if with_status and st is not None:
        if st.phase_definition is not None:
            out.append(st.phase_definition.path)
        if st.conditions_definition is not None:
            out.append(st.conditions_definition.path)
        if st.status_mappings is not None:
            for key, _, _ in STATUS_KEYS:
                for m in getattr(st.status_mappings, key) or []:
                    if m.by_expression is not None:
                        out.append(m.by_expression.expression)
    return [e for e in out if e]


def _forced_compile_errors(texts: list[str]) -> dict[int, str]:
    """Builtins libjq has but gojq lacks fail to compile upstream; make them fail here too."""
    forced = {}
    for i, t in enumerate(texts):
        try:
            names = called_functions(parse(t))
        except JqParseError:
            continue  # invalid definitions are never compiled; libjq will report it anyway
        bad = sorted(n for n in names if n in GOJQ_UNDEFINED)
        if bad:
            kind = "variable" if bad[0].startswith("$") else "function"
            forced[i] = f"{kind} not defined: {bad[0]}"
    return forced


def _calls_now(texts: list[str]) -> bool:
    for t in texts:
        try:
            if "now/0" in called_functions(parse(t)):
                return True
        except JqParseError:
            return True
    return False


def _batch(unique: list[str]) -> tuple[Batch, dict[str, int]]:
    return Batch(unique, _forced_compile_errors(unique)), {t: i for i, t in enumerate(unique)}


def expression_texts(d: Definition) -> tuple[list[str], list[str]]:
    """The distinct expressions of the workload batch and of the pod batch, in batch order.
    Deterministic, so a supervisor can name the expression at a progress index without
    compiling anything."""
    k = d.karta
    root = k.root
    w_texts: list[str] = []
    for c in k.components:
        w_texts += _component_workload_exprs(c, with_status=c is root)
    p_texts: list[str] = []
    for c in k.components:
        ps = c.pod_selector
        if ps is None:
            continue
        ts = ps.component_type_selector
        if ts is not None and ts.key_path:
            p_texts.append(type_selector_expression(ts.key_path, ts.value))
        if ps.component_instance_selector is not None and ps.component_instance_selector.id_path:
            p_texts.append(ps.component_instance_selector.id_path)
        if ps.replica_selector is not None and ps.replica_selector.key_path:
            p_texts.append(ps.replica_selector.key_path)
    gang = k.gang
    for pg in (gang.pod_groups or []) if gang else []:
        for m in pg.members or []:
            p_texts += [p for p in (m.filters or []) + (m.group_by_key_paths or []) if p]
    return list(dict.fromkeys(w_texts)), list(dict.fromkeys(p_texts))


# What the engine reads of extracted pod definitions (requests, pod view); the rest of a pod
# template never needs to reach jq.
_CONTAINER: Tree = {
    "name": True,
    "image": True,
    "resources": True,
    "restartPolicy": True,
    "env": {None: {"valueFrom": True}},  # dependencies.py: only references
    "envFrom": True,
}
_VOLUME: Tree = {
    k: True
    for k in (
        "configMap",
        "secret",
        "persistentVolumeClaim",
        "projected",
        "azureFile",
        "csi",
        "cephfs",
        "rbd",
        "flexVolume",
        "iscsi",
        "scaleIO",
        "storageos",
    )
}
_POD_SPEC: Tree = {
    "volumes": {None: _VOLUME},
    "imagePullSecrets": True,
    "serviceAccountName": True,
    "serviceAccount": True,
    "containers": {None: _CONTAINER},
    "initContainers": {None: _CONTAINER},
    "overhead": True,
    "resources": True,
    "schedulerName": True,
    "priorityClassName": True,
    "nodeSelector": True,
    "resourceClaims": True,
    "tolerations": True,
    "affinity": True,
    "topologySpreadConstraints": True,
    "runtimeClassName": True,
}
_METADATA: Tree = {"labels": True, "annotations": True}
_POD_TEMPLATE: Tree = {"metadata": _METADATA, "spec": _POD_SPEC}
_FRAGMENT_SHAPES: dict[str, Tree | bool] = {"containers_path": {None: _CONTAINER}, "container_path": _CONTAINER}


def _shaped_exprs(d: Definition) -> list[tuple[str, Tree | bool]]:
    """Every workload expression with the shape in which the engine reads its outputs."""
    out: list[tuple[str, Tree | bool]] = []
    for c in d.karta.components:
        sd = c.spec_definition
        if sd is not None:
            for text, shape in (
                (sd.pod_template_spec_path, _POD_TEMPLATE),
                (sd.pod_spec_path, _POD_SPEC),
                (sd.metadata_path, _METADATA),
            ):
                if text:
                    out.append((text, shape))
            frag = sd.fragmented_pod_spec_definition
            if frag is not None:
                for attr, _, _ in FRAGMENT_FIELDS:
                    if getattr(frag, attr):
                        out.append((getattr(frag, attr), _FRAGMENT_SHAPES.get(attr, True)))
    shaped = {t for t, _ in out}
    w_texts, _ = expression_texts(d)
    return out + [(t, True) for t in w_texts if t not in shaped]


def _read_tree(shaped: Iterable[tuple[str, Tree | bool]]) -> Tree | bool:
    """What expressions, each with the shape in which its outputs are read, can read of their
    input (True: all of it)."""
    tree: Tree | bool | None = {}
    for text, shape in shaped:
        try:
            tree = merge(tree, needs(parse(text), shape))
        except JqParseError:
            return True
        if tree is True:
            return True
    return tree if tree is not None else {}


def projection_tree(d: Definition) -> Tree | bool:
    """What of the workload object the workload expressions can read (True: all of it)."""
    return _read_tree(_shaped_exprs(d))


def pod_projection_tree(texts: list[str]) -> Tree | bool:
    """What of a pod the pod expressions can read (True: all of it); their outputs are read
    whole (selector values, group keys)."""
    return _read_tree((t, True) for t in texts)


# Expressions that mention these read what we would otherwise strip from the input.
_STRIP_SENSITIVE = (
    "managedFields",
    "last-applied",
    "metadata |",
    "metadata|",
    "metadata[]",
    "annotations |",
    "annotations|",
    "annotations[]",
    "annotations)",
    "metadata)",
)


@dataclass
class CompiledDefinition:
    definition: Definition
    workload: Batch
    workload_index: dict[str, int]
    pods: Batch
    pod_index: dict[str, int]
    strip_noise: bool
    projection: Tree | bool  # what jq may read of the workload object (True: everything)
    components: dict[str, ComponentDefinition]
    order: list[str]  # root first, then children, definition order
    parent: dict[str, str]
    children: dict[str, list[str]]
    leaves: list[str]
    has_scale: bool
    time_dependent: bool = False  # an expression calls `now`: its results must not be reused
    pod_projection: Tree | bool = True  # what the pod expressions may read of a pod
    candidates: dict[str, list[Candidate]] = field(default_factory=dict)
    bearing: frozenset[str] = frozenset()  # the leaves, for `in` (`pod_bearing` walks the spec definition)

    @classmethod
    def build(cls, d: Definition) -> CompiledDefinition:
        k = d.karta
        comps = k.components
        gang = k.gang
        w_texts, p_texts = expression_texts(d)
        workload, w_index = _batch(w_texts)
        pods, p_index = _batch(p_texts)
        strip = not any(s in t for t in w_texts for s in _STRIP_SENSITIVE)
        projection = projection_tree(d)

        names = [c.name or "" for c in comps]
        by_name = {c.name or "": c for c in comps}
        parent = {c.name or "": c.owner_ref or "" for c in k.children}
        children: dict[str, list[str]] = {n: [] for n in names}
        for c in k.children:
            children.setdefault(c.owner_ref or "", []).append(c.name or "")
        leaves = [c.name or "" for c in comps if c.pod_bearing]
        has_scale = any(c.scale_definition is not None for c in comps)
        compiled = cls(
            d,
            workload,
            w_index,
            pods,
            p_index,
            strip,
            projection,
            by_name,
            names,
            parent,
            children,
            leaves,
            has_scale,
            _calls_now(w_texts),
            pod_projection_tree(p_texts),
            bearing=frozenset(n for n, c in by_name.items() if c.pod_bearing),
        )
        if gang is not None and (gang.pod_groups or gang.pod_group is not None):
            compiled.candidates = {n: compiled._candidates_for(gang, n) for n in names}
        return compiled

    def _candidates_for(self, gang: GangScheduling, name: str) -> list[Candidate]:
        found: list[Candidate] = []
        level: str | None = name
        seen: set[str] = set()
        while level is not None and level not in seen:
            seen.add(level)
            for pg in gang.pod_groups or []:
                for m in pg.members or []:
                    if m.component_name == level:
                        found.append(Candidate(level, pg.name or "", m))
            level = self.parent.get(level)
        # Own members first, the rest in order: a stable sort (the reference intends one).
        return sorted(found, key=lambda c: c.effective_component != name)


# By digest, bounded by bytes: definitions from requests can be large and many.
COMPILED_BYTES = 128 * 1024 * 1024
_cache: ByteLRU[str, CompiledDefinition] = ByteLRU(COMPILED_BYTES)
stats = {"hits": 0, "misses": 0}


def compiled(d: Definition) -> CompiledDefinition:
    """The compiled form of a definition, cached by its digest."""
    hit = _cache.get(d.digest)
    if hit is not None:
        stats["hits"] += 1
        return hit
    stats["misses"] += 1
    return _cache.put(d.digest, CompiledDefinition.build(d), held_bytes(d.raw, COMPILED_FACTOR))


def evaluation(d: Definition) -> dict[str, Any]:
    """How each expression of a definition is evaluated: natively (in Python, on the parsed
    object) or by libjq, and why not natively."""
    cd = compiled(d)
    items = []
    for stage, batch in (("workload", cd.workload), ("pods", cd.pods)):
        for i, text in enumerate(batch.texts):
            if i in batch.compile_errors:
                items.append(
                    {
                        "stage": stage,
                        "expression": text,
                        "native": False,
                        "reason": f"does not compile: {batch.compile_errors[i]}",
                    }
                )
            else:
                ok = batch.native[i] is not None
                items.append(
                    {"stage": stage, "expression": text, "native": ok, "reason": None if ok else why_not(text)}
                )
    return {"native": sum(1 for x in items if x["native"]), "expressions": len(items), "items": items}
