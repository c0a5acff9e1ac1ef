"""Status normalisation, exactly as the reference matches it, plus one primary phase.

Matchers: phase, then conditions, then expression, short-circuited; matchers under one status
are ORed in order; statuses are reported in the fixed evaluation order; nothing matched means
exactly ["Undefined"].  An error in a matcher that is actually reached fails the whole status
(results for unreached expressions are computed by the batch but ignored, as never evaluated).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..karta.model import StatusDefinition, StatusMatcher
from .instances import ExtractionError
from .jqbatch import Result
from .values import go_json_type, gojq_tostring

EVALUATION_ORDER = ["Resuming", "Suspending", "Suspended", "Running", "Failed", "Completed", "Initializing",
                    "Degraded"]
PRECEDENCE = ["Resuming", "Suspending", "Suspended", "Failed", "Completed", "Degraded", "Running", "Initializing",
              "Undefined"]
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


def _first(results: dict[str, Result], expr: str, path: str) -> tuple[bool, Any]:
    r = results[expr]
    if not r.ok:
        raise ExtractionError(r.error or "", path, expr)
    return (True, r.values[0]) if r.values else (False, None)


def evaluate_status(sd: StatusDefinition, results: dict[str, Result], path: str) -> StatusResult:
    phase: str | None = None
    if sd.phase_definition is not None and sd.phase_definition.path:
        p = f"{path}.phaseDefinition.path"
        has, v = _first(results, sd.phase_definition.path, p)
        if has:
            if v is None:
                phase = ""  # a null phase is a non-nil empty string: no byPhase matches it
            elif isinstance(v, str):
                phase = v
            else:
                raise ExtractionError(
                    "failed to extract phase: failed to convert object at index 0 to type string: json: cannot "
                    f"unmarshal {go_json_type(v)} into Go value of type string", p, sd.phase_definition.path)
    conditions = _conditions(sd, results, path)
    by_type = {c.type: c for c in conditions}  # a later duplicate type wins

    matched: list[str] = []
    mappings = sd.status_mappings
    for status in EVALUATION_ORDER:
        key = status[0].lower() + status[1:]
        matchers = getattr(mappings, key) if mappings is not None else None
        for i, m in enumerate(matchers or []):
            if _matches(m, phase, by_type, results, f"{path}.statusMappings.{key}[{i}]"):
                matched.append(status)
                break
    return StatusResult(matched or [UNDEFINED], phase, conditions)


def _conditions(sd: StatusDefinition, results: dict[str, Result], path: str) -> list[Condition]:
    cd = sd.conditions_definition
    if cd is None or not cd.path:
        return []
    p = f"{path}.conditionsDefinition.path"
    r = results[cd.path]
    if not r.ok:
        raise ExtractionError(r.error or "", p, cd.path)
    # API-server defaults for the field names (the loader warns when they were missing).
    tf = cd.type_field_name if cd.type_field_name is not None else "type"
    sf = cd.status_field_name if cd.status_field_name is not None else "status"
    mf = cd.message_field_name if cd.message_field_name is not None else "message"
    rf = cd.reason_field_name if cd.reason_field_name is not None else "reason"
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
                p, cd.path)
        for raw in v:
            raw = raw or {}

            def s(name: str) -> str | None:
                x = raw.get(name) if name else None
                return x if isinstance(x, str) else None

            out.append(Condition(s(tf) or "", s(sf), s(rf) if rf else None, (s(mf) or "") if mf else ""))
    return out


def _matches(m: StatusMatcher, phase: str | None, by_type: dict[str, Condition], results: dict[str, Result],
             path: str) -> bool:
    if m.by_phase:
        if phase is None or phase != m.by_phase:
            return False
    for want in m.by_conditions or []:
        got = by_type.get(want.type or "")
        if got is None:
            return False
        if want.status and (got.status or "") != want.status:
            return False
        if want.reason and (got.reason or "") != want.reason:
            return False
    be = m.by_expression
    if be is not None and be.expression:
        r = results[be.expression]
        if not r.ok:
            raise ExtractionError(
                f"failed to match status: failed to evaluate matcher: failed to evaluate ByExpression: {r.error}",
                f"{path}.byExpression.expression", be.expression)
        if not r.values:
            return False
        return gojq_tostring(r.values[0]) == (be.expected_result or "")
    return True
