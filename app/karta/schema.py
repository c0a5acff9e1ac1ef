"""CRD-level (API-server) checks: required keys, list-map keys, CEL rules, defaults.

The reference relies on the API server for these; a definition loaded from a file never meets
one, so we run the same rules ourselves and word them like the API server does
(`<path>: Required value`, `<path>: Duplicate value: ...`).  Unknown keys become warnings.
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Iterable

from pydantic import BaseModel

from .findings import Finding
from .model import (
    GVK,
    STATUS_KEYS,
    ComponentDefinition,
    ComponentTypeSelector,
    Karta,
    StatusDefinition,
    SuspendDefinition,
    Topology,
)


def _req(findings: list[Finding], path: str, value: object) -> None:
    if value is None:
        findings.append(Finding(path, f"{path}: Required value"))


def _dupes(findings: list[Finding], path: str, items: Iterable[object], key: str) -> None:
    seen: set[str] = set()
    for i, value in enumerate(items):
        if value is None:
            continue
        token = json.dumps(value)
        if token in seen:
            findings.append(Finding(f"{path}[{i}]", f'{path}[{i}]: Duplicate value: {{"{key}":{token}}}'))
        seen.add(token)


def _gvk(findings: list[Finding], path: str, gvk: GVK | None) -> None:
    if gvk is None:
        return
    for field in ("group", "version", "kind"):
        _req(findings, f"{path}.{field}", getattr(gvk, field))


def _topology(findings: list[Finding], path: str, topo: Topology | None) -> None:
    if topo is None:
        return
    _req(findings, f"{path}.topologyName", topo.topology_name)
    _req(findings, f"{path}.preferredTopologyLevel", topo.preferred_topology_level)
    _req(findings, f"{path}.requiredTopologyLevel", topo.required_topology_level)


def _type_selector(findings: list[Finding], path: str, sel: ComponentTypeSelector | None) -> None:
    if sel is None:
        return
    # CEL rules of the CRD, with the CRD's own messages.
    if sel.key_path is None and sel.match_labels is None:
        findings.append(
            Finding(path, f'{path}: Invalid value: "object": at least one of keyPath or matchLabels must be set')
        )
    if sel.value is not None and sel.key_path is None:
        findings.append(Finding(path, f'{path}: Invalid value: "object": value requires keyPath'))
    if sel.key_path is not None and len(sel.key_path) < 1:
        findings.append(
            Finding(
                f"{path}.keyPath",
                f'{path}.keyPath: Invalid value: "": spec.keyPath in body should be at least 1 chars long',
            )
        )
    if sel.match_labels is not None and len(sel.match_labels) < 1:
        findings.append(
            Finding(
                f"{path}.matchLabels",
                f"{path}.matchLabels: Invalid value: 0: spec.matchLabels in body should have at least 1 properties",
            )
        )


def _status(findings: list[Finding], path: str, sd: StatusDefinition | None) -> None:
    if sd is None:
        return
    if sd.phase_definition is not None:
        _req(findings, f"{path}.phaseDefinition.path", sd.phase_definition.path)
    if sd.conditions_definition is not None:
        _req(findings, f"{path}.conditionsDefinition.path", sd.conditions_definition.path)
    _req(findings, f"{path}.statusMappings", sd.status_mappings)
    if sd.status_mappings is None:
        return
    for key, _go, _value in STATUS_KEYS:
        for i, m in enumerate(getattr(sd.status_mappings, key) or []):
            mp = f"{path}.statusMappings.{key}[{i}]"
            for j, cond in enumerate(m.by_conditions or []):
                _req(findings, f"{mp}.byConditions[{j}].type", cond.type)
            if m.by_expression is not None:
                _req(findings, f"{mp}.byExpression.expression", m.by_expression.expression)
                _req(findings, f"{mp}.byExpression.expectedResult", m.by_expression.expected_result)


def _suspend(findings: list[Finding], path: str, sd: SuspendDefinition | None) -> None:
    if sd is None:
        return
    for name, actions in (("suspendActions", sd.suspend_actions), ("resumeActions", sd.resume_actions)):
        _req(findings, f"{path}.{name}", actions)
        if actions is not None and len(actions) < 1:
            findings.append(
                Finding(
                    f"{path}.{name}", f"{path}.{name}: Invalid value: 0: {name} in body should have at least 1 items"
                )
            )
        for i, a in enumerate(actions or []):
            _req(findings, f"{path}.{name}[{i}].path", a.path)
            _req(findings, f"{path}.{name}[{i}].value", a.value)


def _component(findings: list[Finding], path: str, c: ComponentDefinition) -> None:
    _req(findings, f"{path}.name", c.name)
    _gvk(findings, f"{path}.kind", c.kind)
    _status(findings, f"{path}.statusDefinition", c.status_definition)
    _suspend(findings, f"{path}.suspendDefinition", c.suspend_definition)
    ps = c.pod_selector
    if ps is not None:
        _type_selector(findings, f"{path}.podSelector.componentTypeSelector", ps.component_type_selector)
        if ps.component_instance_selector is not None:
            _req(
                findings, f"{path}.podSelector.componentInstanceSelector.idPath", ps.component_instance_selector.id_path
            )
        if ps.replica_selector is not None:
            _req(findings, f"{path}.podSelector.replicaSelector.keyPath", ps.replica_selector.key_path)


def schema_findings(k: Karta) -> list[Finding]:
    """API-server-level errors for a parsed definition (see module docstring)."""
    f: list[Finding] = []
    _req(f, "spec", k.spec)
    if k.spec is None:
        return f
    sd = k.spec.structure_definition
    _req(f, "spec.structureDefinition", sd)
    if sd is not None:
        _req(f, "spec.structureDefinition.rootComponent", sd.root_component)
        if sd.root_component is not None:
            _component(f, "spec.structureDefinition.rootComponent", sd.root_component)
        base = "spec.structureDefinition.childComponents"
        for i, c in enumerate(sd.child_components or []):
            _component(f, f"{base}[{i}]", c)
        _dupes(f, base, [c.name for c in sd.child_components or []], "name")
        kinds = sd.additional_child_kinds or []
        for i, g in enumerate(kinds):
            _gvk(f, f"spec.structureDefinition.additionalChildKinds[{i}]", g)
        _dupes(f, "spec.structureDefinition.additionalChildKinds", [g.kind for g in kinds], "kind")
    gang = k.gang
    if gang is not None:
        gp = "spec.optimizationInstructions.gangScheduling"
        for i, pg in enumerate(gang.pod_groups or []):
            _req(f, f"{gp}.podGroups[{i}].name", pg.name)
            _req(f, f"{gp}.podGroups[{i}].members", pg.members)
            for j, m in enumerate(pg.members or []):
                mp = f"{gp}.podGroups[{i}].members[{j}]"
                _req(f, f"{mp}.componentName", m.component_name)
                _set(f, f"{mp}.groupByKeyPaths", m.group_by_key_paths)
                _set(f, f"{mp}.filters", m.filters)
            _dupes(f, f"{gp}.podGroups[{i}].members", [m.component_name for m in pg.members or []], "componentName")
        _dupes(f, f"{gp}.podGroups", [pg.name for pg in gang.pod_groups or []], "name")
        if gang.pod_group is not None:
            v2 = gang.pod_group
            _req(f, f"{gp}.podGroup.name", v2.name)
            _topology(f, f"{gp}.podGroup.topology", v2.topology)
            for i, sg in enumerate(v2.sub_groups or []):
                _req(f, f"{gp}.podGroup.subGroups[{i}].componentName", sg.component_name)
                _topology(f, f"{gp}.podGroup.subGroups[{i}].topology", sg.topology)
            _dupes(f, f"{gp}.podGroup.subGroups", [s.component_name for s in v2.sub_groups or []], "componentName")
    return f


def _set(findings: list[Finding], path: str, items: list[str] | None) -> None:
    seen: set[str] = set()
    for i, v in enumerate(items or []):
        if v in seen:
            findings.append(Finding(f"{path}[{i}]", f"{path}[{i}]: Duplicate value: {json.dumps(v)}"))
        seen.add(v)


# -- unknown keys --------------------------------------------------------------------------


def unknown_field_warnings(model: BaseModel, path: str = "") -> list[Finding]:
    """Warn about every key the format does not know (the reference silently drops them)."""
    out: list[Finding] = []
    known = [(info.alias or name) for name, info in type(model).model_fields.items()]
    for key in model.model_extra or {}:
        where = f"{path}.{key}" if path else key
        hint = difflib.get_close_matches(key, known, n=1, cutoff=0.6)
        suggestion = f'; did you mean "{hint[0]}"?' if hint else ""
        out.append(Finding(where, f'unknown field "{where}" is ignored{suggestion}', "warning"))
    for name, info in type(model).model_fields.items():
        if name in ("metadata", "status") and path == "":
            continue  # free-form Kubernetes metadata/status
        value = getattr(model, name)
        alias = info.alias or name
        sub = f"{path}.{alias}" if path else alias
        if isinstance(value, BaseModel):
            out.extend(unknown_field_warnings(value, sub))
        elif isinstance(value, list):
            for i, item in enumerate(value):
                if isinstance(item, BaseModel):
                    out.extend(unknown_field_warnings(item, f"{sub}[{i}]"))
    return out
