"""Validation of definitions: docs/karta-format.md "Validation" (reference validator, jq parse + blacklist,
schema-level rules) and the authoring warnings this project adds on top."""

from __future__ import annotations

import pytest

from ..karta_kit import child, errors, karta, load, root, status_def, warnings
from app.karta.validate import reference_findings, reference_text

ROOT_GO = "Spec.StructureDefinition.RootComponent"
CHILD0_GO = "Spec.StructureDefinition.ChildComponents[0]"


def ref(doc: dict) -> list[str]:
    """Exactly what the reference validator reports, in its order."""
    return [f.message for f in reference_findings(load(doc).karta) if f.level == "error"]


def with_phase(expr: str) -> dict:
    return karta(root(statusDefinition=status_def(phase=expr)))


# -- a valid baseline ----------------------------------------------------------------------

def test_minimal_definition_is_valid_without_findings():
    d = load(karta())
    assert d.valid
    assert d.findings == []


def test_karta_is_nil():
    assert [f.message for f in reference_findings(None)] == ["karta is nil"]


# -- 1. duplicates -------------------------------------------------------------------------

def test_duplicate_child_names():
    assert ref(karta(children=[child("a"), child("a")])) == ["component name a is not unique"]


def test_child_named_like_root_is_a_duplicate():
    assert ref(karta(children=[child("root")])) == ["component name root is not unique"]


def test_duplicate_empty_names():
    assert ref(karta(children=[child(""), child("")])) == ["component name  is not unique"]


def test_every_duplicate_is_reported():
    msgs = ref(karta(children=[child("a"), child("a"), child("a"), child("b"), child("b")]))
    assert msgs.count("component name a is not unique") == 2
    assert msgs.count("component name b is not unique") == 1
    assert len(msgs) == 3


def test_duplicates_short_circuit_every_other_check():
    doc = karta(root(statusDefinition=None, kind=None, ownerRef="x"),
                children=[child("a", owner="ghost"), child("a", owner=None)],
                gang={"podGroups": [{"name": "g", "members": [{"componentName": "nope"}]}]})
    doc["spec"]["structureDefinition"]["childComponents"][0]["instanceIdPath"] = ".["
    assert ref(doc) == ["component name a is not unique"]


def test_duplicate_definition_is_invalid():
    d = load(karta(children=[child("a"), child("a")]))
    assert not d.valid
    assert "component name a is not unique" in errors(d)


# -- 2. structure: root --------------------------------------------------------------------

@pytest.mark.parametrize("kind", [
    None,
    {"group": "acme.example.com", "version": "v1", "kind": ""},
    {"group": "acme.example.com", "version": "", "kind": "Thing"},
    {"group": "", "version": "v1", "kind": "Thing"},
    {"group": "", "version": "v1", "kind": "Deployment"},
])
def test_root_must_have_full_kind(kind):
    assert ref(karta(root(kind=kind))) == ["root component must have full kind (group, version, kind)"]


def test_root_pod_kind_may_have_empty_group():
    assert ref(karta(root(kind={"group": "", "version": "v1", "kind": "Pod"}))) == []


def test_pod_exception_is_exact_kind_name():
    assert ref(karta(root(kind={"group": "", "version": "v1", "kind": "pod"}))) == [
        "root component must have full kind (group, version, kind)"]


def test_pod_kind_still_needs_version():
    assert ref(karta(root(kind={"group": "", "version": "", "kind": "Pod"}))) == [
        "root component must have full kind (group, version, kind)"]


@pytest.mark.parametrize("owner", ["root", "", "anything"])
def test_root_cannot_have_owner_ref_even_empty(owner):
    assert ref(karta(root(ownerRef=owner))) == ["root component cannot have owner ref"]


def test_root_must_have_status_definition():
    assert ref(karta(root(statusDefinition=None))) == ["root component must have status definition"]


def test_root_status_definition_with_empty_mappings_is_enough():
    assert ref(karta(root(statusDefinition={"statusMappings": {}}))) == []


def test_root_errors_in_reference_order():
    assert ref(karta(root(kind=None, ownerRef="", statusDefinition=None))) == [
        "root component must have full kind (group, version, kind)",
        "root component cannot have owner ref",
        "root component must have status definition",
    ]


# -- 2. structure: children ----------------------------------------------------------------

@pytest.mark.parametrize("owner", [None, ""])
def test_child_without_owner_ref(owner):
    c = child("worker", owner=None)
    if owner is not None:
        c["ownerRef"] = owner
    assert ref(karta(children=[c])) == ["child component 'worker' has no owner ref"]


def test_child_owner_ref_to_missing_component():
    assert ref(karta(children=[child("worker", owner="master")])) == [
        "child component 'worker' has owner ref to non-existing component 'master'"]


def test_child_may_own_another_child():
    assert ref(karta(children=[child("group"), child("leader", owner="group")])) == []


def test_child_kind_is_optional_and_not_checked():
    assert ref(karta(children=[child("a", kind={"group": "", "version": "", "kind": ""})])) == []


def test_child_name_empty():
    assert ref(karta(children=[child("")])) == ["component name is empty"]


def test_root_name_empty():
    assert ref(karta(root(name=""))) == ["component name is empty"]


# -- component checks ------------------------------------------------------------------------

