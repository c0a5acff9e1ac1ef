"""Status evaluation (docs/karta-semantics.md and docs/karta-format.md, "Status"): phase, conditions, matchers,
combination rules, the matched list and the primary phase."""

from __future__ import annotations

import pytest

from ..karta_kit import child, error_messages, karta, load, root, run, run_error, status_def, warnings, workload
from app.engine.interpret import interpret
from app.engine.status import EVALUATION_ORDER, PRECEDENCE, primary_phase

ALL_KEYS = ["initializing", "running", "completed", "failed", "degraded", "suspended", "suspending", "resuming"]
COND = ".status.conditions"


def doc_with(mappings: dict, phase: str | None = None, conditions=None) -> dict:
    return karta(root(statusDefinition=status_def(mappings, phase=phase, conditions=conditions)))


def status_of(mappings: dict, status: dict | None = None, spec: dict | None = None, phase: str | None = None,
              conditions=None) -> dict:
    return run(doc_with(mappings, phase, conditions), workload(spec or {}, status))["status"]


def matched(mappings: dict, status: dict | None = None, spec: dict | None = None, phase: str | None = None,
            conditions=None) -> list[str]:
    return status_of(mappings, status, spec, phase, conditions)["matched"]


def status_error(mappings: dict, status: dict | None = None, spec: dict | None = None, phase: str | None = None,
                 conditions=None) -> str:
    e = run_error(doc_with(mappings, phase, conditions), workload(spec or {}, status))
    [msg] = error_messages(e)
    return msg


def cond(type_, status=None, reason=None, message=None, **extra) -> dict:
    c = {"type": type_}
    if status is not None:
        c["status"] = status
    if reason is not None:
        c["reason"] = reason
    if message is not None:
        c["message"] = message
    c.update(extra)
    return c


BROKEN = {"byExpression": {"expression": 'error("boom")', "expectedResult": "true"}}
BROKEN_TEXT = ("failed to match status: failed to evaluate matcher: failed to evaluate ByExpression: "
               "JQ execution error for expression 'error(\"boom\")': boom")


# -- phase ----------------------------------------------------------------------------------

def test_phase_matches_exactly():
    assert matched({"running": [{"byPhase": "Running"}]}, {"phase": "Running"}, phase=".status.phase") == ["Running"]


def test_phase_is_case_sensitive():
    assert matched({"running": [{"byPhase": "Running"}]}, {"phase": "running"}, phase=".status.phase") == ["Undefined"]


def test_raw_phase_is_reported():
    s = status_of({}, {"phase": "Pending"}, phase=".status.phase")
    assert s["rawPhase"] == "Pending"


def test_null_phase_is_empty_string_and_matches_no_by_phase():
    s = status_of({"running": [{"byPhase": "Running"}], "failed": [{"byPhase": "null"}]}, {}, phase=".status.phase")
    assert s["rawPhase"] == ""
    assert s["matched"] == ["Undefined"]


def test_empty_by_phase_is_no_constraint():
    assert matched({"running": [{"byPhase": ""}]}, {}, phase=".status.phase") == ["Running"]


def test_only_first_phase_output_is_used():
    mappings = {"running": [{"byPhase": "A"}], "failed": [{"byPhase": "B"}]}
    assert matched(mappings, {"p": ["A", "B"]}, phase=".status.p[]") == ["Running"]


def test_no_phase_output_means_no_phase():
    s = status_of({"running": [{"byPhase": "A"}], "completed": [{}]}, {"p": []}, phase=".status.p[]")
    assert s["rawPhase"] is None
    assert s["matched"] == ["Completed"]


def test_no_phase_definition_means_no_raw_phase_and_by_phase_never_matches():
    s = status_of({"running": [{"byPhase": "Running"}]}, {"phase": "Running"})
    assert "rawPhase" not in s
    assert s["matched"] == ["Undefined"]


@pytest.mark.parametrize("value,word", [(3, "number"), (True, "bool"), ({"a": 1}, "object"), (["x"], "array")])
def test_non_string_phase_fails_status(value, word):
    msg = status_error({"running": [{}]}, {"phase": value}, phase=".status.phase")
    assert msg.startswith("failed to extract phase: failed to convert object at index 0 to type string: ")
    assert word in msg


