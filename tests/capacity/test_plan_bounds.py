"""The plan's work bounds (app/capacity/plan.py: WORK, SETS_WORK), and copies counted with the
rankings kept from one copy to the next equal copies placed one at a time from scratch."""

from __future__ import annotations

import random

import pytest

from app.capacity import plan as plan_module
from app.capacity.filters import Constraints
from app.capacity.nodes import Node
from app.capacity.plan import Gang, PodGroup, plan

GPU = "nvidia.com/gpu"


def _nodes(n: int, gpus: int = 8) -> tuple[list[Node], dict[str, dict[str, int]]]:
    nodes = [
        Node(f"n{i:03d}", labels={"rack": f"r{i % 4}"}, allocatable={"cpu": 8000, GPU: gpus, "pods": 110})
        for i in range(n)
    ]
    return nodes, {nd.name: dict(nd.allocatable) for nd in nodes}


def test_copies_past_the_work_bound_stop_and_sets_is_a_lower_bound(monkeypatch: pytest.MonkeyPatch) -> None:
    nodes, free = _nodes(20)
    one = [PodGroup("s", 1, {"cpu": 10})]
    whole = plan(one, nodes, free)
    assert whole.sets == 1000 and not whole.sets_bounded
    monkeypatch.setattr(plan_module, "SETS_WORK", 50)
    cut = plan(one, nodes, free)
    assert cut.fits and cut.exact and cut.sets_bounded and 1 <= cut.sets < 1000
    assert cut.placement == whole.placement  # the first copy is the same


def test_a_verdict_past_the_work_bound_is_not_proven(monkeypatch: pytest.MonkeyPatch) -> None:
    nodes, free = _nodes(40)
    monkeypatch.setattr(plan_module, "WORK", 10)
    p = plan([PodGroup("g", 2, {GPU: 8})], nodes, free)
    assert not p.fits and not p.exact and p.sets == 0


def _one_at_a_time(groups: list[PodGroup], nodes: list[Node], free: dict[str, dict[str, int]], policy: str) -> int:
    """Copies placed one after another, each a fresh plan on what the earlier ones left."""
    left = {k: dict(v) for k, v in free.items()}
    req = {g.name: g.requests for g in groups}
    sets = 0
    while sets < 1000:
        p = plan(groups, nodes, left, policy=policy, max_sets=1)
        if not p.fits:
            return sets
        sets += 1
        for g, placed in p.placement.items():
            for node, k in placed:
                f = left[node]
                f["pods"] = f.get("pods", 0) - k
                for r, n in req[g].items():
                    if n > 0 and r != "pods":
                        f[r] = f.get(r, 0) - n * k
    return sets


@pytest.mark.parametrize("seed", range(4))
def test_sets_with_kept_rankings_equal_copies_placed_one_at_a_time(seed: int) -> None:
    rng = random.Random(seed)
    tolerate = Constraints(tolerations=[{"operator": "Exists"}])
    for _ in range(40):
        nodes, free = _nodes(rng.randint(5, 40), rng.choice([4, 8]))
        for f in free.values():
            f[GPU] -= rng.choice([0, 0, 2, 4])
            f["cpu"] -= rng.choice([0, 1000, 4000])
        gangs = (None, Gang("g"), Gang("t", "rack"))
        groups = [
            PodGroup(
                f"g{j}",
                rng.randint(1, 6),
                {"cpu": rng.choice([0, 500, 1000]), GPU: rng.choice([0, 1, 2, 4])},
                tolerate,
                rng.choice(gangs),
            )
            for j in range(rng.randint(1, 3))
        ]
        policy = rng.choice(["pack", "spread"])
        p = plan(groups, nodes, free, policy=policy)
        assert not p.sets_bounded
        assert p.sets == _one_at_a_time(groups, nodes, free, policy)
