"""The Karta definition format (`run.ai/v1alpha1`, kind `Karta`) as typed models.

Every field is optional here on purpose: required-ness is checked by `schema.py` so that a
definition with a missing key still yields *all* findings instead of one pydantic error.
Unknown keys are kept (``extra="allow"``) so the loader can warn about them; the reference
(Go decoding, API-server pruning) silently drops them, which hides typos such as ``ownerName``.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict
from pydantic.alias_generators import to_camel

API_VERSION = "run.ai/v1alpha1"
KIND = "Karta"


class _Model(BaseModel):
    model_config = ConfigDict(extra="allow", populate_by_name=True, alias_generator=to_camel, frozen=True, strict=True)


class GVK(_Model):
    group: str | None = None
    version: str | None = None
    kind: str | None = None

    def key(self) -> tuple[str, str, str]:
        return (self.group or "", self.version or "", self.kind or "")

    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else (self.version or "")

    def __str__(self) -> str:  # group/version/Kind, core as version/Kind
        return f"{self.group}/{self.version}/{self.kind}" if self.group else f"{self.version}/{self.kind}"


class FragmentedPodSpecDefinition(_Model):
    scheduler_name_path: str | None = None
    labels_path: str | None = None
    annotations_path: str | None = None
    resources_path: str | None = None
    resource_claims_path: str | None = None
    pod_affinity_path: str | None = None
    node_affinity_path: str | None = None
    containers_path: str | None = None
    container_path: str | None = None
    priority_class_name_path: str | None = None
    image_path: str | None = None
    # This project's own (docs/karta-format.md, "Choices this project makes"): where a CR keeps
    # its pods' node selector and tolerations (Spark's driver/executor, for one).
    node_selector_path: str | None = None
    tolerations_path: str | None = None


# Field name (python) -> Go field name, in Go struct order, then this project's own fields;
# also the fragment result keys.
FRAGMENT_FIELDS: list[tuple[str, str, str]] = [
    ("scheduler_name_path", "SchedulerNamePath", "schedulerName"),
    ("labels_path", "LabelsPath", "labels"),
    ("annotations_path", "AnnotationsPath", "annotations"),
    ("resources_path", "ResourcesPath", "resources"),
    ("resource_claims_path", "ResourceClaimsPath", "resourceClaims"),
    ("pod_affinity_path", "PodAffinityPath", "podAffinity"),
    ("node_affinity_path", "NodeAffinityPath", "nodeAffinity"),
    ("containers_path", "ContainersPath", "containers"),
    ("container_path", "ContainerPath", "container"),
    ("priority_class_name_path", "PriorityClassNamePath", "priorityClassName"),
    ("image_path", "ImagePath", "image"),
    ("node_selector_path", "NodeSelectorPath", "nodeSelector"),
    ("tolerations_path", "TolerationsPath", "tolerations"),
]


class SpecDefinition(_Model):
    pod_template_spec_path: str | None = None
    pod_spec_path: str | None = None
    metadata_path: str | None = None
    fragmented_pod_spec_definition: FragmentedPodSpecDefinition | None = None

    def pod_forms(self) -> int:
        """How many of the three mutually exclusive pod forms are present (presence counts)."""
        return sum(
            x is not None
            for x in (self.pod_template_spec_path, self.pod_spec_path, self.fragmented_pod_spec_definition)
        )


class ScaleDefinition(_Model):
    replicas_path: str | None = None
    min_replicas_path: str | None = None
    max_replicas_path: str | None = None


class PhaseDefinition(_Model):
    path: str | None = None


class ConditionsDefinition(_Model):
    path: str | None = None
    type_field_name: str | None = None
    status_field_name: str | None = None
    message_field_name: str | None = None
    reason_field_name: str | None = None


class ExpectedCondition(_Model):
    type: str | None = None
    status: str | None = None
    reason: str | None = None


class ByExpression(_Model):
    expression: str | None = None
    expected_result: str | None = None


class StatusMatcher(_Model):
    by_phase: str | None = None
    by_conditions: list[ExpectedCondition] | None = None
    by_expression: ByExpression | None = None


# Mapping key, Go field name, reported value: in the Go struct order (validation walk order).
STATUS_KEYS: list[tuple[str, str, str]] = [
    ("initializing", "Initializing", "Initializing"),
    ("running", "Running", "Running"),
    ("completed", "Completed", "Completed"),
    ("failed", "Failed", "Failed"),
    ("degraded", "Degraded", "Degraded"),
    ("suspended", "Suspended", "Suspended"),
    ("suspending", "Suspending", "Suspending"),
    ("resuming", "Resuming", "Resuming"),
]


class StatusMappings(_Model):
    initializing: list[StatusMatcher] | None = None
    running: list[StatusMatcher] | None = None
    completed: list[StatusMatcher] | None = None
    failed: list[StatusMatcher] | None = None
    degraded: list[StatusMatcher] | None = None
    suspended: list[StatusMatcher] | None = None
    suspending: list[StatusMatcher] | None = None
    resuming: list[StatusMatcher] | None = None


class StatusDefinition(_Model):
    phase_definition: PhaseDefinition | None = None
    conditions_definition: ConditionsDefinition | None = None
    status_mappings: StatusMappings | None = None


class Action(_Model):
    path: str | None = None
    value: str | None = None


class SuspendDefinition(_Model):
    suspend_actions: list[Action] | None = None
    resume_actions: list[Action] | None = None


class ComponentTypeSelector(_Model):
    key_path: str | None = None
    value: str | None = None
    match_labels: dict[str, str] | None = None


class ComponentInstanceSelector(_Model):
    id_path: str | None = None


class ReplicaSelector(_Model):
    key_path: str | None = None


class PodSelector(_Model):
    component_type_selector: ComponentTypeSelector | None = None
    component_instance_selector: ComponentInstanceSelector | None = None
    replica_selector: ReplicaSelector | None = None


class ComponentDefinition(_Model):
    name: str | None = None
    kind: GVK | None = None
    owner_ref: str | None = None
    spec_definition: SpecDefinition | None = None
    scale_definition: ScaleDefinition | None = None
    status_definition: StatusDefinition | None = None
    suspend_definition: SuspendDefinition | None = None
    instance_id_path: str | None = None
    pod_selector: PodSelector | None = None

    @property
    def pod_bearing(self) -> bool:
        return self.spec_definition is not None and self.spec_definition.pod_forms() > 0


class Topology(_Model):
    topology_name: str | None = None
    preferred_topology_level: str | None = None
    required_topology_level: str | None = None


class PodGroupMember(_Model):
    component_name: str | None = None
    group_by_key_paths: list[str] | None = None
    filters: list[str] | None = None


class PodGroupAlpha(_Model):
    name: str | None = None
    members: list[PodGroupMember] | None = None


class SubGroup(_Model):
    component_name: str | None = None
    topology: Topology | None = None


class PodGroupV2(_Model):
    name: str | None = None
    topology: Topology | None = None
    sub_groups: list[SubGroup] | None = None


class GangScheduling(_Model):
    pod_groups: list[PodGroupAlpha] | None = None
    pod_group: PodGroupV2 | None = None


class OptimizationInstructions(_Model):
    gang_scheduling: GangScheduling | None = None


class StructureDefinition(_Model):
    root_component: ComponentDefinition | None = None
    child_components: list[ComponentDefinition] | None = None
    additional_child_kinds: list[GVK] | None = None


class KartaSpec(_Model):
    structure_definition: StructureDefinition | None = None
    optimization_instructions: OptimizationInstructions | None = None


class Metadata(BaseModel):
    model_config = ConfigDict(extra="allow", frozen=True)
    name: str | None = None
    labels: dict[str, str] | None = None
    annotations: dict[str, str] | None = None


class Karta(_Model):
    api_version: str | None = None
    kind: str | None = None
    metadata: Metadata | None = None
    spec: KartaSpec | None = None
    status: dict[str, Any] | None = None

    # -- convenience views -------------------------------------------------------------
    @property
    def name(self) -> str:
        return (self.metadata.name if self.metadata else None) or ""

    @property
    def root(self) -> ComponentDefinition | None:
        sd = self.spec.structure_definition if self.spec else None
        return sd.root_component if sd else None

    @property
    def children(self) -> list[ComponentDefinition]:
        sd = self.spec.structure_definition if self.spec else None
        return list(sd.child_components or []) if sd else []

    @property
    def components(self) -> list[ComponentDefinition]:
        """Root first, then children in definition order (the reference's leaf order)."""
        return ([self.root] if self.root else []) + self.children

    @property
    def gang(self) -> GangScheduling | None:
        oi = self.spec.optimization_instructions if self.spec else None
        return oi.gang_scheduling if oi else None

    @property
    def root_gvk(self) -> GVK | None:
        return self.root.kind if self.root else None


def conventional_name(gvk: GVK) -> str:
    """`<group with dots as dashes | core>-<kind lower>-<version>` (upstream naming convention)."""
    group = (gvk.group or "core").replace(".", "-")
    return f"{group}-{(gvk.kind or '').lower()}-{gvk.version or ''}"
