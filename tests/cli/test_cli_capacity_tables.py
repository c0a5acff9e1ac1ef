"""The tables of `wlmap capacity -o wide` and `wlmap fit` for rows the live tests do not make: a
node NotReady and cordoned, a pool without accelerators, a context withheld, a component
without instances."""

from __future__ import annotations

from app.capacity import answers
from app.cli.capacity import capacity_lines, fit_lines, node_lines


def _figures(alloc: dict[str, int], free: dict[str, int]) -> dict[str, dict[str, int]]:
    return {"allocatableValues": alloc, "freeValues": free}


def test_wide_row_of_a_cordoned_node_not_ready() -> None:
    node = _figures({"cpu": 4000, "memory": 2**34, "pods": 110}, {"cpu": 1500, "memory": 2**33}) | {
        "name": "cpu-1", "pool": None, "ready": False, "unschedulable": True, "taints": [{}, {}], "pods": 3}
    head, row = node_lines([{"cluster": "east", "nodes": [node]}])
    assert row.split() == ["east", "cpu-1", "<none>", "NotReady,SchedulingDisabled", "2", "-", "1500m/4", "8Gi/16Gi",
                           "3/110"]
    assert head.split()[3:5] == ["STATUS", "TAINTS"]


def test_pool_without_accelerators_and_the_current_context() -> None:
    pool = _figures({"cpu": 8000, "memory": 2**35}, {"cpu": 8000, "memory": 2**35}) | {
        "value": "", "nodes": 2, "nodeCounts": {"ready": 1}, "largestFree": {}, "largestFreeNodes": {}}
    _, row = capacity_lines([{"cluster": "", "capacity": {"pools": [pool]}}])
    assert row.split() == ["-", "<none>", "1/2", "-", "8/8", "32Gi/32Gi", "-"]


def test_fit_rows_withheld_and_without_instance() -> None:
    fits = {"cluster": "west", "available": True, "fits": True, "sets": 2, "message": "fits now",
            "placement": [{"component": "worker", "instance": None, "nodes": {"n1": 2, "n2": 1}}]}
    rows = answers.ranked([answers.withheld("east", "forbidden", "the kubeconfig user may not list nodes"), fits])
    _, west, east = fit_lines({"clusters": rows, "best": answers.best(rows)})
    assert west.split()[:5] == ["west", "(best)", "yes", "2", "worker:"] and "n1(2), n2(1)" in west
    assert east.split()[:4] == ["east", "?", "-", "-"] and east.endswith("the kubeconfig user may not list nodes")
