"""Pod-template rewrites: set labels, annotations, a scheduler, a priority class, a node
selector or tolerations in every pod a workload makes, through its definition's own paths.

The reference's newer write rules (docs/karta-semantics.md, "Writing back"), for the fields a scheduler or a
platform injects: each pod path of each chosen component (podTemplateSpecPath, podSpecPath with
metadataPath, or the fragments of fragmentedPodSpecDefinition) is resolved to concrete
locations (app/jqlang/writepaths.py), and every location gets a merge, not a replacement:

* labels, annotations, nodeSelector: merged into the stored map (keys not set are kept);
* schedulerName, priorityClassName: replaced;
* tolerations: those not already there (equal = the same object) appended.

A pod template, pod spec or pod metadata location that holds nothing (a PyTorchJob without a
Master) is skipped: writing there would make a pod the workload does not have.  A fragment is
created where it is absent, its parent objects too (`attempts`); when creating a parent makes
a pod appear (a Milvus without a queryNode section), the rewrite is made again with such
locations skipped.

A fragmented component takes only the fields it has paths for; a field it has no path for is
refused (`component <n> has no path for this fragment`).  Every location is resolved before
anything is written, and any refusal leaves the object as it was.  The caller then interprets
the result and checks it with `read_back_problems`: the interpretation must be the original's
except the set fields of the chosen components' pods (a shared `//` fallback written for one
component and read by another is caught there).  `make_patch` gives the RFC 6902 operations that
turn the original into the rewritten object, led by a `test` of the object's resourceVersion
when it has one (the patch then applies only to the version it was made from).
"""

from __future__ import annotations

import copy
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from ..jqlang.writepaths import Location, PathNotWritable, resolve_paths
from ..karta.load import Definition
from ..karta.model import ComponentDefinition

META_FIELDS = ("labels", "annotations")
SPEC_FIELDS = ("schedulerName", "priorityClassName", "nodeSelector", "tolerations")
SET_FIELDS = META_FIELDS + SPEC_FIELDS
_MAPS = ("labels", "annotations", "nodeSelector")
_WHOLE_PODS = ("podTemplateSpec", "podSpec", "metadata")  # forms whose absent location means: no such pod
_FRAGMENT_PATHS = {
    "labels": "labels_path",
    "annotations": "annotations_path",
    "schedulerName": "scheduler_name_path",
    "priorityClassName": "priority_class_name_path",
    "nodeSelector": "node_selector_path",
    "tolerations": "tolerations_path",
}
_TOLERATION = {"key": str, "operator": str, "value": str, "effect": str, "tolerationSeconds": int}
_OPERATORS = ("Exists", "Equal")
_EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")
# What a write at the object's root may not change (the reference's rule).
ROOT_FIXED = (("apiVersion",), ("kind",), ("status",), ("metadata", "name"), ("metadata", "uid"))


class UpdateError(Exception):
    """A rewrite refused; `field` names the request field it is about (a 422)."""

    def __init__(self, message: str, field: str = "set", component: str | None = None):
        super().__init__(message)
        self.message, self.field, self.component = message, field, component

    def as_error(self) -> dict[str, Any]:
        out = {"path": self.field, "message": self.message}
        if self.component is not None:
            out["component"] = self.component
        return out


@dataclass(frozen=True)
class Target:
    """One pod path of one component, and the set fields written through it."""

    component: str
    form: str  # podTemplateSpec | podSpec | metadata | a fragment (labels, schedulerName, ...)
    expression: str
    fields: tuple[str, ...]


@dataclass
class Rewrite:
    object: dict[str, Any]
    patch: list[dict[str, Any]]
    # one per location: {component, form, fields, expression, path, changed, skipped?}
    writes: list[dict[str, Any]] = field(default_factory=list)
    components: list[str] = field(default_factory=list)

    @property
    def changed(self) -> int:
        return sum(1 for w in self.writes if w["changed"])

    def applied(self) -> dict[tuple[str, str], list[bool]]:
        """(component, set field) -> per location in document order: written (not skipped)."""
        out: dict[tuple[str, str], list[bool]] = {}
        for w in self.writes:
            for f in w["fields"]:
                out.setdefault((w["component"], f), []).append("skipped" not in w)
        return out


# -- the request's `set` -------------------------------------------------------------------


