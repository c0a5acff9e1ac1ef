"""Every jq expression a definition holds, with where it lives and what it runs against.

The order is the Go struct order the reference validator walks, so findings come out in the
same order; the Go field path (`Spec.StructureDefinition.ChildComponents[0].InstanceIdPath`) is
what reference error texts quote, the JSON path is what our API reports.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from .model import FRAGMENT_FIELDS, STATUS_KEYS, ComponentDefinition, Karta

Side = Literal["workload", "pod"]


@dataclass(frozen=True)
class Expr:
    go_path: str
    json_path: str
    text: str
    side: Side


def _component(c: ComponentDefinition, go: str, js: str) -> list[Expr]:
    out: list[Expr] = []

    def add(go_suffix: str, js_suffix: str, text: str | None, side: Side = "workload") -> None:
        if text:  # the reference skips empty expressions
            out.append(Expr(f"{go}.{go_suffix}", f"{js}.{js_suffix}", text, side))

    sd = c.spec_definition
    if sd is not None:
        add("SpecDefinition.PodTemplateSpecPath", "specDefinition.podTemplateSpecPath", sd.pod_template_spec_path)
        add("SpecDefinition.PodSpecPath", "specDefinition.podSpecPath", sd.pod_spec_path)
        add("SpecDefinition.MetadataPath", "specDefinition.metadataPath", sd.metadata_path)
        frag = sd.fragmented_pod_spec_definition
        if frag is not None:
            for attr, go_name, _ in FRAGMENT_FIELDS:
                js_name = go_name[0].lower() + go_name[1:]
                add(
                    f"SpecDefinition.FragmentedPodSpecDefinition.{go_name}",
                    f"specDefinition.fragmentedPodSpecDefinition.{js_name}",
                    getattr(frag, attr),
                )
    sc = c.scale_definition
    if sc is not None:
        add("ScaleDefinition.ReplicasPath", "scaleDefinition.replicasPath", sc.replicas_path)
        add("ScaleDefinition.MinReplicasPath", "scaleDefinition.minReplicasPath", sc.min_replicas_path)
        add("ScaleDefinition.MaxReplicasPath", "scaleDefinition.maxReplicasPath", sc.max_replicas_path)
    st = c.status_definition
    if st is not None:
        if st.phase_definition is not None:
            add(
                "StatusDefinition.PhaseDefinition.Path",
                "statusDefinition.phaseDefinition.path",
                st.phase_definition.path,
            )
        if st.conditions_definition is not None:
            add(
                "StatusDefinition.ConditionsDefinition.Path",
                "statusDefinition.conditionsDefinition.path",
                st.conditions_definition.path,
            )
        if st.status_mappings is not None:
            for key, go_name, _ in STATUS_KEYS:
                for i, m in enumerate(getattr(st.status_mappings, key) or []):
                    if m.by_expression is not None:
                        add(
                            f"StatusDefinition.StatusMappings.{go_name}[{i}].ByExpression.Expression",
                            f"statusDefinition.statusMappings.{key}[{i}].byExpression.expression",
                            m.by_expression.expression,
                        )
    su = c.suspend_definition
    if su is not None:
        for go_name, js_name, actions in (
            ("SuspendActions", "suspendActions", su.suspend_actions),
            ("ResumeActions", "resumeActions", su.resume_actions),
        ):
            for i, a in enumerate(actions or []):
                add(f"SuspendDefinition.{go_name}[{i}].Path", f"suspendDefinition.{js_name}[{i}].path", a.path)
    add("InstanceIdPath", "instanceIdPath", c.instance_id_path)
    ps = c.pod_selector
    if ps is not None:
        if ps.component_type_selector is not None:
            add(
                "PodSelector.ComponentTypeSelector.KeyPath",
                "podSelector.componentTypeSelector.keyPath",
                ps.component_type_selector.key_path,
                "pod",
            )
        if ps.component_instance_selector is not None:
            add(
                "PodSelector.ComponentInstanceSelector.IdPath",
                "podSelector.componentInstanceSelector.idPath",
                ps.component_instance_selector.id_path,
                "pod",
            )
        if ps.replica_selector is not None:
            add(
                "PodSelector.ReplicaSelector.KeyPath",
                "podSelector.replicaSelector.keyPath",
                ps.replica_selector.key_path,
                "pod",
            )
    return out


def iter_expressions(k: Karta) -> list[Expr]:
    out: list[Expr] = []
    sd = k.spec.structure_definition if k.spec else None
    if sd is not None:
        if sd.root_component is not None:
            out += _component(
                sd.root_component, "Spec.StructureDefinition.RootComponent", "spec.structureDefinition.rootComponent"
            )
        for i, c in enumerate(sd.child_components or []):
            out += _component(
                c, f"Spec.StructureDefinition.ChildComponents[{i}]", f"spec.structureDefinition.childComponents[{i}]"
            )
    gang = k.gang
    if gang is not None:
        for i, pg in enumerate(gang.pod_groups or []):
            for j, m in enumerate(pg.members or []):
                go = f"Spec.Instructions.GangScheduling.PodGroups[{i}].Members[{j}]"
                js = f"spec.optimizationInstructions.gangScheduling.podGroups[{i}].members[{j}]"
                for n, p in enumerate(m.group_by_key_paths or []):
                    if p:
                        out.append(Expr(f"{go}.GroupByKeyPaths[{n}]", f"{js}.groupByKeyPaths[{n}]", p, "pod"))
                for n, p in enumerate(m.filters or []):
                    if p:
                        out.append(Expr(f"{go}.Filters[{n}]", f"{js}.filters[{n}]", p, "pod"))
    return out