@pytest.mark.parametrize("spec", [
    {"podTemplateSpecPath": ".a", "podSpecPath": ".b"},
    {"podTemplateSpecPath": ".a", "fragmentedPodSpecDefinition": {"containerPath": ".c"}},
    {"podSpecPath": ".b", "fragmentedPodSpecDefinition": {}},
    {"podTemplateSpecPath": ".a", "podSpecPath": ".b", "fragmentedPodSpecDefinition": {}},
])
def test_multiple_pod_spec_definitions(spec):
    assert ref(karta(children=[child("worker", specDefinition=spec)])) == [
        "component 'worker' has multiple pod spec definitions"]


@pytest.mark.parametrize("spec", [
    {"podSpecPath": ".b", "metadataPath": ".m"},
    {"podTemplateSpecPath": ".a", "metadataPath": ".m"},
    {"fragmentedPodSpecDefinition": {}, "metadataPath": ".m"},
    {"fragmentedPodSpecDefinition": {}},
    {"metadataPath": ".m"},
    {},
])
def test_single_pod_form_is_fine(spec):
    assert ref(karta(children=[child("worker", specDefinition=spec)])) == []


def test_multiple_pod_forms_on_root():
    assert ref(karta(root(specDefinition={"podTemplateSpecPath": ".a", "podSpecPath": ".b"}))) == [
        "component 'root' has multiple pod spec definitions"]


def test_instance_id_path_without_instance_selector():
    assert ref(karta(children=[child("w", instanceIdPath=".spec.w[].name")])) == [
        "component 'w' has instance id path but no pod component instance selector"]


def test_instance_id_path_with_other_selectors_only():
    c = child("w", instanceIdPath=".spec.w[].name",
              podSelector={"componentTypeSelector": {"keyPath": ".a"}, "replicaSelector": {"keyPath": ".r"}})
    assert ref(karta(children=[c])) == ["component 'w' has instance id path but no pod component instance selector"]


def test_instance_selector_without_instance_id_path():
    c = child("w", podSelector={"componentInstanceSelector": {"idPath": ".metadata.name"}})
    assert ref(karta(children=[c])) == ["component 'w' has pod component instance selector but no instance id path"]


def test_instance_pairing_complete_is_valid():
    c = child("w", instanceIdPath=".spec.w[].name",
              podSelector={"componentInstanceSelector": {"idPath": ".metadata.name"}})
    assert ref(karta(children=[c])) == []


def test_instance_pairing_on_root():
    assert ref(karta(root(instanceIdPath=".spec.x[]"))) == [
        "component 'root' has instance id path but no pod component instance selector"]


def test_component_checks_order():
    c = child("w", instanceIdPath=".x[]", specDefinition={"podTemplateSpecPath": ".a", "podSpecPath": ".b"})
    c2 = child("v", podSelector={"componentInstanceSelector": {"idPath": ".i"}})
    assert ref(karta(children=[c, c2])) == [
        "component 'w' has multiple pod spec definitions",
        "component 'w' has instance id path but no pod component instance selector",
        "component 'v' has pod component instance selector but no instance id path",
    ]


def test_child_owner_error_precedes_its_component_checks():
    c = child("w", owner="ghost", specDefinition={"podTemplateSpecPath": ".a", "podSpecPath": ".b"})
    assert ref(karta(children=[c])) == [
        "child component 'w' has owner ref to non-existing component 'ghost'",
        "component 'w' has multiple pod spec definitions",
    ]


# -- componentTypeSelector / matchLabels (newer validator; substrings) -------------------------

def _sel(sel: dict) -> dict:
    return karta(children=[child("w", podSelector={"componentTypeSelector": sel})])


def test_selector_with_neither_keypath_nor_matchlabels():
    msgs = errors(_sel({}))
    assert any("neither keyPath nor matchLabels" in m for m in msgs)
    assert any("at least one of keyPath or matchLabels must be set" in m for m in msgs)


def test_selector_with_empty_matchlabels():
    assert any("empty matchLabels" in m for m in errors(_sel({"matchLabels": {}})))


def test_empty_matchlabels_reported_even_with_keypath():
    msgs = errors(_sel({"keyPath": ".a", "matchLabels": {}}))
    assert any("empty matchLabels" in m for m in msgs)


def test_selector_value_without_keypath():
    msgs = errors(_sel({"value": "x", "matchLabels": {"a": "b"}}))
    assert any("value without keyPath" in m for m in msgs)
    assert any("value requires keyPath" in m for m in msgs)


@pytest.mark.parametrize("sel", [
    {"keyPath": ".metadata.labels.app"},
    {"keyPath": ".metadata.labels.app", "value": "x"},
    {"matchLabels": {"app.kubernetes.io/component": "proxy", "app": ""}},
    {"keyPath": ".a", "matchLabels": {"a": "b"}},
])
def test_valid_type_selectors(sel):
    assert errors(_sel(sel)) == []


@pytest.mark.parametrize("labels,bad", [
    ({"app name": "x"}, 'Invalid value: "app name"'),
    ({"app": "proxy "}, 'Invalid value: "proxy "'),
    ({"app": "-bad"}, 'Invalid value: "-bad"'),
    ({"Example.com/x": "v"}, 'Invalid value: "Example.com/x"'),
])
def test_invalid_match_labels(labels, bad):
    msgs = errors(_sel({"matchLabels": labels}))
    assert any(bad in m for m in msgs), msgs


def test_prefixed_label_key_is_valid():
    assert errors(_sel({"matchLabels": {"app.kubernetes.io/component": "gateway"}})) == []