def check_set(value: Any) -> dict[str, Any]:
    """The `set` of a request, checked: known fields of the right types, no `$` keys."""
    if not isinstance(value, dict) or not value:
        raise UpdateError("set must be an object with at least one of " + ", ".join(SET_FIELDS))
    for k, v in value.items():
        where = f"set.{k}"
        if k not in SET_FIELDS:
            raise UpdateError(f"unknown set field {k!r} (known: {', '.join(SET_FIELDS)})", where)
        if k in _MAPS:
            if not isinstance(v, dict) or not all(isinstance(x, str) and isinstance(y, str) for x, y in v.items()):
                raise UpdateError(f"{where} must be a map of strings to strings", where)
            _no_directives(v, where)
            if any(not x for x in v):
                raise UpdateError(f"{where} has an empty key", where)
        elif k in ("schedulerName", "priorityClassName"):
            if not isinstance(v, str) or not v:
                raise UpdateError(f"{where} must be a non-empty string", where)
        else:
            if not isinstance(v, list):
                raise UpdateError(f"{where} must be a list of tolerations", where)
            for i, t in enumerate(v):
                _check_toleration(t, f"{where}[{i}]")
    return value


def _no_directives(m: dict[str, Any], where: str) -> None:
    bad = [k for k in m if k.startswith("$")]
    if bad:
        raise UpdateError(f"{where}: key {bad[0]!r} starts with '$' (merge directives are refused)", where)


def _check_toleration(t: Any, where: str) -> None:
    if not isinstance(t, dict) or not t:
        raise UpdateError(f"{where} must be a toleration object", where)
    _no_directives(t, where)
    for k, v in t.items():
        want = _TOLERATION.get(k)
        if want is None:
            raise UpdateError(f"{where}: unknown toleration field {k!r} (known: {', '.join(_TOLERATION)})", where)
        if not isinstance(v, want) or isinstance(v, bool):
            raise UpdateError(f"{where}.{k} must be {'an integer' if want is int else 'a string'}", where)
    if t.get("operator", "Equal") not in _OPERATORS:
        raise UpdateError(f"{where}.operator must be one of {', '.join(_OPERATORS)}", where)
    if t.get("effect", "") not in _EFFECTS + ("",):
        raise UpdateError(f"{where}.effect must be one of {', '.join(_EFFECTS)}", where)
    if t.get("operator") == "Exists" and t.get("value"):
        raise UpdateError(f"{where}: operator Exists takes no value", where)


# -- what is written where -----------------------------------------------------------------


def chosen_components(d: Definition, names: list[str] | None) -> list[ComponentDefinition]:
    """The components a request names (every pod-bearing one by default)."""
    comps = list(d.karta.components)
    if names is None:
        return [c for c in comps if c.pod_bearing]
    by_name = {c.name: c for c in comps}
    out = []
    for n in dict.fromkeys(names):
        c = by_name.get(n)
        if c is None:
            raise UpdateError(
                f"unknown component {n!r}; the definition {d.name} has "
                + ", ".join(sorted(x.name or "" for x in comps)),
                "components",
            )
        if not c.pod_bearing:
            raise UpdateError(
                f"component {n!r} defines no pods (no pod template, pod spec or fragmented pod "
                "spec): nothing to rewrite",
                "components",
                n,
            )
        out.append(c)
    return out


def targets(c: ComponentDefinition, set_: dict[str, Any]) -> list[Target]:
    """The pod paths of one component that the set fields go through."""
    sd = c.spec_definition
    assert sd is not None
    name = c.name or ""
    wanted = tuple(f for f in SET_FIELDS if f in set_)
    if sd.pod_template_spec_path:
        return [Target(name, "podTemplateSpec", sd.pod_template_spec_path, wanted)]
    if sd.pod_spec_path:
        out = []
        spec = tuple(f for f in wanted if f in SPEC_FIELDS)
        meta = tuple(f for f in wanted if f in META_FIELDS)
        if spec:
            out.append(Target(name, "podSpec", sd.pod_spec_path, spec))
        if meta:
            if not sd.metadata_path:
                raise _no_path(name, meta[0], "metadataPath")
            out.append(Target(name, "metadata", sd.metadata_path, meta))
        return out
    frag = sd.fragmented_pod_spec_definition
    out = []
    for f in wanted:
        attr = _FRAGMENT_PATHS.get(f)
        path = getattr(frag, attr) if attr and frag is not None else None
        if not path:
            raise _no_path(name, f, f"fragmentedPodSpecDefinition.{f}Path" if attr else "a fragment path")
        out.append(Target(name, f, path, (f,)))
    return out