def test_phase_path_runtime_error_fails_status():
    e = run_error(doc_with({"running": [{}]}, phase=".status.p[]"), workload({}, {}))
    assert any("cannot iterate over: null" in m for m in error_messages(e))


# -- conditions -------------------------------------------------------------------------------

def test_conditions_are_reported_in_source_order():
    s = status_of({}, {"conditions": [cond("B", "True", "r", "m"), cond("A", "False")]}, conditions=COND)
    assert s["conditions"] == [
        {"type": "B", "status": "True", "reason": "r", "message": "m"},
        {"type": "A", "status": "False", "reason": None, "message": ""},
    ]


def test_missing_conditions_array_is_empty():
    s = status_of({"running": [{"byConditions": [{"type": "Ready"}]}]}, {}, conditions=COND)
    assert s["conditions"] == []
    assert s["matched"] == ["Undefined"]


def test_no_conditions_definition_means_no_conditions():
    s = status_of({"running": [{"byConditions": [{"type": "Ready"}]}]}, {"conditions": [cond("Ready", "True")]})
    assert s["conditions"] == []
    assert s["matched"] == ["Undefined"]


def test_several_arrays_are_concatenated():
    s = status_of({"running": [{"byConditions": [{"type": "A"}, {"type": "B"}]}]},
                  {"a": [cond("A", "True")], "b": [cond("B", "True")]},
                  conditions={"path": ".status.a, .status.b", "typeFieldName": "type", "statusFieldName": "status"})
    assert [c["type"] for c in s["conditions"]] == ["A", "B"]
    assert s["matched"] == ["Running"]


def test_null_among_several_outputs_is_skipped():
    s = status_of({}, {"a": [cond("A", "True")]},
                  conditions={"path": ".status.a, .status.missing", "typeFieldName": "type", "statusFieldName": "status"})
    assert [c["type"] for c in s["conditions"]] == ["A"]


def test_bare_condition_objects_are_an_error():
    msg = status_error({}, {"conditions": [cond("Ready", "True")]},
                       conditions={"path": ".status.conditions[]", "typeFieldName": "type", "statusFieldName": "status"})
    assert msg.startswith("failed to extract conditions: failed to convert object ")


@pytest.mark.parametrize("value", ["Ready", 5, True, {"type": "Ready"}])
def test_non_array_conditions_are_an_error(value):
    msg = status_error({}, {"conditions": value}, conditions=COND)
    assert msg.startswith("failed to extract conditions: failed to convert object ")


def test_null_element_in_conditions_array_is_not_an_error():
    # encoding/json unmarshals a JSON null element of []map[string]any into a nil map, without error
    s = status_of({"running": [{"byConditions": [{"type": "A", "status": "True"}]}]},
                  {"conditions": [None, cond("A", "True")]}, conditions=COND)
    assert s["matched"] == ["Running"]


def test_array_of_non_objects_is_an_error():
    msg = status_error({}, {"conditions": ["Ready"]}, conditions=COND)
    assert msg.startswith("failed to extract conditions: failed to convert object ")


def test_duplicate_condition_types_last_wins_but_both_are_listed():
    conds = [cond("Ready", "False"), cond("Ready", "True")]
    s = status_of({"running": [{"byConditions": [{"type": "Ready", "status": "True"}]}],
                   "failed": [{"byConditions": [{"type": "Ready", "status": "False"}]}]}, {"conditions": conds},
                  conditions=COND)
    assert s["matched"] == ["Running"]
    assert [c["status"] for c in s["conditions"]] == ["False", "True"]


def test_non_string_status_is_ignored():
    conds = [cond("Ready", True)]
    s = status_of({"running": [{"byConditions": [{"type": "Ready", "status": "True"}]}],
                   "initializing": [{"byConditions": [{"type": "Ready"}]}]}, {"conditions": conds}, conditions=COND)
    assert s["conditions"][0]["status"] is None
    assert s["matched"] == ["Initializing"]


