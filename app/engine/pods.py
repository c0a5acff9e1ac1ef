"""Pod-side reference primitives: which component and instance a pod belongs to.

Every expression here runs against a Pod; the per-pod results come from the definition's pod
batch (one libjq call for all pods).  Texts follow the reference (`InferPodComponent`,
`InferPodComponentInstance`, `GetMatchingInstanceId`).
"""

from __future__ import annotations

from typing import Any

from ..jqlang.jqbatch import Result
from ..jqlang.values import go_v
from ..karta.model import ComponentDefinition, ComponentTypeSelector
from .compiled import CompiledDefinition, type_selector_expression


class PodError(Exception):
    pass


class PodInput:
    """One pod and its results of the definition's pod batch.  `name` keys every row, sort and
    message about the pod, so it is read once."""

    __slots__ = ("name", "obj", "results")

    def __init__(self, obj: dict[str, Any], results: dict[str, Result]):
        self.obj, self.results = obj, results
        self.name = str((obj.get("metadata") or {}).get("name") or "")

    @property
    def namespace(self) -> str:
        return str((self.obj.get("metadata") or {}).get("namespace") or "")

    @property
    def labels(self) -> dict[str, Any]:
        return (self.obj.get("metadata") or {}).get("labels") or {}

    def outputs(self, expr: str) -> list[Any]:
        r = self.results[expr]
        if not r.ok:
            raise PodError(r.error)
        return r.values or []

    def single_value(self, expr: str) -> Any:
        """Exactly one output, neither null nor "" (the reference's single-value rule)."""
        outs = self.outputs(expr)
        if len(outs) != 1:
            raise PodError(f"expected single query result, got {len(outs)}")
        v = outs[0]
        if v is None or v == "":
            raise PodError(f"query result is empty {'<nil>' if v is None else ''}")
        return v

    def single(self, expr: str) -> str:
        """The single value as Go %v (instance ids, replica keys, group keys)."""
        return go_v(self.single_value(expr))


def matches_type(sel: ComponentTypeSelector | None, pod: PodInput) -> bool:
    if sel is None:
        return False
    if sel.match_labels is not None:
        labels = pod.labels
        for k, v in sel.match_labels.items():
            if k not in labels or labels[k] != v:
                return False
    if not sel.key_path:
        return bool(sel.match_labels)  # a selector with no condition never matches
    outs = pod.outputs(type_selector_expression(sel.key_path, sel.value))
    # Loops, not any(<generator>): making the generator costs more than reading the few outputs.
    if sel.value is None:
        for o in outs:
            if o is not None:
                return True
    else:
        for o in outs:
            if o is True:  # only boolean true passes
                return True
    return False


def infer_component(cd: CompiledDefinition, pod: PodInput) -> str:
    if len(cd.leaves) == 1:
        return cd.leaves[0]
    for name in cd.leaves:
        c = cd.components[name]
        sel = c.pod_selector.component_type_selector if c.pod_selector else None
        if sel is not None and matches_type(sel, pod):
            return name
    raise PodError(f"no component found for pod {pod.name}")


def matching_instance_id(c: ComponentDefinition, ids: list[str], pod: PodInput) -> str:
    sel = c.pod_selector.component_instance_selector if c.pod_selector else None
    if sel is None or not sel.id_path:
        if ids == [""]:
            return ""
        raise PodError("no instance selector provided but instance ids are not empty")
    got = pod.single(sel.id_path)
    for i in ids:
        if i == got:
            return i
    raise PodError(f'could not match instance id "{got}". existing instance ids [{" ".join(ids)}]')


def infer_instance(cd: CompiledDefinition, name: str, ids: list[str], pod: PodInput) -> str | None:
    """The pod's instance, or None when the component has no ids or no pod selector."""
    c = cd.components[name]
    if not ids or ids[0] == "" or c.pod_selector is None:
        return None
    return matching_instance_id(c, ids, pod)


def matches_subtree(cd: CompiledDefinition, name: str, pod: PodInput) -> bool:
    """v2 subgroup membership: the type selector of the component or of any descendant."""
    todo = [name]
    while todo:
        n = todo.pop(0)
        c = cd.components.get(n)
        if c is not None and c.pod_selector is not None and matches_type(c.pod_selector.component_type_selector, pod):
            return True
        todo += cd.children.get(n, [])
    return False