def _no_path(component: str, f: str, which: str) -> UpdateError:
    return UpdateError(
        f"component {component} has no path for this fragment: {f} (the definition gives no {which})",
        f"set.{f}",
        component,
    )


# -- merging one location ------------------------------------------------------------------


def _kind(v: Any) -> str:
    return {dict: "an object", list: "a list", str: "a string", bool: "a boolean"}.get(type(v), "a number")


def _as(v: Any, t: type, what: str) -> Any:
    if v is None:
        return t()
    if not isinstance(v, t):
        raise UpdateError(f"{what} holds {_kind(v)}, not {_kind(t())}")
    return v


def _merge_meta(meta: Any, set_: dict[str, Any], fields: tuple[str, ...], where: str) -> dict[str, Any]:
    m = dict(_as(meta, dict, where))
    for f in fields:
        if f in META_FIELDS:
            m[f] = {**_as(m.get(f), dict, f"{where}.{f}"), **set_[f]}
    return m


def _merge_spec(spec: Any, set_: dict[str, Any], fields: tuple[str, ...], where: str) -> dict[str, Any]:
    s = dict(_as(spec, dict, where))
    for f in fields:
        if f in ("schedulerName", "priorityClassName"):
            s[f] = set_[f]
        elif f == "nodeSelector":
            s[f] = {**_as(s.get(f), dict, f"{where}.{f}"), **set_[f]}
        elif f == "tolerations":
            s[f] = _merge_tolerations(s.get(f), set_[f], f"{where}.{f}")
    return s


def _merge_tolerations(old: Any, new: list[dict[str, Any]], where: str) -> list[Any]:
    out = list(_as(old, list, where))
    out += [t for t in _unique(new) if t not in out]
    return out


def _unique(xs: list[Any]) -> Iterator[Any]:
    seen: list[Any] = []
    for x in xs:
        if x not in seen:
            seen.append(x)
            yield x


def merged(t: Target, old: Any, set_: dict[str, Any], where: str) -> Any:
    """The value of one location after the write (the stored value is never replaced whole)."""
    if t.form == "podTemplateSpec":
        tmpl = dict(_as(old, dict, where))
        meta = tuple(f for f in t.fields if f in META_FIELDS)
        spec = tuple(f for f in t.fields if f in SPEC_FIELDS)
        if meta:
            tmpl["metadata"] = _merge_meta(tmpl.get("metadata"), set_, meta, f"{where}.metadata")
        if spec:
            tmpl["spec"] = _merge_spec(tmpl.get("spec"), set_, spec, f"{where}.spec")
        return tmpl
    if t.form == "podSpec":
        return _merge_spec(old, set_, t.fields, where)
    if t.form == "metadata":
        return _merge_meta(old, set_, t.fields, where)
    f = t.form  # a fragment: the field's own value
    if f in _MAPS:
        return {**_as(old, dict, where), **set_[f]}
    if f == "tolerations":
        return _merge_tolerations(old, set_[f], where)
    return set_[f] if old is None or isinstance(old, str) else _as(old, str, where)


# -- the rewrite ---------------------------------------------------------------------------


def pointer(loc: Location) -> str:
    """RFC 6901 JSON pointer of a location."""
    return "".join("/" + str(k).replace("~", "~0").replace("/", "~1") for k in loc)


def _get(obj: Any, loc: Location) -> Any:
    for k in loc:
        if isinstance(k, str) and isinstance(obj, dict):
            obj = obj.get(k)
        elif isinstance(k, int) and isinstance(obj, list):
            obj = obj[k] if k < len(obj) else None
        else:
            return None
    return obj


def set_at(obj: dict[str, Any], loc: Location, value: Any) -> None:
    """Write `value` at `loc`, creating missing objects on the way (as jq's setpath does)."""
    node: Any = obj
    for i, k in enumerate(loc[:-1]):
        nxt = loc[i + 1]
        child = node.get(k) if isinstance(k, str) else node[k]
        if child is None:
            child = {} if isinstance(nxt, str) else None
            if child is None:
                raise UpdateError(f"cannot write {pointer(loc)}: {pointer(loc[: i + 1])} is not there to index")
            node[k] = child
        node = child
    k = loc[-1]
    if isinstance(k, int) and k >= len(node):
        raise UpdateError(f"cannot write {pointer(loc)}: index {k} is past the end of the list")
    node[k] = value


