"""The scheduler's node filters, rule by rule, as the Kubernetes API reference documents them."""

from __future__ import annotations

import pytest

from app.capacity.filters import (
    Constraints,
    node_affinity,
    node_ready,
    node_selector,
    node_unschedulable,
    reason,
    resources_fit,
    static_reason,
    taint_toleration,
    tolerates,
)
from app.capacity.nodes import Node, Taint

GPU = "nvidia.com/gpu"


def tainted(*taints: Taint, **kw: object) -> Node:
    return Node("n1", taints=taints, **kw)  # type: ignore[arg-type]


# --- tolerations ---------------------------------------------------------------------------

T = Taint("gpu", "true", "NoSchedule")


@pytest.mark.parametrize(
    ("toleration", "matches"),
    [
        ({"key": "gpu", "operator": "Equal", "value": "true", "effect": "NoSchedule"}, True),
        ({"key": "gpu", "value": "true", "effect": "NoSchedule"}, True),  # Equal is the default
        ({"key": "gpu", "operator": "", "value": "true"}, True),  # an empty operator too; empty effect: all
        ({"key": "gpu", "value": "false", "effect": "NoSchedule"}, False),  # Equal needs the value
        ({"key": "gpu", "effect": "NoSchedule"}, False),  # Equal with no value: the empty value
        ({"key": "gpu", "operator": "Exists", "effect": "NoSchedule"}, True),  # Exists: any value
        ({"key": "gpu", "operator": "Exists", "value": "ignored"}, True),
        ({"key": "gpus", "operator": "Exists"}, False),  # another key
        ({"operator": "Exists"}, True),  # empty key with Exists: every key, value and effect
        ({"key": "", "operator": "Exists", "effect": "NoSchedule"}, True),
        ({"operator": "Exists", "effect": "NoExecute"}, False),  # ... but an effect still narrows it
        ({"value": "true"}, False),  # an empty key needs Exists
        ({"key": "gpu", "operator": "Exists", "effect": "PreferNoSchedule"}, False),  # another effect
        ({"key": "gpu", "operator": "Gt", "value": "0"}, False),  # alpha, feature-gated: not honoured
    ],
)
def test_toleration_matching(toleration: dict, matches: bool) -> None:
    assert tolerates(toleration, T) is matches


def test_untolerated_noschedule_and_noexecute_taints_fail() -> None:
    for effect in ("NoSchedule", "NoExecute"):
        node = tainted(Taint("gpu", "true", effect))
        assert taint_toleration(node, []) == f"node has taint gpu=true:{effect} the pod does not tolerate"
        assert taint_toleration(node, [{"key": "gpu", "operator": "Exists"}]) is None


def test_prefer_no_schedule_is_ignored() -> None:
    assert taint_toleration(tainted(Taint("spot", "", "PreferNoSchedule")), []) is None


def test_every_blocking_taint_must_be_tolerated() -> None:
    node = tainted(Taint("a", "1", "NoSchedule"), Taint("b", "", "NoExecute"))
    only_a = [{"key": "a", "value": "1"}]
    assert taint_toleration(node, only_a) == "node has taint b:NoExecute the pod does not tolerate"
    assert taint_toleration(node, [{"key": "a", "value": "1"}, {"key": "b", "operator": "Exists"}]) is None


def test_a_cordoned_node_fails_unless_its_taint_is_tolerated() -> None:
    node = Node("n", unschedulable=True)
    assert node_unschedulable(node, []) == "node is unschedulable (cordoned)"
    assert node_unschedulable(node, [{"key": "gpu", "operator": "Exists"}]) is not None
    ok = {"key": "node.kubernetes.io/unschedulable", "operator": "Exists", "effect": "NoSchedule"}
    assert node_unschedulable(node, [ok]) is None
    assert node_unschedulable(node, [{"operator": "Exists"}]) is None  # tolerates everything
    assert node_unschedulable(Node("n"), []) is None