def test_non_string_type_becomes_empty():
    s = status_of({}, {"conditions": [{"type": 5, "status": "True"}]}, conditions=COND)
    assert s["conditions"] == [{"type": "", "status": "True", "reason": None, "message": ""}]


def test_non_string_reason_and_message_are_ignored():
    s = status_of({}, {"conditions": [cond("A", "True", reason=1, message={"x": 1})]}, conditions=COND)
    assert s["conditions"] == [{"type": "A", "status": "True", "reason": None, "message": ""}]


def test_custom_field_names():
    conds = [{"kind": "Ready", "state": "True", "why": "AllGood", "msg": "fine", "type": "Other", "status": "False"}]
    cd = {"path": COND, "typeFieldName": "kind", "statusFieldName": "state", "reasonFieldName": "why",
          "messageFieldName": "msg"}
    s = status_of({"running": [{"byConditions": [{"type": "Ready", "status": "True", "reason": "AllGood"}]}]},
                  {"conditions": conds}, conditions=cd)
    assert s["conditions"] == [{"type": "Ready", "status": "True", "reason": "AllGood", "message": "fine"}]
    assert s["matched"] == ["Running"]


def test_api_server_defaults_are_applied_to_missing_field_names():
    # Deliberate (docs/karta-format.md, "Choices this project makes"): defaults applied, with a warning.
    doc = doc_with({"failed": [{"byConditions": [{"type": "Done", "status": "True", "reason": "Error"}]}]},
                   conditions={"path": COND})
    assert any("API-server defaults" in w for w in warnings(load(doc)))
    out = run(doc, workload({}, {"conditions": [cond("Done", "True", "Error", "it broke")]}))
    assert out["status"]["matched"] == ["Failed"]
    assert out["status"]["conditions"] == [{"type": "Done", "status": "True", "reason": "Error", "message": "it broke"}]


def test_reason_default_only_when_field_name_absent():
    cd = {"path": COND, "typeFieldName": "type", "statusFieldName": "status", "reasonFieldName": "cause"}
    s = status_of({"failed": [{"byConditions": [{"type": "Done", "reason": "Error"}]}]},
                  {"conditions": [cond("Done", "True", "Error")]}, conditions=cd)
    assert s["conditions"][0]["reason"] is None
    assert s["matched"] == ["Undefined"]


def test_explicit_empty_field_name_reads_nothing():
    cd = {"path": COND, "typeFieldName": "type", "statusFieldName": "", "reasonFieldName": "reason",
          "messageFieldName": "message"}
    s = status_of({"running": [{"byConditions": [{"type": "Ready", "status": "True"}]}]},
                  {"conditions": [cond("Ready", "True")]}, conditions=cd)
    assert s["conditions"][0]["status"] is None
    assert s["matched"] == ["Undefined"]


# -- byConditions ------------------------------------------------------------------------------

def test_by_conditions_is_an_and():
    m = {"running": [{"byConditions": [{"type": "A", "status": "True"}, {"type": "B", "status": "True"}]}]}
    assert matched(m, {"conditions": [cond("A", "True"), cond("B", "True")]}, conditions=COND) == ["Running"]
    assert matched(m, {"conditions": [cond("A", "True"), cond("B", "False")]}, conditions=COND) == ["Undefined"]
    assert matched(m, {"conditions": [cond("A", "True")]}, conditions=COND) == ["Undefined"]


def test_absent_condition_does_not_match_status_false():
    m = {"failed": [{"byConditions": [{"type": "Ready", "status": "False"}]}]}
    assert matched(m, {"conditions": []}, conditions=COND) == ["Undefined"]


def test_existence_only_check():
    m = {"running": [{"byConditions": [{"type": "Ready"}]}]}
    assert matched(m, {"conditions": [cond("Ready", "Unknown")]}, conditions=COND) == ["Running"]
    assert matched(m, {"conditions": [cond("Ready")]}, conditions=COND) == ["Running"]