def test_invalid_match_labels_reported_all_in_sorted_order():
    msgs = [m for m in errors(_sel({"matchLabels": {"z z": "ok", "b": "-bad", "a a": "ok"}})) if "Invalid value" in m]
    assert len(msgs) == 3
    assert ['"a a"' in msgs[0], '"-bad"' in msgs[1], '"z z"' in msgs[2]] == [True, True, True]


def test_matchlabels_are_not_jq():
    assert errors(_sel({"matchLabels": {"a": "b"}, "keyPath": ".metadata.labels.a"})) == []


# -- 3. cycles ----------------------------------------------------------------------------

def test_ownership_cycle_between_two_children():
    msgs = ref(karta(children=[child("a", owner="b"), child("b", owner="a")]))
    assert len(msgs) == 1
    assert msgs[0] in ("ownership cycle detected involving component a",
                       "ownership cycle detected involving component b")


def test_self_owned_child_is_a_cycle():
    assert ref(karta(children=[child("a", owner="a")])) == ["ownership cycle detected involving component a"]


def test_only_one_cycle_error_for_two_cycles():
    msgs = ref(karta(children=[child("a", owner="b"), child("b", owner="a"),
                               child("c", owner="d"), child("d", owner="c")]))
    assert len(msgs) == 1
    assert msgs[0].startswith("ownership cycle detected involving component ")


def test_cycle_below_a_valid_branch():
    msgs = ref(karta(children=[child("ok"), child("x", owner="y"), child("y", owner="z"), child("z", owner="x")]))
    assert len(msgs) == 1 and msgs[0].startswith("ownership cycle detected involving component ")


def test_structure_errors_skip_the_cycle_check():
    doc = karta(root(statusDefinition=None), children=[child("a", owner="b"), child("b", owner="a")])
    assert ref(doc) == ["root component must have status definition"]


def test_component_check_error_also_skips_the_cycle_check():
    doc = karta(children=[child("a", owner="b", instanceIdPath=".x[]"), child("b", owner="a")])
    assert ref(doc) == ["component 'a' has instance id path but no pod component instance selector"]


def test_deep_chain_without_cycle_is_valid():
    kids = [child("c0")] + [child(f"c{i}", owner=f"c{i - 1}") for i in range(1, 8)]
    assert ref(karta(children=kids)) == []


# -- 4. gang instructions ------------------------------------------------------------------

def test_pod_group_member_must_exist():
    doc = karta(gang={"podGroups": [{"name": "g", "members": [{"componentName": "ghost"}]}]})
    assert ref(doc) == [
        "pod-group member component 'ghost' is not defined (should be a root or child component)"]


def test_pod_group_members_all_reported():
    doc = karta(children=[child("w")], gang={"podGroups": [
        {"name": "g1", "members": [{"componentName": "x"}, {"componentName": "w"}]},
        {"name": "g2", "members": [{"componentName": "root"}, {"componentName": "y"}]}]})
    assert ref(doc) == [
        "pod-group member component 'x' is not defined (should be a root or child component)",
        "pod-group member component 'y' is not defined (should be a root or child component)",
    ]


def test_pod_group_member_check_runs_despite_structure_errors():
    doc = karta(root(statusDefinition=None), gang={"podGroups": [{"name": "g", "members": [{"componentName": "x"}]}]})
    assert ref(doc) == [
        "root component must have status definition",
        "pod-group member component 'x' is not defined (should be a root or child component)",
    ]


def test_v2_subgroup_component_is_not_checked():
    doc = karta(gang={"podGroup": {"name": "pg", "subGroups": [{"componentName": "ghost"}]}})
    d = load(doc)
    assert d.valid
    assert ref(doc) == []
    assert any("ghost" in w for w in warnings(d))


# -- 5. jq parse errors with the Go field path ----------------------------------------------------

