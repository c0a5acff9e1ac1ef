"""Status normalisation, exactly as the reference matches it, plus one primary phase.

Matchers: phase, then conditions, then expression, short-circuited; matchers under one status
are ORed in order; statuses are reported in the fixed evaluation order; nothing matched means
exactly ["Undefined"].  An error in a matcher that is actually reached fails the whole status
(results for unreached expressions are computed by the batch but ignored, as never evaluated).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..jqlang.jqbatch import Result
from ..jqlang.values import go_json_type, gojq_tostring
from ..karta.model import StatusDefinition, StatusMatcher
from .instances import ExtractionError
from .memo import DEFINITION_FACTOR, Memo

EVALUATION_ORDER = ["Resuming", "Suspending", "Suspended", "Running", "Failed", "Completed", "Initializing", "Degraded"]
PRECEDENCE = [
    "Resuming",
    "Suspending",
    "Suspended",
    "Failed",
    "Completed",
    "Degraded",
    "Running",
    "Initializing",
    "Undefined",
]
UNDEFINED = "Undefined"


@dataclass
class Condition:
    type: str
    status: str | None
    reason: str | None
    message: str

    def as_dict(self) -> dict[str, Any]:
        return {"type": self.type, "status": self.status, "reason": self.reason, "message": self.message}


@dataclass
class StatusResult:
    matched: list[str]
    raw_phase: str | None = None
    conditions: list[Condition] = field(default_factory=list)

    @property
    def phase(self) -> str:
        return primary_phase(self.matched)


def primary_phase(matched: list[str]) -> str:
    for p in PRECEDENCE:
        if p in matched:
            return p
    return UNDEFINED


# A matcher as plain values: (byPhase or None, byConditions as (type, status, reason) with
# unset fields "", byExpression's expression or None, its expected result).
_Matcher = tuple[str | None, tuple[tuple[str, str, str], ...], str | None, str]


@dataclass(frozen=True)
class _Plan:
    """What evaluate_status reads of a status definition, read once (definitions are immutable
    and reused; walking the models was half of every evaluation)."""

    phase_path: str | None
    conditions: tuple[str, str, str, str, str] | None  # path; type, status, message, reason fields
    mappings: tuple[tuple[str, str, tuple[_Matcher, ...]], ...]  # (status, mapping key, matchers)

    @classmethod
    def of(cls, sd: StatusDefinition) -> _Plan:
        pd, cd, mappings = sd.phase_definition, sd.conditions_definition, sd.status_mappings
        conditions = None
        if cd is not None and cd.path:
            # API-server defaults for the field names (the loader warns when they were missing).
            conditions = (
                cd.path,
                _field(cd.type_field_name, "type"),
                _field(cd.status_field_name, "status"),
                _field(cd.message_field_name, "message"),
                _field(cd.reason_field_name, "reason"),
            )
        plan = []
        for status in EVALUATION_ORDER:  # the reference's order, whatever the definition's
            key = status[0].lower() + status[1:]
            matchers = getattr(mappings, key) if mappings is not None else None
            if matchers:
                plan.append((status, key, tuple(_matcher(m) for m in matchers)))
        return cls(pd.path if pd is not None and pd.path else None, conditions, tuple(plan))


def _field(name: str | None, default: str) -> str:
    return name if name is not None else default


def _matcher(m: StatusMatcher) -> _Matcher:
    conds = tuple((w.type or "", w.status or "", w.reason or "") for w in m.by_conditions or [])
    be = m.by_expression
    if be is not None and be.expression:
        return (m.by_phase or None, conds, be.expression, be.expected_result or "")
    return (m.by_phase or None, conds, None, "")


# Plans by id(definition); each entry holds its definition, so that id is not reused while it is
# cached.  Definitions sent in requests can be megabytes: bounded by the bytes they hold too.
_plans: Memo[int, tuple[StatusDefinition, _Plan]] = Memo(maxsize=1024, max_bytes=64 * 1024 * 1024)


def _plan(sd: StatusDefinition) -> _Plan:
    hit = _plans.get(id(sd))
    if hit is not None:
        return hit[1]
    size = len(sd.model_dump_json(by_alias=True)) * DEFINITION_FACTOR
    return _plans.put(id(sd), (sd, _Plan.of(sd)), size)[1]


def evaluate_status(sd: StatusDefinition, results: dict[str, Result], path: str) -> StatusResult:
    plan = _plan(sd)
    phase: str | None = None
    if plan.phase_path is not None:
        r = results[plan.phase_path]
        if not r.ok:
            raise ExtractionError(r.error or "", f"{path}.phaseDefinition.path", plan.phase_path)
        if r.values:
            v = r.values[0]
            if v is None:
                phase = ""  # a null phase is a non-nil empty string: no byPhase matches it
            elif isinstance(v, str):
                phase = v
            else:
                raise ExtractionError(
                    "failed to extract phase: failed to convert object at index 0 to type string: json: cannot "
                    f"unmarshal {go_json_type(v)} into Go value of type string",
                    f"{path}.phaseDefinition.path",
                    plan.phase_path,
                )
    conditions = _conditions(plan.conditions, results, path) if plan.conditions is not None else []
    by_type = {c.type: c for c in conditions}  # a later duplicate type wins

    matched: list[str] = []
    for status, key, matchers in plan.mappings:
        for i, m in enumerate(matchers):
            if _matches(m, phase, by_type, results, path, key, i):
                matched.append(status)
                break
    return StatusResult(matched or [UNDEFINED], phase, conditions)


def _str(raw: dict[str, Any], name: str) -> str | None:
    x = raw.get(name) if name else None
    return x if isinstance(x, str) else None


def _conditions(spec: tuple[str, str, str, str, str], results: dict[str, Result], path: str) -> list[Condition]:
    expr, tf, sf, mf, rf = spec
    r = results[expr]
    if not r.ok:
        raise ExtractionError(r.error or "", f"{path}.conditionsDefinition.path", expr)
    out: list[Condition] = []
    for i, v in enumerate(r.values or []):
        if v is None:
            continue  # a null array is an empty list
        # Each output must be an array of objects; a null element decodes to an empty one.
        bad = None if isinstance(v, list) else v
        if bad is None:
            bad = next((x for x in v if x is not None and not isinstance(x, dict)), None)
        if bad is not None:
            what = "[]map[string]interface {}" if not isinstance(v, list) else "map[string]interface {}"
            raise ExtractionError(
                f"failed to extract conditions: failed to convert object at index {i} to type "
                f"[]map[string]interface {{}}: json: cannot unmarshal {go_json_type(bad)} into Go value of type {what}",
                f"{path}.conditionsDefinition.path",
                expr,
            )
        for raw in v:
            raw = raw or {}
            out.append(
                Condition(
                    _str(raw, tf) or "",
                    _str(raw, sf),
                    _str(raw, rf) if rf else None,
                    (_str(raw, mf) or "") if mf else "",
                )
            )
    return out


def _matches(
    m: _Matcher,
    phase: str | None,
    by_type: dict[str, Condition],
    results: dict[str, Result],
    path: str,
    key: str,
    i: int,
) -> bool:
    """Whether matcher i of statusMappings.<key> matches (path, key and i locate its error)."""
    by_phase, by_conditions, expr, expected = m
    if by_phase is not None and phase != by_phase:
        return False
    for type_, status, reason in by_conditions:
        got = by_type.get(type_)
        if got is None:
            return False
        if status and (got.status or "") != status:
            return False
        if reason and (got.reason or "") != reason:
            return False
    if expr is not None:
        r = results[expr]
        if not r.ok:
            raise ExtractionError(
                f"failed to match status: failed to evaluate matcher: failed to evaluate ByExpression: {r.error}",
                f"{path}.statusMappings.{key}[{i}].byExpression.expression",
                expr,
            )
        if not r.values:
            return False
        return gojq_tostring(r.values[0]) == expected
    return True