def attempts(d: Definition, obj: dict[str, Any], set_: Any, components: list[str] | None = None) -> Iterator[Rewrite]:
    """The rewrites to try in turn, the first that reads back being the answer: fragments are
    first created where their parent object is absent (a Dynamo service without
    `extraPodMetadata`); if that made a pod appear (a Milvus without a `queryNode` section), such
    locations are skipped instead."""
    rw = rewrite(d, obj, set_, components)
    yield rw
    if any(w.get("created") for w in rw.writes):
        yield rewrite(d, obj, set_, components, create_parents=False)


def _write(t: Target, loc: Location, changed: bool, **extra: Any) -> dict[str, Any]:
    """The report of one location written (or skipped: `extra`)."""
    return {
        "component": t.component,
        "form": t.form,
        "fields": list(t.fields),
        "expression": t.expression,
        "path": pointer(loc),
        "changed": changed,
        **extra,
    }


def rewrite(
    d: Definition, obj: dict[str, Any], set_: Any, components: list[str] | None = None, create_parents: bool = True
) -> Rewrite:
    """The object with `set_` written into every pod of the chosen components, and its patch.
    Atomic: every location is resolved and merged before the result is returned; any refusal
    raises UpdateError and `obj` is never modified.  `create_parents`: write a fragment whose
    parent object is absent (creating it), else skip it."""
    set_ = check_set(set_)
    chosen = chosen_components(d, components)
    staged: list[tuple[Target, Location]] = []
    for c in chosen:
        for t in targets(c, set_):
            try:
                locs = resolve_paths(t.expression, obj)
            except PathNotWritable as e:
                raise UpdateError(f"component {t.component}: {e}", "definition", t.component) from None
            staged += [(t, loc) for loc in locs]
    out = copy.deepcopy(obj)
    writes = []
    for t, loc in staged:
        where = pointer(loc) or "the object root"
        old = _get(out, loc)
        orphan = old is None and t.form not in _WHOLE_PODS and bool(loc) and _get(out, loc[:-1]) is None
        if old is None and (t.form in _WHOLE_PODS or not loc or (orphan and not create_parents)):
            # No pod there (a PyTorchJob without a Master, a Milvus without a queryNode):
            # writing would create one.
            writes.append(_write(t, loc, False, skipped="nothing there"))
            continue
        try:
            new = merged(t, old, set_, where)
        except UpdateError as e:
            raise UpdateError(f"component {t.component}: {e.message}", "definition", t.component) from None
        if not loc:
            moved = [".".join(p) for p in ROOT_FIXED if _get(new, p) != _get(obj, p)]
            if moved:
                raise UpdateError(
                    f"component {t.component}: a write at the object root may not change " + ", ".join(moved),
                    "definition",
                    t.component,
                )
        changed = new != old
        if changed:
            if loc:
                set_at(out, loc, new)
            else:
                out = new
        writes.append(_write(t, loc, changed, **({"created": True} if orphan else {})))
    patch = make_patch(obj, out)
    rv = _get(obj, ("metadata", "resourceVersion"))
    if patch and isinstance(rv, str) and rv:
        # The ops index lists as they were read: applied to a newer version they could land
        # elsewhere, so the patch holds only against the version it was made from.
        patch.insert(0, {"op": "test", "path": "/metadata/resourceVersion", "value": rv})
    return Rewrite(out, patch, writes, [c.name or "" for c in chosen])


# -- JSON patch ----------------------------------------------------------------------------