def _jq_cases():
    sel = {"componentInstanceSelector": {"idPath": ".metadata.name"}}
    return [
        (lambda e: karta(children=[child("c", specDefinition={"podTemplateSpecPath": e})]),
         f"{CHILD0_GO}.SpecDefinition.PodTemplateSpecPath"),
        (lambda e: karta(children=[child("c", specDefinition={"podSpecPath": e})]),
         f"{CHILD0_GO}.SpecDefinition.PodSpecPath"),
        (lambda e: karta(children=[child("c", specDefinition={"podSpecPath": ".a", "metadataPath": e})]),
         f"{CHILD0_GO}.SpecDefinition.MetadataPath"),
        (lambda e: karta(children=[child("c", specDefinition={"fragmentedPodSpecDefinition": {"containerPath": e}})]),
         f"{CHILD0_GO}.SpecDefinition.FragmentedPodSpecDefinition.ContainerPath"),
        (lambda e: karta(children=[child("c", specDefinition={"fragmentedPodSpecDefinition": {"resourcesPath": e}})]),
         f"{CHILD0_GO}.SpecDefinition.FragmentedPodSpecDefinition.ResourcesPath"),
        (lambda e: karta(children=[child("c", instanceIdPath=e, podSelector=sel)]), f"{CHILD0_GO}.InstanceIdPath"),
        (lambda e: karta(children=[child("c", scaleDefinition={"replicasPath": e})]),
         f"{CHILD0_GO}.ScaleDefinition.ReplicasPath"),
        (lambda e: karta(children=[child("c", scaleDefinition={"minReplicasPath": e})]),
         f"{CHILD0_GO}.ScaleDefinition.MinReplicasPath"),
        (lambda e: karta(children=[child("c", scaleDefinition={"maxReplicasPath": e})]),
         f"{CHILD0_GO}.ScaleDefinition.MaxReplicasPath"),
        (lambda e: karta(root(statusDefinition=status_def(phase=e))), f"{ROOT_GO}.StatusDefinition.PhaseDefinition.Path"),
        (lambda e: karta(root(statusDefinition=status_def(conditions=e))),
         f"{ROOT_GO}.StatusDefinition.ConditionsDefinition.Path"),
        (lambda e: karta(children=[child("c", statusDefinition=status_def(phase=e))]),
         f"{CHILD0_GO}.StatusDefinition.PhaseDefinition.Path"),
        (lambda e: karta(root(statusDefinition=status_def(
            {"running": [{"byPhase": "x"}, {"byExpression": {"expression": e, "expectedResult": "true"}}]}))),
         f"{ROOT_GO}.StatusDefinition.StatusMappings.Running[1].ByExpression.Expression"),
        (lambda e: karta(root(statusDefinition=status_def(
            {"degraded": [{"byExpression": {"expression": e, "expectedResult": "true"}}]}))),
         f"{ROOT_GO}.StatusDefinition.StatusMappings.Degraded[0].ByExpression.Expression"),
        (lambda e: karta(root(suspendDefinition={"suspendActions": [{"path": ".spec.a", "value": "1"},
                                                                    {"path": e, "value": "true"}],
                                                 "resumeActions": [{"path": ".spec.a", "value": "0"}]})),
         f"{ROOT_GO}.SuspendDefinition.SuspendActions[1].Path"),
        (lambda e: karta(root(suspendDefinition={"suspendActions": [{"path": ".spec.a", "value": "1"}],
                                                 "resumeActions": [{"path": e, "value": "0"}]})),
         f"{ROOT_GO}.SuspendDefinition.ResumeActions[0].Path"),
        (lambda e: karta(children=[child("c", podSelector={"componentTypeSelector": {"keyPath": e}})]),
         f"{CHILD0_GO}.PodSelector.ComponentTypeSelector.KeyPath"),
        (lambda e: karta(children=[child("c", instanceIdPath=".x[]", podSelector={"componentInstanceSelector": {"idPath": e}})]),
         f"{CHILD0_GO}.PodSelector.ComponentInstanceSelector.IdPath"),
        (lambda e: karta(children=[child("c", podSelector={"replicaSelector": {"keyPath": e}})]),
         f"{CHILD0_GO}.PodSelector.ReplicaSelector.KeyPath"),
        (lambda e: karta(gang={"podGroups": [{"name": "g", "members": [{"componentName": "root",
                                                                         "groupByKeyPaths": [".a", e]}]}]}),
         "Spec.Instructions.GangScheduling.PodGroups[0].Members[0].GroupByKeyPaths[1]"),
        (lambda e: karta(gang={"podGroups": [{"name": "g", "members": [{"componentName": "root", "filters": [e]}]}]}),
         "Spec.Instructions.GangScheduling.PodGroups[0].Members[0].Filters[0]"),
    ]


@pytest.mark.parametrize("build,go_path", _jq_cases(), ids=lambda x: x if isinstance(x, str) else "")
def test_jq_parse_error_names_go_field_path(build, go_path):
    expr = ".spec.x["
    msgs = ref(build(expr))
    assert len(msgs) == 1, msgs
    prefix = f"failed to parse JQ expression '{expr}' at '{go_path}': "
    assert msgs[0].startswith(prefix), msgs[0]
    assert len(msgs[0]) > len(prefix)


@pytest.mark.parametrize("build,go_path", _jq_cases(), ids=lambda x: x if isinstance(x, str) else "")
def test_jq_blacklist_error_names_go_field_path(build, go_path):
    msgs = ref(build("del(.a)"))
    assert msgs == [f"JQ expression 'del(.a)' at '{go_path}' failed validation: del function is not allowed"]


def test_invalid_expression_in_upstream_test_fact():
    msgs = ref(karta(root(statusDefinition=status_def(
        {"running": [{"byExpression": {"expression": ".status.phase ==", "expectedResult": "x"}}]}))))
    assert len(msgs) == 1
    assert msgs[0].startswith("failed to parse JQ expression '.status.phase ==' at "
                              f"'{ROOT_GO}.StatusDefinition.StatusMappings.Running[0].ByExpression.Expression': ")


def test_empty_expressions_are_skipped():
    assert ref(karta(children=[child("c", scaleDefinition={"replicasPath": "", "minReplicasPath": ".a"})])) == []


def test_every_bad_expression_is_reported_in_struct_order():
    doc = karta(root(statusDefinition=status_def(phase="del(.a)", conditions=".[")),
                children=[child("c", specDefinition={"podTemplateSpecPath": ".."}, scaleDefinition={"replicasPath": ".a = 1"})])
    msgs = ref(doc)
    assert msgs == [
        f"JQ expression 'del(.a)' at '{ROOT_GO}.StatusDefinition.PhaseDefinition.Path' failed validation: "
        "del function is not allowed",
        msgs[1],
        f"JQ expression '..' at '{CHILD0_GO}.SpecDefinition.PodTemplateSpecPath' failed validation: "
        "recursive descent operator '..' is not allowed",
        f"JQ expression '.a = 1' at '{CHILD0_GO}.ScaleDefinition.ReplicasPath' failed validation: "
        "modifying operator '=' is not allowed",
    ]
    assert msgs[1].startswith(f"failed to parse JQ expression '.[' at '{ROOT_GO}.StatusDefinition.ConditionsDefinition.Path': ")