def test_status_is_compared_exactly():
    m = {"running": [{"byConditions": [{"type": "Ready", "status": "True"}]}]}
    assert matched(m, {"conditions": [cond("Ready", "true")]}, conditions=COND) == ["Undefined"]


def test_reason_must_match_when_given():
    m = {"degraded": [{"byConditions": [{"type": "Ready", "status": "False", "reason": "Partial"}]}]}
    assert matched(m, {"conditions": [cond("Ready", "False", "Partial")]}, conditions=COND) == ["Degraded"]
    assert matched(m, {"conditions": [cond("Ready", "False", "Other")]}, conditions=COND) == ["Undefined"]
    assert matched(m, {"conditions": [cond("Ready", "False")]}, conditions=COND) == ["Undefined"]


def test_reason_only_matcher():
    m = {"failed": [{"byConditions": [{"type": "Done", "reason": "Error"}]}]}
    assert matched(m, {"conditions": [cond("Done", "Whatever", "Error")]}, conditions=COND) == ["Failed"]


def test_extra_reason_on_actual_condition_is_fine():
    m = {"running": [{"byConditions": [{"type": "Ready", "status": "True"}]}]}
    assert matched(m, {"conditions": [cond("Ready", "True", "X", "y", lastTransitionTime="t")]},
                   conditions=COND) == ["Running"]


def test_condition_type_is_case_sensitive():
    m = {"running": [{"byConditions": [{"type": "Ready"}]}]}
    assert matched(m, {"conditions": [cond("ready", "True")]}, conditions=COND) == ["Undefined"]


# -- byExpression ------------------------------------------------------------------------------

def _expr(expression: str, expected: str, key: str = "running") -> dict:
    return {key: [{"byExpression": {"expression": expression, "expectedResult": expected}}]}


@pytest.mark.parametrize("expression,expected,status,result", [
    (".status.phase", "running", {"phase": "running"}, True),
    (".status.phase", "Running", {"phase": "running"}, False),
    (".status.phase", "running", {"phase": 'running "now"'}, False),
    (".status.phase", '"running"', {"phase": "running"}, False),
    (".status.phase", " running", {"phase": "running"}, False),
    (".status.phase", "running ", {"phase": "running"}, False),
    (".status.phase", 'running "now"', {"phase": 'running "now"'}, True),
    (".status.ok", "true", {"ok": True}, True),
    (".status.ok", "false", {"ok": False}, True),
    (".status.ok", "True", {"ok": True}, False),
    (".status.ok == true", "true", {"ok": True}, True),
    (".status.ok == true", "false", {"ok": False}, True),
    (".status.conditions | length", "1", {"conditions": [{"type": "A"}]}, True),
    (".status.conditions | length", "1.0", {"conditions": [{"type": "A"}]}, False),
    (".status.missing", "true", {}, False),
    (".status.missing", "null", {}, True),
    (".status.missing", "", {}, False),
    (".status.n", "2", {"n": 2}, True),
    (".status.n", "2", {"n": "2"}, True),
    (".status.list", '["a",1]', {"list": ["a", 1]}, True),
    (".status.list", '["a", 1]', {"list": ["a", 1]}, False),
    (".status.empty", "", {"empty": ""}, True),
])
def test_by_expression_facts(expression, expected, status, result):
    assert matched(_expr(expression, expected), status) == (["Running"] if result else ["Undefined"])


def test_only_first_output_counts():
    assert matched(_expr(".status.a[]", "x"), {"a": ["x", "y"]}) == ["Running"]
    assert matched(_expr(".status.a[]", "y"), {"a": ["x", "y"]}) == ["Undefined"]


def test_no_output_is_no_match_and_next_matcher_is_tried():
    m = {"running": [{"byExpression": {"expression": "empty", "expectedResult": "null"}}, {}]}
    assert matched(m, {}) == ["Running"]
    assert matched(_expr(".status.a[]", "null"), {"a": []}) == ["Undefined"]


def test_error_in_reached_expression_fails_whole_status():
    assert status_error({"running": [BROKEN]}) == BROKEN_TEXT


