"""Authoring warnings: things the reference accepts silently but that are almost always mistakes,
and jq that behaves differently under gojq (the upstream engine) than under libjq (ours)."""

from __future__ import annotations

from ..jqlang import JqParseError, parse
from ..jqlang.lint import gojq_compat_warnings
from ..jqlang.safety import blacklist_violations
from .expressions import iter_expressions
from .findings import Finding
from .model import STATUS_KEYS, Karta
from .schema import unknown_field_warnings


def _w(path: str, msg: str) -> Finding:
    return Finding(path, msg, "warning")


def lint_findings(k: Karta) -> list[Finding]:
    out = unknown_field_warnings(k)
    names = {c.name for c in k.components}
    base = "spec.structureDefinition"
    for i, c in enumerate(k.components):
        p = f"{base}.rootComponent" if i == 0 else f"{base}.childComponents[{i - 1}]"
        if i > 0 and c.kind is not None and not (c.kind.version and c.kind.kind):
            out.append(_w(f"{p}.kind", f"component '{c.name}' has an incomplete kind"))
        sd = c.spec_definition
        if sd is not None and sd.metadata_path and not sd.pod_spec_path:
            out.append(
                _w(
                    f"{p}.specDefinition.metadataPath",
                    f"component '{c.name}': metadataPath is meant to be used together with podSpecPath",
                )
            )
        sc = c.scale_definition
        if sc is not None and not (sc.replicas_path or sc.min_replicas_path or sc.max_replicas_path):
            out.append(
                _w(
                    f"{p}.scaleDefinition",
                    f"component '{c.name}' has an empty scaleDefinition: it yields no scale and fails "
                    "the instance zip; omit it or set replicasPath",
                )
            )
        st = c.status_definition
        if st is None or st.status_mappings is None:
            continue
        cd = st.conditions_definition
        if cd is not None:
            missing = [
                n
                for n, v in (
                    ("typeFieldName", cd.type_field_name),
                    ("statusFieldName", cd.status_field_name),
                    ("messageFieldName", cd.message_field_name),
                    ("reasonFieldName", cd.reason_field_name),
                )
                if v is None
            ]
            if missing:
                out.append(
                    _w(
                        f"{p}.statusDefinition.conditionsDefinition",
                        f"component '{c.name}': {', '.join(missing)} not set; using the API-server defaults "
                        "(type, status, message, reason). The reference CLI reading this file would not "
                        "apply them",
                    )
                )
        for key, _go, _ in STATUS_KEYS:
            for j, m in enumerate(getattr(st.status_mappings, key) or []):
                mp = f"{p}.statusDefinition.statusMappings.{key}[{j}]"
                if m.by_phase and st.phase_definition is None:
                    out.append(
                        _w(
                            mp,
                            f"component '{c.name}': byPhase is used but there is no phaseDefinition, "
                            "so it never matches",
                        )
                    )
                if m.by_conditions and cd is None:
                    out.append(
                        _w(
                            mp,
                            f"component '{c.name}': byConditions is used but there is no "
                            "conditionsDefinition, so it never matches",
                        )
                    )
    gang = k.gang
    if gang is not None and gang.pod_group is not None:
        if gang.pod_groups:
            out.append(
                _w(
                    "spec.optimizationInstructions.gangScheduling.podGroups",
                    "both podGroup and the deprecated podGroups are set; podGroup takes precedence",
                )
            )
        by_name = {c.name: c for c in k.components}
        for i, sg in enumerate(gang.pod_group.sub_groups or []):
            sp = f"spec.optimizationInstructions.gangScheduling.podGroup.subGroups[{i}].componentName"
            if sg.component_name not in names:
                out.append(
                    _w(
                        sp,
                        f"subgroup component '{sg.component_name}' is not defined; KAI will fail to size this subgroup",
                    )
                )
            elif not _has_scale_below(by_name, sg.component_name, k):
                out.append(
                    _w(
                        sp,
                        f"subgroup component '{sg.component_name}' has no scaleDefinition in its "
                        "subtree; its minimum may be 0, which KAI rejects",
                    )
                )
    elif gang is not None and gang.pod_groups:
        out.append(
            _w(
                "spec.optimizationInstructions.gangScheduling.podGroups",
                "podGroups is deprecated upstream; prefer podGroup with subGroups",
            )
        )
    for e in iter_expressions(k):
        try:
            ast = parse(e.text)
        except JqParseError:
            continue  # reported as an error by the validator
        for msg in gojq_compat_warnings(ast, e.text):
            out.append(_w(e.json_path, msg))
        if not blacklist_violations(ast):
            strict = blacklist_violations(ast, strict=True)
            if strict:
                out.append(
                    _w(
                        e.json_path,
                        f"{strict[0]} (hidden where the reference checker does not look; it would still run)",
                    )
                )
    return out


def _has_scale_below(by_name: dict, name: str | None, k: Karta) -> bool:
    todo = [name]
    while todo:
        n = todo.pop()
        c = by_name.get(n)
        if c is not None and c.scale_definition is not None:
            return True
        todo += [ch.name for ch in k.children if ch.owner_ref == n]
    return False
