"""GET /fleet/workloads/{namespace}/{name} over the fleet's real API servers: the same JobSet in
clusters b and c in different states, one phase by the documented precedence, a part per
cluster, totals summed; and with --auth kubernetes a caller who may read it in one cluster only
sees that cluster's part (the others are left out silently)."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from app.engine.totals import add_totals
from app.service.models import FleetWorkload

from ..cluster.apiserver import TOKENS
from ..cluster.kubeobjects import reader_rbac
from ..cluster.util import eventually, fixture_object
from ..service.conftest import Server
from .conftest import NS, Fleet, fleet_args, settled
from .test_fleet_faults import wait_cluster_list

TESTDATA = "definitions/jobset.x-k8s.io/JobSet/v1alpha2/testdata/"
JS = ("jobset.x-k8s.io/v1alpha2", "JobSet")
NAME = "agg"  # made in b and c here, removed at the end (other modules count every workload of b and c)
ROOT = Path(__file__).resolve().parents[2]
RBAC = ("rbac.authorization.k8s.io/v1", "reader-dana")


@pytest.fixture(scope="module")
def made(fleet: Fleet) -> Iterator[None]:
    """What this module adds to the fleet, removed at the end."""
    try:
        yield
    finally:
        for cluster in "bc":
            fleet.kubectl[cluster].delete(*JS, NS, NAME)
        for kind in ("RoleBinding", "Role"):
            fleet.kubectl["c"].delete(RBAC[0], kind, NS, RBAC[1])


@pytest.fixture(scope="module")
def secured(fleet: Fleet, made: None) -> Iterator[Server]:
    """A fleet service that reads with each caller's rights; dana may read JobSets (not pods) in
    `fleet` on cluster c only."""
    for doc in reader_rbac("dana", NS, [("jobset.x-k8s.io", "jobsets")], pods=False):
        fleet.kubectl["c"].apply(doc)
    s = Server(*fleet_args(fleet, "--auth", "kubernetes"))
    try:
        wait_cluster_list(s, TOKENS["admin"][0])
        yield s
    finally:
        s.stop()


def place(fleet: Fleet, cluster: str, state: str) -> None:
    """The JobSet `agg` in `cluster`, as its controller leaves it in `state` (a catalog fixture)."""
    k = fleet.kubectl[cluster]
    k.delete(*JS, NS, NAME)  # a fresh object: no status left over from the state before
    obj, status = fixture_object(TESTDATA + f"{state}.yaml", NS, NAME)
    k.set_status(k.apply(obj), status)


def client(s: Server, user: str) -> httpx.Client:
    c = settled(s, ["a", "b", "c"])
    c.headers["Authorization"] = f"Bearer {TOKENS[user][0]}"
    return c


def phases(doc: dict[str, Any]) -> list[tuple[str, str]]:
    return [(p["cluster"], p["phase"]) for p in doc["clusters"]]


@pytest.mark.parametrize(("b", "c", "phase"), [
    ("running", "failed", "Failed"),           # any Failed
    ("completed", "completed", "Completed"),   # all Completed
    ("suspended", "completed", "Suspended"),   # Suspended, the rest Completed
    ("running", "completed", "Running"),       # Running and Completed
])
def test_one_phase_over_two_clusters(secured: Server, fleet: Fleet, b: str, c: str, phase: str) -> None:
    place(fleet, "b", b)
    place(fleet, "c", c)
    with client(secured, "admin") as h:
        r = h.get(f"/fleet/workloads/{NS}/{NAME}")
        assert r.status_code == 200, r.text
        doc = r.json()
        FleetWorkload.model_validate(doc)  # the answer is what openapi.json says
        assert phases(doc) == [("b", b.capitalize()), ("c", c.capitalize())]
        assert doc["status"] == {"phase": phase}
        assert doc["workload"] == {"apiVersion": JS[0], "kind": JS[1], "namespace": NS, "name": NAME, "uid": None}
        own = {n: h.get(f"/clusters/{n}/workloads/{NS}/{NAME}").json() for n in "bc"}
        assert [p["uid"] for p in doc["clusters"]] == [own[n]["workload"]["uid"] for n in "bc"]
        assert doc["warnings"] == []


def test_parts_count_each_clusters_pods_and_totals_add_up(secured: Server, fleet: Fleet) -> None:
    """`shared` (the fixture's JobSet with pods in b and c): each part says what that cluster's
    own answer says; totals are the sum; kind and apiVersion narrow as on GET."""
    with client(secured, "admin") as h:
        doc = h.get(f"/fleet/workloads/{NS}/shared").json()
        own = {n: h.get(f"/clusters/{n}/workloads/{NS}/shared").json() for n in "bc"}
        assert [p["cluster"] for p in doc["clusters"]] == ["b", "c"]
        for p in doc["clusters"]:
            mine = own[p["cluster"]]
            assert p["phase"] == mine["status"]["phase"]
            assert p["live"] == {"ready": mine["live"]["ready"], "desired": mine["live"]["desired"]}
            assert p["live"]["ready"] > 0 and p["totals"] == mine["totals"]
        assert doc["totals"] == add_totals(own["b"]["totals"], own["c"]["totals"])
        assert doc["totals"]["pods"] == 2 * own["b"]["totals"]["pods"]
        assert doc["status"]["phase"] == own["b"]["status"]["phase"]  # both alike
        narrowed = h.get(f"/fleet/workloads/{NS}/shared", params={"kind": "jobsets", "apiVersion": JS[0]})
        assert narrowed.json()["clusters"] == doc["clusters"]
        one = h.get(f"/fleet/workloads/{NS}/train-b").json()  # in one cluster: one part
        assert [p["cluster"] for p in one["clusters"]] == ["b"]
        for params in ({}, {"kind": "PyTorchJob"}):
            missing = h.get(f"/fleet/workloads/{NS}/{'nowhere' if not params else 'shared'}", params=params)
            assert missing.status_code == 404, missing.text
            assert missing.headers["content-type"] == "application/problem+json"
            assert missing.json()["type"].endswith("workload-not-found")


def test_a_caller_sees_the_parts_where_they_may_read_it(secured: Server, fleet: Fleet) -> None:
    """dana may read JobSets in c only (not pods): one part, c's, its ready count unknown; a
    workload held only where she may not look is not found; carol, who may look nowhere, gets
    the same 403 for what exists and what does not."""
    with client(secured, "dana") as h:
        r = eventually(lambda: (x := h.get(f"/fleet/workloads/{NS}/shared")).status_code == 200 and x,
                       timeout=20, what="dana's role in c")[0]
        doc = r.json()
        assert [p["cluster"] for p in doc["clusters"]] == ["c"], doc
        assert doc["clusters"][0]["live"] == {"ready": None, "desired": doc["totals"]["pods"]}
        assert doc["warnings"] == []  # b and a are left out silently
        assert h.get(f"/fleet/workloads/{NS}/train-b").status_code == 404
    with client(secured, "carol") as h:
        there, nowhere = h.get(f"/fleet/workloads/{NS}/shared"), h.get(f"/fleet/workloads/{NS}/no-such")
        assert there.status_code == 403, there.text
        assert there.json()["detail"] == nowhere.json()["detail"]
    assert httpx.get(secured.url + f"/fleet/workloads/{NS}/shared", timeout=10).status_code == 401


def wlmap(*args: str | Path) -> subprocess.CompletedProcess[str]:
    """The CLI of this checkout (PYTHONPATH: a worktree's code, not the installed one's)."""
    env = {"PATH": "/usr/bin:/bin", "HOME": "/nonexistent", "PYTHONPATH": str(ROOT)}
    r = subprocess.run([sys.executable, "-m", "app.cli.main", *map(str, args)], capture_output=True, text=True,
                       env=env, cwd=ROOT, timeout=120, check=False)
    assert "Traceback" not in r.stderr, r.stderr
    assert TOKENS["service"][0] not in r.stdout + r.stderr
    return r


def test_describe_all_contexts(secured: Server, fleet: Fleet, tmp_path: Path) -> None:
    """`wlmap describe jobset/agg --all-contexts` over contexts a, b, c: -o json is the service's
    answer (each context a cluster); the table gives the phase, then a row per context."""
    place(fleet, "b", "running")
    place(fleet, "c", "failed")
    kubeconfig = fleet.merged_kubeconfig(tmp_path / "kubeconfig")
    r = wlmap("describe", f"jobset/{NAME}", "-n", NS, "--all-contexts", "--kubeconfig", kubeconfig, "-o", "json")
    assert r.returncode == 0, r.stderr
    with client(secured, "admin") as h:
        assert json.loads(r.stdout) == h.get(f"/fleet/workloads/{NS}/{NAME}", params={"kind": "JobSet"}).json()
    r = wlmap("describe", "jobset", NAME, "-n", NS, "--all-contexts", "--kubeconfig", kubeconfig)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[0].split() == ["JobSet/agg", "namespace:", NS]
    assert "Phase: Failed   (over 2 clusters)" in lines
    rows = [line.split() for line in lines[lines.index("Phase: Failed   (over 2 clusters)") + 2:]]
    assert rows[0] == ["CLUSTER", "PHASE", "READY", "PODS", "GPUS"]
    assert [row[:2] for row in rows[1:3]] == [["b", "Running"], ["c", "Failed"]]
    assert rows[3][0] == "TOTAL" and rows[3][2] == str(2 * int(rows[1][3]))
    missing = wlmap("describe", "jobset/nowhere", "-n", NS, "--all-contexts", "--kubeconfig", kubeconfig)
    assert missing.returncode == 3 and 'jobset "nowhere" not found' in missing.stderr, missing.stderr
    assert "in any context (a, b, c)" in missing.stderr