def test_runtime_error_in_expression_text():
    msg = status_error(_expr(".status.x[]", "true"))
    assert msg == ("failed to match status: failed to evaluate matcher: failed to evaluate ByExpression: "
                   "JQ execution error for expression '.status.x[]': cannot iterate over: null")


def test_error_fails_interpretation_even_if_other_statuses_matched():
    assert status_error({"running": [{}], "degraded": [BROKEN]}) == BROKEN_TEXT


# -- combination rules ------------------------------------------------------------------------

def test_matcher_and_of_phase_conditions_expression():
    m = {"running": [{"byPhase": "Active", "byConditions": [{"type": "Ready", "status": "True"}],
                      "byExpression": {"expression": ".spec.ok", "expectedResult": "true"}}]}
    good = {"phase": "Active", "conditions": [cond("Ready", "True")]}
    kw = dict(phase=".status.phase", conditions=COND)
    assert matched(m, good, {"ok": True}, **kw) == ["Running"]
    assert matched(m, dict(good, phase="Other"), {"ok": True}, **kw) == ["Undefined"]
    assert matched(m, dict(good, conditions=[]), {"ok": True}, **kw) == ["Undefined"]
    assert matched(m, good, {"ok": False}, **kw) == ["Undefined"]


def test_expression_not_evaluated_when_phase_fails():
    m = {"running": [{"byPhase": "Active", **BROKEN}]}
    assert matched(m, {"phase": "Other"}, phase=".status.phase") == ["Undefined"]


def test_expression_evaluated_when_phase_passes():
    m = {"running": [{"byPhase": "Active", **BROKEN}]}
    assert status_error(m, {"phase": "Active"}, phase=".status.phase") == BROKEN_TEXT


def test_expression_not_evaluated_when_conditions_fail():
    m = {"running": [{"byConditions": [{"type": "Ready", "status": "True"}], **BROKEN}]}
    assert matched(m, {"conditions": [cond("Ready", "False")]}, conditions=COND) == ["Undefined"]
    assert status_error(m, {"conditions": [cond("Ready", "True")]}, conditions=COND) == BROKEN_TEXT


def test_later_matcher_not_evaluated_after_a_match():
    assert matched({"running": [{}, BROKEN]}) == ["Running"]


def test_later_matcher_evaluated_when_earlier_did_not_match():
    assert status_error({"running": [{"byPhase": "X"}, BROKEN]}, {"phase": "Y"}, phase=".status.phase") == BROKEN_TEXT


def test_empty_matcher_always_matches():
    assert matched({"suspended": [{}]}) == ["Suspended"]


def test_or_within_a_status_stops_at_first_match():
    m = {"failed": [{"byPhase": "Error"}, {"byConditions": [{"type": "Failed"}]}, {}]}
    assert matched(m, {"phase": "Running"}, phase=".status.phase", conditions=COND) == ["Failed"]
    assert matched({"failed": [{"byPhase": "Error"}, {"byPhase": "Crash"}]}, {"phase": "Running"},
                   phase=".status.phase") == ["Undefined"]


def test_every_status_reported_in_evaluation_order():
    s = status_of({k: [{}] for k in ALL_KEYS})
    assert s["matched"] == ["Resuming", "Suspending", "Suspended", "Running", "Failed", "Completed", "Initializing",
                            "Degraded"]
    assert s["phase"] == "Resuming"


def test_evaluation_order_constant():
    assert EVALUATION_ORDER == ["Resuming", "Suspending", "Suspended", "Running", "Failed", "Completed",
                                "Initializing", "Degraded"]


def test_empty_and_absent_lists_never_match():
    s = status_of({"running": [], "failed": []})
    assert s["matched"] == ["Undefined"]
    assert s["phase"] == "Undefined"


def test_undefined_only_when_nothing_matched():
    s = status_of({"degraded": [{}]})
    assert s["matched"] == ["Degraded"]
    assert "Undefined" not in s["matched"]


def test_undefined_is_not_a_mapping_key():
    d = load(doc_with({"undefined": [{}]}))
    assert any("undefined" in w for w in warnings(d))
    assert run(doc_with({"undefined": [{}]}))["status"]["matched"] == ["Undefined"]