def make_patch(old: Any, new: Any, at: str = "") -> list[dict[str, Any]]:
    """RFC 6902 operations that turn `old` into `new`: per key for objects, per element for a
    list that kept or grew its length (appends at its end), a replace for anything else."""
    if _same(old, new):
        return []
    if isinstance(old, dict) and isinstance(new, dict):
        ops: list[dict[str, Any]] = []
        for k in old:
            if k not in new:
                ops.append({"op": "remove", "path": at + pointer((k,))})
        for k, v in new.items():
            if k not in old:
                ops.append({"op": "add", "path": at + pointer((k,)), "value": v})
            else:
                ops += make_patch(old[k], v, at + pointer((k,)))
        return ops
    if isinstance(old, list) and isinstance(new, list) and len(new) >= len(old):
        ops = [op for i, x in enumerate(old) for op in make_patch(x, new[i], f"{at}/{i}")]
        return ops + [{"op": "add", "path": f"{at}/{i}", "value": new[i]} for i in range(len(old), len(new))]
    return [{"op": "replace", "path": at, "value": new}]


def _same(a: Any, b: Any) -> bool:
    """JSON equality (Python's == takes True for 1)."""
    if type(a) is not type(b) and not (
        isinstance(a, (int, float))
        and isinstance(b, (int, float))
        and not isinstance(a, bool)
        and not isinstance(b, bool)
    ):
        return False
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b)


# -- reading back --------------------------------------------------------------------------


def expected_view(view: dict[str, Any], set_: dict[str, Any]) -> dict[str, Any]:
    """A pod view (interpretation `tree...instances[].pod`) as it must read after the write."""
    v = dict(view)
    for f in META_FIELDS:
        if f in set_:
            v[f] = {**(v.get(f) or {}), **set_[f]}
    for f in ("schedulerName", "priorityClassName"):
        if f in set_:
            v[f] = set_[f]
    if "nodeSelector" in set_:
        v["nodeSelector"] = {**(v.get("nodeSelector") or {}), **set_["nodeSelector"]}
    if "tolerations" in set_:
        v["tolerations"] = _merge_tolerations(v.get("tolerations"), set_["tolerations"], "tolerations")
    return v


def _expected(node: dict[str, Any], set_: dict[str, Any], applied: dict[tuple[str, str], list[bool]]) -> dict[str, Any]:
    out = dict(node)
    name, instances = node["name"], node.get("instances") or []
    if node.get("podBearing"):
        views = []
        for i, inst in enumerate(instances):
            fields = {}
            for f, v in set_.items():
                flags = applied.get((name, f)) or []
                # Locations align with instances in document order (the reference's zip);
                # when the counts differ, any written location stands for every instance.
                if flags[i] if len(flags) == len(instances) else any(flags):
                    fields[f] = v
            pod = inst.get("pod")
            views.append(dict(inst, pod=expected_view(pod, fields)) if fields and isinstance(pod, dict) else inst)
        out["instances"] = views
    if node.get("children"):
        out["children"] = [_expected(c, set_, applied) for c in node["children"]]
    return out


def _scaled(node: dict[str, Any], scales: Mapping[str, Mapping[str | None, Mapping[str, int]]]) -> dict[str, Any]:
    out = dict(node)
    per = scales.get(node["name"])
    if per:
        out["instances"] = [dict(i, **per.get(i.get("id"), {})) for i in node.get("instances") or []]
    if node.get("children"):
        out["children"] = [_scaled(c, scales) for c in node["children"]]
    return out


def _derived(path: str) -> bool:
    """What follows from the counts: totals (the workload's and each node's and instance's), the
    gang's minimums, and the status (a controller's report about the counts it had)."""
    parts = path.split("/")
    return parts[1] in ("totals", "gang", "status") or "totals" in parts[2:]


def read_back_problems(
    before: dict[str, Any],
    after: dict[str, Any],
    set_: dict[str, Any],
    rw: Rewrite,
    scales: Mapping[str, Mapping[str | None, Mapping[str, int]]] | None = None,
) -> list[str]:
    """Where the rewritten object's interpretation differs from the original's other than by the
    set fields of the pods written and the `scales` asked (component -> instance id -> the scale
    fields it must read: replicas, and the bounds that follow it; app/engine/replicas.py), whose
    consequences are not compared (JSON pointers into the interpretation)."""
    want = dict(before)
    if isinstance(before.get("tree"), dict):
        want["tree"] = _expected(before["tree"], set_, rw.applied())
        if scales:
            want["tree"] = _scaled(want["tree"], scales)
    if "priorityClassName" in set_:
        # A new priority class is a new dependency of the pods written: read from them, as the tree is.
        want["dependencies"] = after.get("dependencies")
    moved = [op["path"] or "/" for op in make_patch(want, after)]
    return [p for p in moved if not _derived(p)] if scales else moved
