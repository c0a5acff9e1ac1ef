"""Properties of the fit on small random clusters and workloads, against a brute force that
tries every assignment of pods to nodes: a plan never over-commits a node nor breaks a filter
or a gang's topology, `fits` is exactly whether some assignment exists, and `sets` is at least
one exactly when it fits."""

from __future__ import annotations

import itertools
from collections import Counter

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from app.capacity.filters import Constraints, static_reason
from app.capacity.nodes import Node, Taint
from app.capacity.plan import BUDGET, Gang, PodGroup, _Fit, plan
from tests.properties import at_least

GPU = "nvidia.com/gpu"
RESOURCES = ("cpu", GPU)
TAINTS = (Taint("gpu", "true", "NoSchedule"), Taint("spot", "", "NoExecute"), Taint("soft", "", "PreferNoSchedule"))
TOLERATIONS = (
    {"key": "gpu", "operator": "Exists"},
    {"key": "gpu", "value": "false"},  # does not match gpu=true
    {"key": "spot", "operator": "Exists", "effect": "NoExecute"},
    {"operator": "Exists"},
)
AFFINITIES = (
    None,
    {"nodeSelectorTerms": [{"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]}]},
    {"nodeSelectorTerms": [{"matchExpressions": [{"key": "zone", "operator": "Exists"}]}]},
    {"nodeSelectorTerms": [{"matchFields": [{"key": "metadata.name", "operator": "NotIn", "values": ["n0"]}]}]},
)


def often(*values: object) -> st.SearchStrategy:
    """The first value about half the time, else any of the others (hypothesis leans to the
    first of sampled_from when it simplifies, so put the common case first)."""
    return st.one_of(st.just(values[0]), st.sampled_from(values))


@st.composite
def nodes(draw: st.DrawFn) -> tuple[list[Node], dict[str, dict[str, int]]]:
    out, free = [], {}
    for i in range(draw(st.integers(1, 4))):
        allocatable = {"cpu": draw(often(4, 6, 2, 1, 0)), GPU: draw(often(2, 4, 1, 0)), "pods": draw(often(3, 4, 1, 0))}
        zone = draw(often("a", "b", None))
        node = Node(
            f"n{i}",
            labels={"zone": zone} if zone else {},
            taints=draw(often([], [], *([t] for t in TAINTS), list(TAINTS[:2]))),
            unschedulable=draw(often(False, False, False, True)),
            ready=draw(often(True, True, True, False)),
            allocatable=allocatable,
        )
        out.append(node)
        free[node.name] = {r: n - draw(often(0, n // 2, n)) for r, n in allocatable.items()}  # minus used
    return out, free


@st.composite
def workloads(draw: st.DrawFn) -> list[PodGroup]:
    gangs = [Gang("g1", "zone"), Gang("g2", draw(often(None, "zone")))]
    groups = []
    budget = 6  # pods in all: the brute force tries nodes ** pods assignments
    for i in range(draw(st.integers(1, 3))):
        count = min(draw(often(1, 2, 3, 4)), budget - (2 - i))
        budget -= count
        constraints = Constraints(
            draw(often({}, {"zone": "b"})),
            draw(often(None, *AFFINITIES)),
            draw(often([], *([t] for t in TOLERATIONS), list(TOLERATIONS[:2]))),
        )
        requests = {r: draw(often(1, 0, 2)) for r in RESOURCES}
        gang = draw(often(gangs[0], None, gangs[1]))
        groups.append(PodGroup(f"g{i}", count, requests, constraints, gang))
    return groups


def _valid(groups: list[PodGroup], nodes: list[Node], free: dict, where: list[tuple[int, str]]) -> bool:
    """Whether pods (group index, node name) obey filters, capacity and gang topology."""
    by_name = {n.name: n for n in nodes}
    used: dict[str, Counter[str]] = {n.name: Counter() for n in nodes}
    domains: dict[str, set[str | None]] = {}
    for gi, name in where:
        g, node = groups[gi], by_name[name]
        if static_reason(node, g.constraints) is not None:
            return False
        used[name].update({r: n for r, n in g.requests.items() if n > 0})
        used[name]["pods"] += 1
        if g.gang is not None and g.gang.topology_key:
            domains.setdefault(g.gang.name, set()).add(node.labels.get(g.gang.topology_key))
    for name, u in used.items():
        if any(n > free[name].get(r, 0) for r, n in u.items()):
            return False
    return all(None not in values and len(values) == 1 for values in domains.values())


def _brute_force(groups: list[PodGroup], nodes: list[Node], free: dict) -> bool:
    pods = [gi for gi, g in enumerate(groups) for _ in range(g.count)]
    names = [n.name for n in nodes]
    return any(
        _valid(groups, nodes, free, list(zip(pods, choice, strict=True)))
        for choice in itertools.product(names, repeat=len(pods))
    )


def test_plans_are_valid_and_exact_on_small_inputs() -> None:
    seen: Counter[str] = Counter()

    @settings(max_examples=400, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow])
    @given(cluster=nodes(), groups=workloads(), policy=st.sampled_from(["pack", "spread"]))
    def check(cluster: tuple[list[Node], dict[str, dict[str, int]]], groups: list[PodGroup], policy: str) -> None:
        nodes_, free = cluster
        p = plan(groups, nodes_, free, policy=policy)
        seen["examples"] += 1
        assert p.exact  # small problems stay within the search budget
        exists = _brute_force(groups, nodes_, free)
        assert p.fits == exists
        assert (p.sets >= 1) == p.fits
        # the exhaustive search on its own (first-fit rarely leaves it anything to find here)
        fit = _Fit(groups, nodes_, free, policy)
        found = next((f for e in fit.domains if (f := fit.search(list(fit.free), e, [BUDGET])) is not None), None)
        assert (found is not None) == exists
        if found is not None:
            seen["the search alone finds a placement"] += 1
            names = [n.name for n in fit.nodes]
            by_group = {g.name: gi for gi, g in enumerate(groups)}
            where = [(by_group[g.name], names[i]) for g, c in zip(fit.groups, found, strict=True) for i in c.elements()]
            assert _valid(groups, nodes_, free, where)
        if p.fits:
            seen["fits"] += 1
            seen["fits with a topology key"] += any(g.gang and g.gang.topology_key for g in groups)
            assert p.shortfall == {}
            where = []
            for gi, g in enumerate(groups):
                assert sum(k for _, k in p.placement[g.name]) == g.count
                assert all(k > 0 for _, k in p.placement[g.name])
                where += [(gi, name) for name, k in p.placement[g.name] for _ in range(k)]
            assert _valid(groups, nodes_, free, where)  # no over-commit, no filter or topology broken
        else:
            seen["does not fit"] += 1
            assert p.placement == {} and p.sets == 0
            assert set(p.shortfall) == {g.name for g in groups}
            for g in groups:
                s = p.shortfall[g.name]
                assert 0 <= s.placeable <= g.count and s.reason

    check()
    at_least(
        seen,
        fits=0.1,
        **{"does not fit": 0.3, "fits with a topology key": 0.04, "the search alone finds a placement": 0.1},
    )