def test_overlapping_mappings_are_all_reported():
    m = {"running": [{"byPhase": "Active"}], "initializing": [{"byPhase": "Active"}]}
    assert matched(m, {"phase": "Active"}, phase=".status.phase") == ["Running", "Initializing"]


def test_status_reported_once_even_if_several_matchers_would_match():
    assert matched({"failed": [{}, {}]}) == ["Failed"]


# -- primary phase ----------------------------------------------------------------------------

@pytest.mark.parametrize("keys,phase", [
    (["running", "degraded"], "Degraded"),
    (["running", "failed"], "Failed"),
    (["suspended", "completed"], "Suspended"),
    (["running", "initializing"], "Running"),
    ([], "Undefined"),
    (["failed", "completed"], "Failed"),
    (["completed", "degraded"], "Completed"),
    (["resuming", "suspending"], "Resuming"),
    (["suspending", "suspended"], "Suspending"),
    (["initializing"], "Initializing"),
    (["degraded", "initializing"], "Degraded"),
])
def test_primary_phase_precedence_through_interpret(keys, phase):
    s = status_of({k: [{}] for k in keys})
    assert s["phase"] == phase
    assert len(s["matched"]) == max(1, len(keys))


def test_primary_phase_keeps_matched_in_evaluation_order():
    s = status_of({"degraded": [{}], "running": [{}]})
    assert s["matched"] == ["Running", "Degraded"]
    assert s["phase"] == "Degraded"


@pytest.mark.parametrize("matched_list,phase", [
    (["Running", "Degraded"], "Degraded"),
    (["Running", "Failed"], "Failed"),
    (["Suspended", "Completed"], "Suspended"),
    (["Running", "Initializing"], "Running"),
    (["Undefined"], "Undefined"),
    ([], "Undefined"),
])
def test_primary_phase_function(matched_list, phase):
    assert primary_phase(matched_list) == phase


def test_precedence_constant():
    assert PRECEDENCE == ["Resuming", "Suspending", "Suspended", "Failed", "Completed", "Degraded", "Running",
                          "Initializing", "Undefined"]


# -- scope and shape ---------------------------------------------------------------------------

def test_only_root_status_is_evaluated():
    c = child("c", statusDefinition=status_def({"running": [BROKEN]}))
    out = run(karta(root(statusDefinition=status_def({"completed": [{}]})), children=[c]))
    assert out["status"]["matched"] == ["Completed"]


def test_status_shape():
    s = status_of({"running": [{"byPhase": "A"}]}, {"phase": "A", "conditions": [cond("X", "True")]},
                  phase=".status.phase", conditions=COND)
    assert {"phase", "matched", "rawPhase", "conditions"} <= set(s)
    assert s["phase"] == "Running" and s["matched"] == ["Running"] and s["rawPhase"] == "A"


def test_status_errors_name_their_definition_paths():
    base = "spec.structureDefinition.rootComponent.statusDefinition."
    for sd, where in ((status_def({}, phase=".status.p[]"), "phaseDefinition.path"),
                      (status_def({}, conditions=".status.c[]"), "conditionsDefinition.path"),
                      (status_def({"running": [{}], "failed": [{"byPhase": "x"}, BROKEN]}),
                       "statusMappings.failed[1].byExpression.expression")):
        [err] = run(karta(root(statusDefinition=sd)), workload({}))["errors"]
        assert err["path"] == base + where


def test_one_definition_read_once_serves_every_object():
    d = load(doc_with({"running": [{"byPhase": "A"}], "failed": [{"byConditions": [{"type": "X", "status": "True"}]}]},
                      phase=".status.phase", conditions=COND))
    for status, want in (({"phase": "A"}, ["Running"]), ({"conditions": [cond("X", "True")]}, ["Failed"]),
                         ({"phase": "B"}, ["Undefined"]), ({"phase": "A"}, ["Running"])):
        assert interpret(workload({}, status), d)["status"]["matched"] == want