def test_a_not_ready_node_fails_with_its_own_reason() -> None:
    assert node_ready(Node("n", ready=False)) == "node is NotReady"
    assert node_ready(Node("n")) is None
    # even a pod that tolerates everything does not go there
    c = Constraints(tolerations=[{"operator": "Exists"}])
    assert static_reason(Node("n", ready=False), c) == "node is NotReady"


# --- nodeSelector and node affinity ----------------------------------------------------------

NODE = Node("gpu-7", labels={"zone": "a", "gpu": "h100", "gpus": "8", "gen": "v3"})


def test_node_selector_needs_every_key_value() -> None:
    assert node_selector(NODE, {}) is None
    assert node_selector(NODE, {"zone": "a", "gpu": "h100"}) is None
    assert node_selector(NODE, {"zone": "a", "gpu": "a100"}) == "node lacks label gpu=a100 (nodeSelector)"
    assert node_selector(NODE, {"rack": "1"}) == "node lacks label rack=1 (nodeSelector)"


def expr(key: str, operator: str, *values: str) -> dict:
    return {"key": key, "operator": operator, "values": list(values)}


def one(*expressions: dict, fields: list | None = None) -> dict:
    term: dict = {"matchExpressions": list(expressions)}
    if fields is not None:
        term["matchFields"] = fields
    return {"nodeSelectorTerms": [term]}


@pytest.mark.parametrize(
    ("expression", "matches"),
    [
        (expr("zone", "In", "a", "b"), True),
        (expr("zone", "In", "b"), False),
        (expr("rack", "In", "a"), False),  # absent label
        (expr("zone", "NotIn", "b"), True),
        (expr("zone", "NotIn", "a"), False),
        (expr("rack", "NotIn", "a"), True),  # NotIn holds when the label is absent
        (expr("zone", "Exists"), True),
        (expr("rack", "Exists"), False),
        (expr("rack", "DoesNotExist"), True),
        (expr("zone", "DoesNotExist"), False),
        (expr("gpus", "Gt", "4"), True),
        (expr("gpus", "Gt", "8"), False),  # strictly greater
        (expr("gpus", "Lt", "9"), True),
        (expr("gpus", "Lt", "8"), False),
        (expr("gpus", "Gt", "-1"), True),
        (expr("gen", "Gt", "1"), False),  # "v3" is not an integer
        (expr("gen", "Lt", "100"), False),
        (expr("rack", "Gt", "0"), False),  # absent label
        (expr("gpus", "Gt", "four"), False),  # a non-integer value
        (expr("gpus", "Gt", "1", "2"), False),  # Gt and Lt take exactly one value
        (expr("zone", "Matches", "a"), False),  # no such operator
    ],
)
def test_each_affinity_operator(expression: dict, matches: bool) -> None:
    assert (node_affinity(NODE, one(expression)) is None) is matches


def test_expressions_in_a_term_are_anded_and_terms_ored() -> None:
    both = one(expr("zone", "In", "a"), expr("gpu", "In", "a100"))
    assert node_affinity(NODE, both) == "node matches none of the required node affinity terms"
    either = {"nodeSelectorTerms": [both["nodeSelectorTerms"][0], {"matchExpressions": [expr("gpu", "In", "h100")]}]}
    assert node_affinity(NODE, either) is None


def test_empty_terms_match_no_node() -> None:
    # "A null or empty node selector term matches no objects"; terms are ORed, so no terms: none
    assert node_affinity(NODE, {"nodeSelectorTerms": []}) == (
        "the required node affinity has no terms (it matches no node)"
    )
    assert node_affinity(NODE, {"nodeSelectorTerms": [{}]}) is not None
    assert node_affinity(NODE, {"nodeSelectorTerms": [{"matchExpressions": []}]}) is not None
    assert node_affinity(NODE, {"nodeSelectorTerms": [{}, one(expr("zone", "Exists"))["nodeSelectorTerms"][0]]}) is None
    assert node_affinity(NODE, None) is None  # no required affinity: every node


