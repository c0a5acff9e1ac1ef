"""The reference semantic validator (Go `KartaValidator.Validate`), rule for rule.

Order, short-circuits and texts follow the reference: duplicates stop everything; structure
errors skip the cycle check; then gang members; then every jq expression (parse + blacklist).
All findings are reported, not only the first.  `validate_karta` adds what the reference leaves
to the API server (schema.py) and authoring warnings (lint.py).
"""

from __future__ import annotations

import re

from ..jqlang import JqParseError, parse
from ..jqlang.safety import blacklist_violations
from .expressions import iter_expressions
from .findings import Finding
from .model import ComponentDefinition, Karta

ROOT = "spec.structureDefinition.rootComponent"
CHILDREN = "spec.structureDefinition.childComponents"

# Kubernetes label syntax (apimachinery validation.IsQualifiedName / IsValidLabelValue).
_NAME_RE = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")
_DNS1123_SUB = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_NAME_MSG = (
    "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end "
    "with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for "
    "validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"
)
_VALUE_MSG = (
    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', "
    "and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or "
    "'12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"
)


def label_key_problems(key: str) -> list[str]:
    parts = key.split("/")
    if len(parts) == 1:
        name, prefix = parts[0], None
    elif len(parts) == 2:
        prefix, name = parts
    else:
        return [
            "a qualified name "
            + _NAME_MSG.replace("name part ", "", 1)
            + " with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"
        ]
    out = []
    if prefix is not None:
        if not prefix:
            out.append("prefix part must be non-empty")
        elif len(prefix) > 253 or not _DNS1123_SUB.match(prefix):
            out.append(
                "prefix part a lowercase RFC 1123 subdomain must consist of lower case alphanumeric "
                "characters, '-' or '.', and must start and end with an alphanumeric character"
            )
    if not name:
        out.append("name part must be non-empty")
    elif len(name) > 63:
        out.append("name part must be no more than 63 characters")
    elif not _NAME_RE.match(name):
        out.append(_NAME_MSG)
    return out


def label_value_problems(value: str) -> list[str]:
    out = []
    if len(value) > 63:
        out.append("must be no more than 63 characters")
    if value and not _NAME_RE.match(value):
        out.append(_VALUE_MSG)
    return out


def _component_checks(c: ComponentDefinition, path: str, out: list[Finding]) -> None:
    name = c.name or ""
    if not name:
        out.append(Finding(f"{path}.name", "component name is empty"))
    if c.spec_definition is not None and c.spec_definition.pod_forms() > 1:
        out.append(Finding(f"{path}.specDefinition", f"component '{name}' has multiple pod spec definitions"))
    ps = c.pod_selector
    has_instance_sel = ps is not None and ps.component_instance_selector is not None
    if c.instance_id_path and not has_instance_sel:
        out.append(
            Finding(
                f"{path}.instanceIdPath",
                f"component '{name}' has instance id path but no pod component instance selector",
            )
        )
    if has_instance_sel and not c.instance_id_path:
        out.append(
            Finding(
                f"{path}.podSelector.componentInstanceSelector",
                f"component '{name}' has pod component instance selector but no instance id path",
            )
        )
    sel = ps.component_type_selector if ps is not None else None
    if sel is None:
        return
    sp = f"{path}.podSelector.componentTypeSelector"
    if not sel.key_path and sel.match_labels is None:
        out.append(Finding(sp, f"component '{name}' componentTypeSelector has neither keyPath nor matchLabels"))
    if sel.match_labels is not None and len(sel.match_labels) == 0:
        out.append(Finding(f"{sp}.matchLabels", f"component '{name}' componentTypeSelector has empty matchLabels"))
    if sel.value is not None and not sel.key_path:
        out.append(Finding(f"{sp}.value", f"component '{name}' componentTypeSelector has value without keyPath"))
    # Stable sorted order for label problems, keys before values, as the newer validator does.
    match_labels = sel.match_labels or {}
    for key in sorted(match_labels):
        fp = f"{sp}.matchLabels"
        for msg in label_key_problems(key):
            out.append(Finding(fp, f'{fp}: Invalid value: "{key}": {msg}'))
        for msg in label_value_problems(match_labels[key]):
            out.append(Finding(f"{fp}[{key}]", f'{fp}[{key}]: Invalid value: "{match_labels[key]}": {msg}'))


