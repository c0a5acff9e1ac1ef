"""The kube-scheduler's node filters, from the plugins' documented semantics.

Each filter returns None when the pod may go to the node, else a short reason a person can read.
Pod constraints are the JSON form of the pod spec's fields (plain dicts and lists):

- readiness: a node whose Ready condition is not "True" fails (`node is NotReady`). The node
  lifecycle controller taints such nodes; here NotReady is its own reason, whatever the pod
  tolerates.
- NodeUnschedulable: a cordoned node (spec.unschedulable) fails unless the pod tolerates the
  taint `node.kubernetes.io/unschedulable:NoSchedule`.
- TaintToleration: every taint with effect NoSchedule or NoExecute must be tolerated;
  PreferNoSchedule only steers scoring and is ignored. A toleration matches a taint when its
  effect is empty or equal; its key is empty (operator Exists: every key and value) or equal;
  and its operator is Exists (any value) or Equal, the default when empty (equal values).
  Lt and Gt (alpha, behind the TaintTolerationComparisonOperators feature gate) match nothing.
- nodeSelector: every key=value must be among the node's labels.
- required node affinity (requiredDuringSchedulingIgnoredDuringExecution): nodeSelectorTerms
  are ORed, so an empty list matches no node; a null or empty term matches no node; within a
  term, matchExpressions (labels) and matchFields (fields) are ANDed. In, NotIn, Exists,
  DoesNotExist (NotIn and DoesNotExist hold when the label is absent), Gt and Lt (the label and
  the single value compared as integers; an absent or non-integer label fails). matchFields
  supports only `metadata.name` with In or NotIn.
- NodeResourcesFit: every resource the pod requests above zero must be at most the node's free
  amount (a resource the node does not have is zero free), and a pod slot must be free.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from app.capacity.nodes import PODS, Node, Taint, as_list, as_mapping, show

UNSCHEDULABLE_TAINT = Taint("node.kubernetes.io/unschedulable", "", "NoSchedule")
BLOCKING_EFFECTS = frozenset({"NoSchedule", "NoExecute"})
NAME_FIELD = "metadata.name"


class Constraints:
    """What the node filters read of a pod spec: nodeSelector, required node affinity (the
    NodeSelector, or None), tolerations."""

    __slots__ = ("affinity", "node_selector", "tolerations")

    def __init__(
        self,
        node_selector: Mapping[str, str] | None = None,
        affinity: Mapping | None = None,
        tolerations: Sequence[Mapping] = (),
    ) -> None:
        self.node_selector: Mapping[str, str] = node_selector or {}
        self.affinity = affinity
        self.tolerations: tuple[Mapping, ...] = tuple(t for t in tolerations if isinstance(t, Mapping))

    @classmethod
    def of_pod_spec(cls, spec: Mapping | None) -> Constraints:
        spec = as_mapping(spec)
        node_affinity = as_mapping(as_mapping(spec.get("affinity")).get("nodeAffinity"))
        required = node_affinity.get("requiredDuringSchedulingIgnoredDuringExecution")
        return cls(
            {str(k): str(v) for k, v in as_mapping(spec.get("nodeSelector")).items()},
            required if isinstance(required, Mapping) else None,
            as_list(spec.get("tolerations")),
        )


# --- taints and tolerations ---------------------------------------------------------------


def tolerates(toleration: Mapping, taint: Taint) -> bool:
    """Whether one toleration matches one taint (see the module docstring)."""
    effect = toleration.get("effect") or ""
    if effect and effect != taint.effect:
        return False
    key = toleration.get("key") or ""
    operator = toleration.get("operator") or "Equal"
    if not key:
        return operator == "Exists"  # an empty key is valid only with Exists: every taint
    if key != taint.key:
        return False
    if operator == "Exists":
        return True
    if operator == "Equal":
        return (toleration.get("value") or "") == taint.value
    return False


def _tolerated(tolerations: Sequence[Mapping], taint: Taint) -> bool:
    return any(tolerates(t, taint) for t in tolerations)


def taint_toleration(node: Node, tolerations: Sequence[Mapping]) -> str | None:
    for taint in node.taints:
        if taint.effect in BLOCKING_EFFECTS and not _tolerated(tolerations, taint):
            return f"node has taint {taint} the pod does not tolerate"
    return None


def node_unschedulable(node: Node, tolerations: Sequence[Mapping]) -> str | None:
    if node.unschedulable and not _tolerated(tolerations, UNSCHEDULABLE_TAINT):
        return "node is unschedulable (cordoned)"
    return None


def node_ready(node: Node) -> str | None:
    return None if node.ready else "node is NotReady"


# --- labels and node affinity -------------------------------------------------------------


def node_selector(node: Node, selector: Mapping[str, str]) -> str | None:
    for key, value in selector.items():
        if node.labels.get(key) != value:
            return f"node lacks label {key}={value} (nodeSelector)"
    return None


_INTEGER = re.compile(r"[+-]?[0-9]+")


def _integer(raw: str) -> int | None:
    """A base-10 integer with an optional sign, and nothing else (no spaces, no `1_000`)."""
    return int(raw) if _INTEGER.fullmatch(raw) else None


def _matches_value(operator: object, actual: str | None, values: list) -> bool:
    strings = [str(v) for v in values]
    if operator == "In":
        return actual is not None and actual in strings
    if operator == "NotIn":
        return actual is None or actual not in strings
    if operator == "Exists":
        return actual is not None
    if operator == "DoesNotExist":
        return actual is None
    if operator in ("Gt", "Lt"):
        have = _integer(actual) if actual is not None else None
        want = _integer(strings[0]) if len(strings) == 1 else None
        if have is None or want is None:
            return False
        return have > want if operator == "Gt" else have < want
    return False  # an unknown operator: the API server rejects it


def _expression(node: Node, req: object) -> bool:
    req = as_mapping(req)
    return _matches_value(req.get("operator"), node.labels.get(str(req.get("key"))), as_list(req.get("values")))


def _field(node: Node, req: object) -> bool:
    req = as_mapping(req)
    if req.get("key") != NAME_FIELD or req.get("operator") not in ("In", "NotIn"):
        return False  # the only field a node selector supports
    return _matches_value(req.get("operator"), node.name, as_list(req.get("values")))


def term_matches(node: Node, term: object) -> bool:
    """A NodeSelectorTerm: its expressions and fields ANDed; null or empty matches nothing."""
    term = as_mapping(term)
    expressions, fields = as_list(term.get("matchExpressions")), as_list(term.get("matchFields"))
    if not expressions and not fields:
        return False
    return all(_expression(node, r) for r in expressions) and all(_field(node, r) for r in fields)


def node_affinity(node: Node, required: Mapping | None) -> str | None:
    if required is None:
        return None
    terms = as_list(required.get("nodeSelectorTerms"))
    if any(term_matches(node, t) for t in terms):
        return None
    if not terms:
        return "the required node affinity has no terms (it matches no node)"
    return "node matches none of the required node affinity terms"


# --- resources ----------------------------------------------------------------------------


def resources_fit(requests: Mapping[str, int], free: Mapping[str, int]) -> str | None:
    """NodeResourcesFit: a free pod slot and, per requested resource, enough free."""
    if free.get(PODS, 0) < 1:
        return "no free pod slot"
    short = [
        f"insufficient {name}: needs {show(name, n)}, {show(name, max(free.get(name, 0), 0))} free"
        for name, n in sorted(requests.items())
        if name != PODS and n > 0 and n > free.get(name, 0)
    ]
    return "; ".join(short) or None


# --- all of them --------------------------------------------------------------------------


def static_reason(node: Node, constraints: Constraints) -> str | None:
    """The first filter other than resources that rejects the node, in the scheduler's order
    (readiness first); None when the node is eligible."""
    return (
        node_ready(node)
        or node_unschedulable(node, constraints.tolerations)
        or taint_toleration(node, constraints.tolerations)
        or node_selector(node, constraints.node_selector)
        or node_affinity(node, constraints.affinity)
    )


def reason(node: Node, free: Mapping[str, int], requests: Mapping[str, int], constraints: Constraints) -> str | None:
    """Every filter: None when one pod with these requests and constraints may go to the node."""
    return static_reason(node, constraints) or resources_fit(requests, free)
