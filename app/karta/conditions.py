"""What a Karta resource's status and labels should say: the upstream operator's conditions and
index labels (docs/karta-format.md, "The resource"), plus `Conflict`, computed from what the service loaded.

Pure functions: the writer (app/cluster/karta_status.py) feeds them the Karta objects, the
definitions the service made of them, the registry in force and which root kinds are served.

* `Validated`  - True `ValidationSucceeded`; False `ValidationFailed` with the findings' texts.
* `CRDExists`  - True `CRDFound` when discovery serves the root group/version/kind; False `CRDNotFound`.
* `Ready`      - True `Ready` when both are True *and* the service uses this Karta for its kind;
                 False `NotReady`, the message saying which part is missing.
* `Conflict`   - True `DuplicateKind` when another Karta names the same root group/version/kind,
                 saying which definition the service uses for it and why (the registry's
                 precedence: a higher source wins; two valid Kartas tie and neither is used);
                 False `NoConflict`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .load import Definition
from .registry import AmbiguousDefinition, Registry
from .validate import label_value_problems

GVK = tuple[str, str, str]

LABEL_GROUP, LABEL_VERSION, LABEL_KIND = "run.ai/karta-group", "run.ai/karta-version", "run.ai/karta-kind"
TYPES = ("Validated", "CRDExists", "Ready", "Conflict")
MAX_MESSAGE = 32768  # metav1.Condition's limit
NOT_READY = "Validated and CRDExists must both be True"


def origin_of(name: str) -> str:
    """The origin the Karta source gives a Karta's definition (sources.karta_definitions)."""
    return f"karta:{name}"


def _object(obj: dict[str, Any], key: str) -> dict[str, Any]:
    """The object at ``key``; an empty one for anything else."""
    v = obj.get(key)
    return v if isinstance(v, dict) else {}


def root_gvk(obj: dict[str, Any]) -> GVK | None:
    """The root group/version/kind a Karta object names, read from the raw spec (an invalid
    Karta still names one)."""
    gvk = _object(_object(_object(_object(obj, "spec"), "structureDefinition"), "rootComponent"), "kind")
    g, v, k = (gvk.get(f) for f in ("group", "version", "kind"))
    if not isinstance(g, (str, type(None))) or not isinstance(v, str) or not isinstance(k, str) or not v or not k:
        return None
    return (g or "", v, k)


def show(gvk: GVK) -> str:
    return f'group "{gvk[0]}" version "{gvk[1]}" kind "{gvk[2]}"'


def labels(obj: dict[str, Any]) -> dict[str, str]:
    """The index labels KAI Scheduler selects Kartas by; none that could not be a label value."""
    gvk = root_gvk(obj)
    if gvk is None:
        return {}
    out = dict(zip((LABEL_GROUP, LABEL_VERSION, LABEL_KIND), gvk, strict=True))
    return {k: v for k, v in out.items() if not label_value_problems(v)}


def claims(objects: dict[str, dict[str, Any]]) -> dict[GVK, list[str]]:
    """root GVK -> names of the Karta objects naming it (valid or not)."""
    out: dict[GVK, list[str]] = {}
    for name in sorted(objects):
        gvk = root_gvk(objects[name])
        if gvk is not None:
            out.setdefault(gvk, []).append(name)
    return out


def _cond(type_: str, ok: bool, reason: str, message: str) -> dict[str, str]:
    # never an empty message: a JSON merge patch turns "" into null, which a typed status schema refuses
    return {
        "type": type_,
        "status": "True" if ok else "False",
        "reason": reason,
        "message": message[:MAX_MESSAGE] or reason,
    }


def used_for(registry: Registry, gvk: GVK) -> tuple[Definition | None, str]:
    """The definition the service uses for a kind, and a sentence saying which and why."""
    try:
        d = registry.resolve(gvk)
    except AmbiguousDefinition as e:
        names = ", ".join(f'"{n}"' for n in e.names)
        return None, (
            f"the service uses none of them: {names} are valid definitions of the same source, which "
            "is ambiguous, so requests for this kind fail until all but one are removed or changed"
        )
    if d is None:
        return None, "the service uses none of them: none is valid"
    if d.source == "cluster":
        return d, f'the service uses Karta "{d.name}", the only valid one'
    return d, (
        f'the service uses definition "{d.name}" from {d.source} {d.origin}, which takes precedence over '
        "Karta resources"
    )