@pytest.mark.parametrize("field,value", [
    ("byPhase", "(("),
])
def test_by_phase_is_not_jq(field, value):
    doc = karta(root(statusDefinition=status_def({"running": [{field: value}]}, phase=".status.phase")))
    assert ref(doc) == []


def test_expected_result_is_not_jq():
    doc = karta(root(statusDefinition=status_def({"running": [{"byExpression": {"expression": ".a", "expectedResult": "(("}}]})))
    assert ref(doc) == []


def test_action_value_is_not_jq():
    doc = karta(root(suspendDefinition={"suspendActions": [{"path": ".spec.a", "value": "(("}],
                                        "resumeActions": [{"path": ".spec.a", "value": "del(.a)"}]}))
    assert ref(doc) == []


def test_unknown_functions_pass_validation():
    doc = karta(gang={"podGroups": [{"name": "g", "members": [{"componentName": "root", "groupByKeyPaths": ["gpu"]}]}]})
    assert load(doc).valid


def test_wrong_arity_passes_validation():
    assert load(with_phase("select(.a; .b)")).valid


# -- 5. the blacklist ----------------------------------------------------------------------

BLACKLIST = [
    ("del(.a)", "del function is not allowed"),
    ("del(.a, .b)", "del function is not allowed"),
    ("range(3)", "function 'range' may produce excessive output and is not allowed"),
    ("range(0; 3)", "function 'range' may produce excessive output and is not allowed"),
    ("range(0; 10; 2)", "function 'range' may produce excessive output and is not allowed"),
    ("paths", "function 'paths' may produce excessive output and is not allowed"),
    ("paths(type == \"number\")", "function 'paths' may produce excessive output and is not allowed"),
    ("recurse", "function 'recurse' may produce excessive output and is not allowed"),
    ("recurse(.a)", "function 'recurse' may produce excessive output and is not allowed"),
    ("recurse(.a; . != null)", "function 'recurse' may produce excessive output and is not allowed"),
    ("walk(.)", "function 'walk' may produce excessive output and is not allowed"),
    ("repeat(.a)", "function 'repeat' may produce excessive output and is not allowed"),
    ("..", "recursive descent operator '..' is not allowed"),
    ("[..]", "recursive descent operator '..' is not allowed"),
    (".a = 1", "modifying operator '=' is not allowed"),
    (".a |= 1", "modifying operator '|=' is not allowed"),
    (".a += 1", "modifying operator '+=' is not allowed"),
    (".a -= 1", "modifying operator '-=' is not allowed"),
    (".a *= 2", "modifying operator '*=' is not allowed"),
    (".a /= 2", "modifying operator '/=' is not allowed"),
    (".a %= 2", "modifying operator '%=' is not allowed"),
    (".a //= 2", "modifying operator '//=' is not allowed"),
]


@pytest.mark.parametrize("expr,reason", BLACKLIST)
def test_blacklisted_construct(expr, reason):
    assert ref(with_phase(expr)) == [
        f"JQ expression '{expr}' at '{ROOT_GO}.StatusDefinition.PhaseDefinition.Path' failed validation: {reason}"]


def test_user_defined_function_with_blacklisted_name_is_still_rejected():
    assert ref(with_phase("def range: 1; range")) == [
        f"JQ expression 'def range: 1; range' at '{ROOT_GO}.StatusDefinition.PhaseDefinition.Path' failed validation: "
        "function 'range' may produce excessive output and is not allowed"]


def test_only_first_violation_per_expression():
    assert ref(with_phase("del(.a) | range(2)")) == [
        f"JQ expression 'del(.a) | range(2)' at '{ROOT_GO}.StatusDefinition.PhaseDefinition.Path' failed validation: "
        "del function is not allowed"]


@pytest.mark.parametrize("expr", [
    "def f: del(.a); f",
    "map(del(.a))",
    "(del(.a))",
    "[del(.a)]",
    "{a: del(.a)}",
    "{(del(.a) | tostring): 1}",
    '"x\\(del(.a))"',
    "if true then del(.a) else . end",
    "if del(.a) then . else . end",
    "if false then . elif true then del(.a) else . end",
    "if false then . else del(.a) end",
    "try del(.a) catch .",
    "try . catch del(.a)",
    "reduce .[] as $x (.; del(.a))",
    "reduce del(.a) as $x (.; .)",
    "foreach .[] as $x (0; del(.a); .)",
    "foreach .[] as $x (0; .; del(.a))",
    ".[del(.a)]",
    ".a[del(.b):]",
    ".a[:del(.b)]",
    "1 + (del(.a) | length)",
    "(del(.a) | length) + 1",
    ".a and (del(.a) | length > 0)",
    ".a // del(.a)",
    "del(.a)?",
    "del(.a) as $x | .",
    '@base64 "x\\(del(.a))"',
    "def del(f): .; del(.a)",
])
def test_checker_descends_everywhere_the_reference_does(expr):
    d = load(with_phase(expr))
    assert not d.valid
    assert errors(d) == [f"JQ expression '{expr}' at '{ROOT_GO}.StatusDefinition.PhaseDefinition.Path' "
                         "failed validation: del function is not allowed"]