def test_match_fields_support_metadata_name_in_and_not_in() -> None:
    assert node_affinity(NODE, one(fields=[expr("metadata.name", "In", "gpu-7", "gpu-8")])) is None
    assert node_affinity(NODE, one(fields=[expr("metadata.name", "In", "gpu-8")])) is not None
    assert node_affinity(NODE, one(fields=[expr("metadata.name", "NotIn", "gpu-8")])) is None
    assert node_affinity(NODE, one(fields=[expr("metadata.name", "NotIn", "gpu-7")])) is not None
    assert node_affinity(NODE, one(fields=[expr("metadata.name", "Exists")])) is not None  # only In/NotIn
    assert node_affinity(NODE, one(fields=[expr("metadata.uid", "In", "gpu-7")])) is not None  # only the name
    # fields and expressions of one term are ANDed
    assert node_affinity(NODE, one(expr("zone", "In", "b"), fields=[expr("metadata.name", "In", "gpu-7")])) is not None
    assert node_affinity(NODE, one(expr("zone", "In", "a"), fields=[expr("metadata.name", "In", "gpu-7")])) is None


def test_constraints_from_a_pod_spec() -> None:
    required = one(expr("zone", "In", "a"))
    spec = {
        "nodeSelector": {"gpu": "h100"},
        "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": required}},
        "tolerations": [{"operator": "Exists"}, "junk"],
    }
    c = Constraints.of_pod_spec(spec)
    assert (dict(c.node_selector), c.affinity, c.tolerations) == ({"gpu": "h100"}, required, ({"operator": "Exists"},))
    empty = Constraints.of_pod_spec({})
    assert (dict(empty.node_selector), empty.affinity, empty.tolerations) == ({}, None, ())


# --- resources ------------------------------------------------------------------------------


def test_every_requested_resource_must_fit_the_free_amount() -> None:
    free = {"cpu": 4000, "memory": 8 * 1024**3, GPU: 4, "pods": 3}
    assert resources_fit({"cpu": 4000, "memory": 8 * 1024**3, GPU: 4}, free) is None  # exactly full fits
    assert resources_fit({GPU: 8}, free) == "insufficient nvidia.com/gpu: needs 8, 4 free"
    assert resources_fit({"cpu": 4500, "memory": 16 * 1024**3}, free) == (
        "insufficient cpu: needs 4500m, 4 free; insufficient memory: needs 16Gi, 8Gi free"
    )


def test_extended_resources_and_a_resource_the_node_lacks() -> None:
    free = {"cpu": 1000, "pods": 1, "nvidia.com/mig-1g.10gb": 2}
    assert resources_fit({"nvidia.com/mig-1g.10gb": 2}, free) is None
    assert resources_fit({"nvidia.com/mig-1g.10gb": 3}, free) == "insufficient nvidia.com/mig-1g.10gb: needs 3, 2 free"
    assert resources_fit({GPU: 1}, free) == "insufficient nvidia.com/gpu: needs 1, 0 free"
    assert resources_fit({GPU: 0, "cpu": 0}, free) is None  # a zero request needs nothing


def test_a_pod_slot_must_be_free() -> None:
    assert resources_fit({}, {"pods": 0, "cpu": 1000}) == "no free pod slot"
    assert resources_fit({}, {"cpu": 1000}) == "no free pod slot"  # no pods allocatable
    assert resources_fit({}, {"pods": 1}) is None


def test_an_overcommitted_node_shows_no_negative_free() -> None:
    assert resources_fit({"cpu": 100}, {"cpu": -500, "pods": 1}) == "insufficient cpu: needs 100m, 0 free"


def test_all_filters_together_in_order() -> None:
    node = Node("n", labels={"zone": "a"}, taints=[Taint("gpu", "", "NoSchedule")], allocatable={"pods": 1})
    free = {"pods": 1, "cpu": 1000}
    c = Constraints({"zone": "a"}, None, [{"key": "gpu", "operator": "Exists"}])
    assert reason(node, free, {"cpu": 1000}, c) is None
    assert reason(node, free, {"cpu": 2000}, c) == "insufficient cpu: needs 2, 1 free"
    assert reason(node, free, {"cpu": 2000}, Constraints({"zone": "a"})) == (
        "node has taint gpu:NoSchedule the pod does not tolerate"
    )