def conditions(
    name: str,
    obj: dict[str, Any],
    definition: Definition | None,
    unreadable: str | None,
    served: Callable[[GVK], bool | None],
    registry: Registry,
    claimed: dict[GVK, list[str]],
) -> list[dict[str, str]]:
    """The four conditions of one Karta (without times and generation).  `served(gvk)`: whether
    discovery serves that kind."""
    gvk = root_gvk(obj)
    findings = [f.message for f in (definition.findings if definition else []) if f.level == "error"]
    if unreadable is not None:
        findings.append(unreadable)
    valid = not findings
    validated = _cond(
        "Validated",
        valid,
        "ValidationSucceeded" if valid else "ValidationFailed",
        "the definition passes validation" if valid else "\n".join(findings) or "Karta validation failed",
    )

    crd_ok = bool(gvk and served(gvk))
    if gvk is None:
        crd = _cond("CRDExists", False, "CRDNotFound", "the root component names no full group, version and kind")
    else:
        crd = _cond(
            "CRDExists",
            crd_ok,
            "CRDFound" if crd_ok else "CRDNotFound",
            f"the API server serves {show(gvk)}"
            if crd_ok
            else f"CRD for {gvk[0]}/{gvk[2]} not found or does not serve version {gvk[1]}",
        )

    others = [n for n in claimed.get(gvk, []) if n != name] if gvk else []
    used, why = used_for(registry, gvk) if gvk else (None, "")
    if others and gvk:
        names = ", ".join(f'"{n}"' for n in others)
        conflict = _cond("Conflict", True, "DuplicateKind", f"Karta {names} also names {show(gvk)}; {why}")
    else:
        conflict = _cond(
            "Conflict",
            False,
            "NoConflict",
            f"no other Karta names {show(gvk)}" if gvk else "no root group, version and kind to compare",
        )

    in_force = (
        used is not None
        and definition is not None
        and used.origin == origin_of(name)
        and used.digest == definition.digest
    )
    if valid and crd_ok and in_force and gvk:  # (in force: the registry uses it for its gvk)
        ready = _cond("Ready", True, "Ready", f"in force for {show(gvk)}")
    elif not valid or not crd_ok:
        kept = used is not None and used.origin == origin_of(name)
        ready = _cond(
            "Ready",
            False,
            "NotReady",
            NOT_READY + ("; the last valid version of this Karta stays in service" if kept else ""),
        )
    else:
        ready = _cond("Ready", False, "NotReady", f"valid and served, but not in force: {why}")
    return [validated, crd, ready, conflict]


def event_of(conds: list[dict[str, Any]]) -> tuple[str, str, str] | None:
    """The Event a Karta in this state deserves, as (type, reason, message); None before the
    first evaluation.  Derived from the conditions alone, so the state written in the object
    tells any later leader what was already announced."""
    by = {c.get("type"): c for c in conds if isinstance(c, dict)}
    if not all(t in by for t in ("Validated", "CRDExists", "Ready")):
        return None
    v, c, r = by["Validated"], by["CRDExists"], by["Ready"]
    if v.get("status") != "True":
        return "Warning", "ValidationFailed", str(v.get("message") or "")
    if c.get("status") != "True":
        return "Warning", "CRDMissing", str(c.get("message") or "")
    if r.get("status") != "True":
        clash = (by.get("Conflict") or {}).get("status") == "True"
        return "Warning", "Conflict" if clash else "NotInForce", str(r.get("message") or "")
    return "Normal", "Validated", str(r.get("message") or "")


def merged(old: list[Any], new: list[dict[str, str]], generation: int | None, now: str) -> list[dict[str, Any]]:
    """`new` with times and generation: lastTransitionTime moves only when a status flips.
    Conditions of other types (somebody else's) are kept after ours."""
    before = {c.get("type"): c for c in old if isinstance(c, dict)}
    out: list[dict[str, Any]] = []
    for c in new:
        prev = before.get(c["type"]) or {}
        since = prev.get("lastTransitionTime") if prev.get("status") == c["status"] else None
        out.append(
            {
                **c,
                "lastTransitionTime": since or now,
                **({"observedGeneration": generation} if generation is not None else {}),
            }
        )
    return out + [c for c in old if isinstance(c, dict) and c.get("type") not in TYPES]