def reference_findings(k: Karta | None) -> list[Finding]:
    """The semantic validator, exactly; every error in the order the reference emits them."""
    if k is None:
        return [Finding("", "karta is nil")]
    root = k.root
    children = k.children
    out: list[Finding] = []

    # 1. Initialize: unique names over children plus root; duplicates stop everything.
    names: dict[str, ComponentDefinition] = {}
    for i, c in enumerate(children + ([root] if root else [])):
        n = c.name or ""
        if n in names:
            p = f"{CHILDREN}[{i}].name" if i < len(children) else f"{ROOT}.name"
            out.append(Finding(p, f"component name {n} is not unique"))
        names[n] = c
    if out:
        return out

    # 2. Structure.
    structure: list[Finding] = []
    if root is not None:
        gvk = root.kind
        if gvk is None or not gvk.version or not gvk.kind or (not gvk.group and gvk.kind != "Pod"):
            structure.append(Finding(f"{ROOT}.kind", "root component must have full kind (group, version, kind)"))
        if root.owner_ref is not None:
            structure.append(Finding(f"{ROOT}.ownerRef", "root component cannot have owner ref"))
        if root.status_definition is None:
            structure.append(Finding(f"{ROOT}.statusDefinition", "root component must have status definition"))
        _component_checks(root, ROOT, structure)
    for i, c in enumerate(children):
        p = f"{CHILDREN}[{i}]"
        if not c.owner_ref:
            structure.append(Finding(f"{p}.ownerRef", f"child component '{c.name or ''}' has no owner ref"))
        elif c.owner_ref not in names:
            structure.append(
                Finding(
                    f"{p}.ownerRef",
                    f"child component '{c.name or ''}' has owner ref to non-existing component '{c.owner_ref}'",
                )
            )
        _component_checks(c, p, structure)
    out += structure

    # 3. Cycles, only on a structurally sound tree; one cycle error at most.
    if not structure and root is not None:
        cycle = _find_cycle(children, names, root.name or "")
        if cycle is not None:
            out.append(Finding(CHILDREN, f"ownership cycle detected involving component {cycle}"))

    # 4. Instructions: alpha members must name a component (v2 subGroups are not checked).
    gang = k.gang
    for i, pg in enumerate((gang.pod_groups or []) if gang else []):
        for j, m in enumerate(pg.members or []):
            if (m.component_name or "") not in names:
                out.append(
                    Finding(
                        f"spec.optimizationInstructions.gangScheduling.podGroups[{i}].members[{j}].componentName",
                        f"pod-group member component '{m.component_name or ''}' is not defined"
                        " (should be a root or child component)",
                    )
                )

    # 5. jq: parse, then the blacklist (first violation per expression).
    for e in iter_expressions(k):
        try:
            ast = parse(e.text)
        except JqParseError as err:
            out.append(Finding(e.json_path, f"failed to parse JQ expression '{e.text}' at '{e.go_path}': {err}"))
            continue
        bad = blacklist_violations(ast)
        if bad:
            out.append(Finding(e.json_path, f"JQ expression '{e.text}' at '{e.go_path}' failed validation: {bad[0]}"))
    return out


def _find_cycle(children: list[ComponentDefinition], names: dict[str, ComponentDefinition], root: str) -> str | None:
    for c in children:
        seen: set[str] = set()
        cur = c.name or ""
        while cur != root:
            if cur in seen:
                return cur
            seen.add(cur)
            nxt = names.get(cur)
            if nxt is None or nxt.owner_ref is None:
                break
            cur = nxt.owner_ref
    return None


def reference_text(findings: list[Finding]) -> str:
    """The reference's joined error (Go errors.Join: newline separated)."""
    return "\n".join(f.message for f in findings if f.level == "error")