@pytest.mark.parametrize("expr,hidden", [
    (". as $x | del(.a)", "del function is not allowed"),
    (". as $x | .a = 1", "modifying operator '=' is not allowed"),
    (". as [$a] | range(3)", "function 'range' may produce excessive output and is not allowed"),
    ("label $out | del(.a)", "del function is not allowed"),
    ("-(range(3))", "function 'range' may produce excessive output and is not allowed"),
    ("leaf_paths", "function 'leaf_paths' may produce excessive output and is not allowed"),
])
def test_reference_blind_spots_are_valid_with_a_lint_warning(expr, hidden):
    d = load(with_phase(expr))
    assert d.valid, errors(d)
    assert ref(with_phase(expr)) == []
    assert any(w.startswith(hidden) for w in warnings(d)), warnings(d)


@pytest.mark.parametrize("expr", [
    ".spec.a // .spec.b", "select(.a)", "any(.[]; . > 1)", "all(.[]; . > 1)", "to_entries", "map(.a)",
    "length", "tonumber", "tostring", "fromjson", ".a | IN(1, 2)", "first(.[])", "has(\"a\")",
    "if .a then 1 else 2 end", ".a?", ".a[]?", ". as $x | $x.a", ".a + 1", ".a and .b or (.c | not)",
    "limit(3; .[])", "getpath([\"a\"])", "[.[] | select(. > 0)] | length", "keys", "to_entries[] | .key",
])
def test_allowed_constructs(expr):
    assert ref(with_phase(expr)) == []


# -- all findings, not only the first -------------------------------------------------------

def test_all_findings_are_reported():
    doc = karta(root(kind={"group": "", "version": "v1", "kind": "X"}),
                children=[child("a", owner="ghost"), child("b", instanceIdPath=".x[]"),
                          child("c", specDefinition={"podSpecPath": "del(.a)"})],
                gang={"podGroups": [{"name": "g", "members": [{"componentName": "nope", "filters": [".["]}]}]})
    msgs = errors(doc)
    for expected in [
        "root component must have full kind (group, version, kind)",
        "child component 'a' has owner ref to non-existing component 'ghost'",
        "component 'b' has instance id path but no pod component instance selector",
        "pod-group member component 'nope' is not defined (should be a root or child component)",
        "JQ expression 'del(.a)' at 'Spec.StructureDefinition.ChildComponents[2].SpecDefinition.PodSpecPath' "
        "failed validation: del function is not allowed",
    ]:
        assert expected in msgs, (expected, msgs)
    assert any(m.startswith("failed to parse JQ expression '.[' at "
                            "'Spec.Instructions.GangScheduling.PodGroups[0].Members[0].Filters[0]': ") for m in msgs)


def test_reference_text_joins_with_newlines():
    d = load(karta(root(kind=None, statusDefinition=None)))
    assert reference_text(d.findings) == ("root component must have full kind (group, version, kind)\n"
                                          "root component must have status definition")


# -- schema level (API-server rules a file never meets) ---------------------------------------

def _has(msgs: list[str], path: str, what: str = "Required value") -> bool:
    return any(m.startswith(path) and what in m for m in msgs)


def test_schema_component_name_required():
    msgs = errors(karta(children=[{"ownerRef": "root"}]))
    assert _has(msgs, "spec.structureDefinition.childComponents[0].name")


def test_schema_root_component_required():
    doc = karta()
    del doc["spec"]["structureDefinition"]["rootComponent"]
    assert _has(errors(doc), "spec.structureDefinition.rootComponent")


def test_schema_structure_definition_required():
    doc = karta()
    del doc["spec"]["structureDefinition"]
    assert _has(errors(doc), "spec.structureDefinition")


def test_schema_status_mappings_required():
    assert _has(errors(karta(root(statusDefinition={"phaseDefinition": {"path": ".a"}}))),
                "spec.structureDefinition.rootComponent.statusDefinition.statusMappings")


@pytest.mark.parametrize("sd,path", [
    ({"statusMappings": {}, "phaseDefinition": {}}, "statusDefinition.phaseDefinition.path"),
    ({"statusMappings": {}, "conditionsDefinition": {"typeFieldName": "type"}}, "statusDefinition.conditionsDefinition.path"),
    ({"statusMappings": {"running": [{"byConditions": [{"status": "True"}]}]}},
     "statusDefinition.statusMappings.running[0].byConditions[0].type"),
    ({"statusMappings": {"failed": [{"byExpression": {"expectedResult": "true"}}]}},
     "statusDefinition.statusMappings.failed[0].byExpression.expression"),
    ({"statusMappings": {"failed": [{"byExpression": {"expression": ".a"}}]}},
     "statusDefinition.statusMappings.failed[0].byExpression.expectedResult"),
])
def test_schema_status_required_keys(sd, path):
    assert _has(errors(karta(root(statusDefinition=sd))), f"spec.structureDefinition.rootComponent.{path}")


def test_schema_gvk_keys_required_in_any_gvk():
    msgs = errors(karta(children=[child("c", kind={"kind": "Job"})]))
    assert _has(msgs, "spec.structureDefinition.childComponents[0].kind.group")
    assert _has(msgs, "spec.structureDefinition.childComponents[0].kind.version")


def test_schema_additional_child_kinds_allow_core_group_and_key_on_kind():
    ok = karta(additionalChildKinds=[{"group": "", "version": "v1", "kind": "Service"}])
    assert errors(ok) == []
    dup = karta(additionalChildKinds=[{"group": "", "version": "v1", "kind": "Service"},
                                      {"group": "serving.knative.dev", "version": "v1", "kind": "Service"}])
    assert _has(errors(dup), "spec.structureDefinition.additionalChildKinds[1]", "Duplicate value")


def test_listing_component_kind_in_additional_child_kinds_is_allowed():
    doc = karta(additionalChildKinds=[{"group": GROUP_KIND[0], "version": GROUP_KIND[1], "kind": GROUP_KIND[2]}])
    assert errors(doc) == []


GROUP_KIND = ("acme.example.com", "v1", "Thing")


def test_schema_suspend_actions_required_and_min_items():
    msgs = errors(karta(root(suspendDefinition={"suspendActions": []})))
    assert _has(msgs, "spec.structureDefinition.rootComponent.suspendDefinition.resumeActions")
    assert _has(msgs, "spec.structureDefinition.rootComponent.suspendDefinition.suspendActions", "at least 1 items")


def test_schema_action_path_and_value_required():
    msgs = errors(karta(root(suspendDefinition={"suspendActions": [{"path": ".a"}], "resumeActions": [{"value": "1"}]})))
    assert _has(msgs, "spec.structureDefinition.rootComponent.suspendDefinition.suspendActions[0].value")
    assert _has(msgs, "spec.structureDefinition.rootComponent.suspendDefinition.resumeActions[0].path")


def test_schema_selector_required_keys():
    c = child("c", instanceIdPath=".x[]", podSelector={"componentInstanceSelector": {}, "replicaSelector": {}})
    msgs = errors(karta(children=[c]))
    assert _has(msgs, "spec.structureDefinition.childComponents[0].podSelector.componentInstanceSelector.idPath")
    assert _has(msgs, "spec.structureDefinition.childComponents[0].podSelector.replicaSelector.keyPath")


def test_schema_keypath_min_length():
    msgs = errors(_sel({"keyPath": ""}))
    assert any("keyPath" in m and "at least 1 chars" in m for m in msgs)


def test_schema_gang_required_keys():
    g = "spec.optimizationInstructions.gangScheduling"
    msgs = errors(karta(gang={"podGroups": [{"members": [{}]}, {"name": "b"}], "podGroup": {"subGroups": [{}]}}))
    assert _has(msgs, f"{g}.podGroups[0].name")
    assert _has(msgs, f"{g}.podGroups[0].members[0].componentName")
    assert _has(msgs, f"{g}.podGroups[1].members")
    assert _has(msgs, f"{g}.podGroup.name")
    assert _has(msgs, f"{g}.podGroup.subGroups[0].componentName")


@pytest.mark.parametrize("missing", ["topologyName", "preferredTopologyLevel", "requiredTopologyLevel"])
def test_schema_topology_needs_all_three(missing):
    topo = {"topologyName": "t", "preferredTopologyLevel": "rack", "requiredTopologyLevel": "zone"}
    del topo[missing]
    g = "spec.optimizationInstructions.gangScheduling.podGroup"
    msgs = errors(karta(gang={"podGroup": {"name": "pg", "topology": topo}}))
    assert _has(msgs, f"{g}.topology.{missing}")
    msgs = errors(karta(gang={"podGroup": {"name": "pg", "subGroups": [{"componentName": "root", "topology": topo}]}}))
    assert _has(msgs, f"{g}.subGroups[0].topology.{missing}")


def test_schema_sets_and_list_map_keys():
    g = "spec.optimizationInstructions.gangScheduling"
    msgs = errors(karta(gang={"podGroups": [
        {"name": "a", "members": [{"componentName": "root", "groupByKeyPaths": [".x", ".x"], "filters": [".f", ".f"]},
                                  {"componentName": "root"}]},
        {"name": "a", "members": [{"componentName": "root"}]}]}))
    assert _has(msgs, f"{g}.podGroups[0].members[0].groupByKeyPaths[1]", "Duplicate value")
    assert _has(msgs, f"{g}.podGroups[0].members[0].filters[1]", "Duplicate value")
    assert _has(msgs, f"{g}.podGroups[0].members[1]", "Duplicate value")
    assert _has(msgs, f"{g}.podGroups[1]", "Duplicate value")


# -- unknown fields ---------------------------------------------------------------------------

def test_owner_name_typo_warns_with_suggestion_and_child_lacks_owner():
    c = child("worker", owner=None)
    c["ownerName"] = "root"
    d = load(karta(children=[c]))
    assert "child component 'worker' has no owner ref" in errors(d)
    assert ('unknown field "spec.structureDefinition.childComponents[0].ownerName" is ignored; '
            'did you mean "ownerRef"?') in warnings(d)


def test_fragmented_pod_definition_typo_warns_with_suggestion():
    d = load(karta(children=[child("c", specDefinition={"fragmentedPodDefinition": {"containerPath": ".c"}})]))
    assert d.valid
    assert ('unknown field "spec.structureDefinition.childComponents[0].specDefinition.fragmentedPodDefinition" '
            'is ignored; did you mean "fragmentedPodSpecDefinition"?') in warnings(d)


def test_fragmented_typo_does_not_count_as_a_pod_form():
    doc = karta(children=[child("c", specDefinition={"podSpecPath": ".a", "fragmentedPodDefinition": {}})])
    assert errors(doc) == []


def test_unknown_field_without_close_match():
    d = load(karta(root(zzzzzz=1)))
    assert 'unknown field "spec.structureDefinition.rootComponent.zzzzzz" is ignored' in warnings(d)


def test_unknown_top_level_spec_field():
    doc = karta()
    doc["spec"]["optimisationInstructions"] = {}
    assert any('"spec.optimisationInstructions"' in w and 'did you mean "optimizationInstructions"' in w
               for w in warnings(doc))


def test_metadata_and_status_are_free_form():
    doc = karta()
    doc["metadata"]["labels"] = {"x": "y"}
    doc["metadata"]["whatever"] = 1
    doc["status"] = {"conditions": []}
    assert warnings(doc) == []


# -- authoring / gojq-compat warnings ------------------------------------------------------------

@pytest.mark.parametrize("expr,needle", [
    ("keys_unsorted", "keys_unsorted"),
    (".spec | keys_unsorted", "keys_unsorted"),
    ("env.HOME", "'env'"),
    ("$ENV.HOME", "'$ENV'"),
    ("$__loc__", "$__loc__"),
    ('.a | test("a(?=b)")', "look-ahead"),
    ('.a | test("(?<=a)b")', "look-behind"),
    ('.a | test("a(?!b)")', "negative look-ahead"),
    ("input", "'input'"),
    ("[inputs]", "'inputs'"),
])
def test_gojq_compat_lint_warnings(expr, needle):
    d = load(with_phase(expr))
    assert d.valid
    assert any(needle in w for w in warnings(d)), warnings(d)


def test_locally_defined_keys_unsorted_is_not_reported():
    assert warnings(with_phase("def keys_unsorted: keys; keys_unsorted")) == []


def test_condition_field_name_defaults_warning():
    d = load(karta(root(statusDefinition=status_def(conditions={"path": ".status.conditions"}))))
    assert d.valid
    msg = [w for w in warnings(d) if "API-server defaults" in w]
    assert len(msg) == 1
    assert "typeFieldName, statusFieldName, messageFieldName, reasonFieldName" in msg[0]


def test_condition_field_names_partially_missing_warning_lists_only_missing():
    d = load(karta(root(statusDefinition=status_def(
        conditions={"path": ".c", "typeFieldName": "type", "statusFieldName": "status"}))))
    msg = [w for w in warnings(d) if "API-server defaults" in w]
    assert len(msg) == 1
    assert "messageFieldName, reasonFieldName not set" in msg[0]


def test_all_condition_field_names_set_no_warning():
    assert warnings(karta(root(statusDefinition=status_def(conditions=".status.conditions")))) == []


def test_by_phase_without_phase_definition_warns():
    assert any("byPhase is used but there is no phaseDefinition" in w
               for w in warnings(karta(root(statusDefinition=status_def({"running": [{"byPhase": "Running"}]})))))


def test_by_conditions_without_conditions_definition_warns():
    assert any("byConditions is used but there is no conditionsDefinition" in w for w in warnings(
        karta(root(statusDefinition=status_def({"running": [{"byConditions": [{"type": "Ready"}]}]})))))


def test_empty_scale_definition_warns():
    d = load(karta(children=[child("c", scaleDefinition={})]))
    assert d.valid
    assert any("empty scaleDefinition" in w for w in warnings(d))


def test_metadata_path_without_pod_spec_path_warns():
    d = load(karta(children=[child("c", specDefinition={"podTemplateSpecPath": ".t", "metadataPath": ".m"})]))
    assert d.valid
    assert any("metadataPath" in w for w in warnings(d))


def test_both_gang_forms_warn_podgroup_precedence():
    d = load(karta(gang={"podGroup": {"name": "x"}, "podGroups": [{"name": "g", "members": [{"componentName": "root"}]}]}))
    assert d.valid
    assert any("podGroup takes precedence" in w for w in warnings(d))


def test_v2_subgroup_without_scale_warns():
    d = load(karta(children=[child("c")], gang={"podGroup": {"name": "x", "subGroups": [{"componentName": "c"}]}}))
    assert d.valid
    assert any("subgroup component 'c' has no scaleDefinition" in w for w in warnings(d))


# -- loading ------------------------------------------------------------------------------------

def test_missing_metadata_name_gets_conventional_name_and_warning():
    doc = karta()
    del doc["metadata"]["name"]
    d = load(doc)
    assert d.name == "acme-example-com-thing-v1"
    assert d.valid
    assert any("metadata.name is missing" in w for w in warnings(d))


def test_core_group_conventional_name():
    doc = karta(root(kind={"group": "", "version": "v1", "kind": "Pod"}))
    del doc["metadata"]["name"]
    assert load(doc).name == "core-pod-v1"


def test_not_a_karta_is_rejected():
    from app.karta.load import NotAKarta, definition_from_document

    with pytest.raises(NotAKarta):
        definition_from_document({"apiVersion": "v1", "kind": "Pod"}, "inline", "test")
    with pytest.raises(NotAKarta):
        definition_from_document(["x"], "inline", "test")


def test_wrong_types_are_findings_not_exceptions():
    doc = karta(root(name=5))
    d = load(doc)
    assert not d.valid


def test_digest_is_stable_and_content_sensitive():
    a, b = load(karta()), load(karta())
    assert a.digest == b.digest and a.digest.startswith("sha256:")
    assert load(karta(name="other")).digest != a.digest
