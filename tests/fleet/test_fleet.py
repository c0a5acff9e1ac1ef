"""One service, three real clusters (registered by --cluster): the cluster list, the aggregate
list and its filters, one workload by name across the fleet, interpretations naming their
cluster, and answers equal to a single-cluster service's plus `cluster`."""

from __future__ import annotations

from typing import Any

import httpx

from ..cluster.apiserver import TOKENS, ApiServer
from ..cluster.fixtures import SERVICE_NS
from ..service.conftest import Server
from .conftest import NS, Fleet, fleet_args, settled, wait_synced


def resource_requests(srv: ApiServer, but: str | None = None) -> int:
    """Resource requests (list, get, create...; not watches, not /version or /metrics) the API
    server has served: what a read of the service would cost it (`but`: a resource not counted)."""
    total = 0.0
    for line in srv.call("GET", "/metrics", raw=True).decode().splitlines():
        if line.startswith("apiserver_request_total{") and 'resource=""' not in line \
                and 'verb="WATCH"' not in line and 'verb="CONNECT"' not in line \
                and (but is None or f'resource="{but}"' not in line):
            total += float(line.rsplit(" ", 1)[1])
    return int(total)


def rows(doc: dict[str, Any]) -> list[tuple[str, str]]:
    return sorted((r["cluster"], r["workload"]["name"]) for r in doc["items"])


def test_clusters_lists_every_cluster_without_credentials(fleet_service: Server, fleet: Fleet) -> None:
    with settled(fleet_service, ["a", "b", "c"]) as c:
        r = c.get("/clusters")
        assert r.status_code == 200
        items = {i["name"]: i for i in r.json()["items"]}
        assert sorted(items) == ["a", "b", "c"]
        for name, item in items.items():
            assert item["server"] == fleet.servers[name].url
            assert item["version"] == "v1.20.2"
            assert item["synced"] is True and item["available"] is True and item["lastError"] is None
            assert item["origin"] == ("home" if name == "a" else "flag")
        for name in ("b", "c"):  # these clusters hold only this module's workloads
            listed = c.get(f"/clusters/{name}/workloads").json()["items"]
            assert items[name]["workloads"] == len(listed) == len(fleet.made[name])
            assert items[name]["gpus"] == sum(x["gpus"] for x in listed) > 0
            assert items[name]["phases"] == {listed[0]["phase"]: {"workloads": len(listed),
                                                                  "gpus": items[name]["gpus"]}}
        one = c.get("/clusters/b").json()
        assert (one["name"], one["server"], one["workloads"]) == ("b", items["b"]["server"], items["b"]["workloads"])
        assert c.get("/clusters/nope").status_code == 404
        for token, *_ in TOKENS.values():
            assert token not in r.text


def test_aggregate_list_and_its_filters(fleet_service: Server, fleet: Fleet) -> None:
    with settled(fleet_service, ["a", "b", "c"]) as c:
        everything = c.get("/workloads", params={"namespace": NS}).json()
        assert rows(everything) == sorted((n, w) for n, ws in fleet.made.items() for w in ws)
        assert [x["name"] for x in everything["clusters"]] == ["a", "b", "c"]
        assert all(x["available"] and x["synced"] for x in everything["clusters"])
        assert everything["freshness"]["source"] == "model"
        only_b = c.get("/workloads", params={"namespace": NS, "cluster": "b"}).json()
        assert rows(only_b) == [("b", w) for w in sorted(fleet.made["b"])]
        assert c.get("/clusters/b/workloads", params={"namespace": NS}).json()["items"] == only_b["items"]
        b_and_c = c.get("/workloads", params={"namespace": NS, "cluster": "b,c"}).json()
        assert {x[0] for x in rows(b_and_c)} == {"b", "c"}
        assert c.get("/workloads", params={"namespace": NS, "kind": "PyTorchJob"}).json()["items"] == []
        missing = c.get("/workloads", params={"cluster": "nope"})
        assert missing.status_code == 404 and missing.headers["content-type"] == "application/problem+json"
        assert missing.json()["type"].endswith("cluster-not-found")


def test_one_workload_found_across_the_fleet(fleet_service: Server, fleet: Fleet) -> None:
    with settled(fleet_service, ["a", "b", "c"]) as c:
        one = c.get(f"/workloads/{NS}/train-b").json()
        assert one["cluster"] == "b" and one["workload"]["name"] == "train-b" and one["live"]["pods"]
        assert c.get(f"/clusters/b/workloads/{NS}/train-b").json()["cluster"] == "b"
        assert c.get(f"/clusters/a/workloads/{NS}/train-b").status_code == 404
        twins = c.get(f"/workloads/{NS}/shared")
        assert twins.status_code == 409, twins.text
        assert "b, c" in twins.json()["detail"]
        assert [(x["cluster"], x["kind"], x["name"]) for x in twins.json()["candidates"]] == \
            [("b", "JobSet", "shared"), ("c", "JobSet", "shared")]
        assert c.get(f"/workloads/{NS}/shared", params={"cluster": "c"}).json()["cluster"] == "c"
        assert c.get(f"/workloads/{NS}/nowhere").status_code == 404
        ref = {"ref": {"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet", "namespace": NS, "name": "shared",
                       "cluster": "c"}}
        got = c.post("/interpret", json=ref).json()
        assert got["cluster"] == "c" and got["workload"]["name"] == "shared"
        ambiguous = c.post("/interpret", json={"ref": {**ref["ref"], "cluster": None}})
        assert ambiguous.status_code == 409
        by_name = c.post("/interpret", json={"ref": {**ref["ref"], "name": "train-c", "cluster": None}}).json()
        assert by_name["cluster"] == "c"


def test_answers_are_a_single_cluster_services_plus_cluster(fleet_service: Server, fleet: Fleet) -> None:
    """What the fleet says of cluster b is what a service reading only b says, plus `cluster`."""
    single = Server("--kubeconfig", str(fleet.servers["b"].kubeconfig("service")), "--namespace", SERVICE_NS,
                    "--auth", "none", "--karta-resources", "false")
    try:
        wait_model(single)
        with settled(fleet_service, ["b"]) as c, single.client() as s:
            for name in fleet.made["b"]:
                mine, theirs = c.get(f"/clusters/b/workloads/{NS}/{name}").json(), s.get(f"/workloads/{NS}/{name}").json()
                assert mine.pop("cluster") == "b"
                mine.pop("freshness"), theirs.pop("freshness")
                assert "cluster" not in theirs  # a single-cluster service answers exactly as before
                assert mine == theirs
            mine_rows = c.get("/clusters/b/workloads", params={"namespace": NS}).json()["items"]
            their_rows = s.get("/workloads", params={"namespace": NS}).json()["items"]
            assert [{k: v for k, v in r.items() if k != "cluster"} for r in mine_rows] == their_rows
            assert s.get("/clusters").json()["items"][0]["name"] == "local"  # named after its context
    finally:
        single.stop()


def wait_model(s: Server) -> None:
    import time

    deadline = time.monotonic() + 60
    while not httpx.get(s.url + "/model").json().get("synced"):
        assert time.monotonic() < deadline
        time.sleep(0.1)


def test_reads_cost_the_api_servers_nothing(fleet_service: Server, fleet: Fleet) -> None:
    with settled(fleet_service, ["a", "b", "c"]) as c:
        c.get("/workloads")
    before = {n: resource_requests(s) for n, s in fleet.servers.items() if n != "a"}
    with httpx.Client(base_url=fleet_service.url, timeout=30) as c:
        for _ in range(20):
            assert c.get("/workloads", params={"namespace": NS}).status_code == 200
            assert c.get(f"/clusters/b/workloads/{NS}/train-b").status_code == 200
            assert c.get("/clusters").status_code == 200
    after = {n: resource_requests(s) for n, s in fleet.servers.items() if n != "a"}
    assert after == before


def test_streams_and_metrics_name_the_cluster(fleet_service: Server, fleet: Fleet) -> None:
    import json
    import threading
    import time

    events: list[dict[str, Any]] = []
    ready = threading.Event()

    def follow() -> None:
        with httpx.stream("GET", fleet_service.url + "/workloads", params={"namespace": NS, "watch": "true"},
                          timeout=30) as r:
            for line in r.iter_lines():
                ev = json.loads(line)
                events.append(ev)
                if ev.get("initialEventsEnd"):
                    ready.set()
                if ev.get("type") == "ADDED" and ev["object"]["workload"]["name"] == "late-c":
                    return

    t = threading.Thread(target=follow, daemon=True)
    t.start()
    assert ready.wait(20)
    initial = [e for e in events if e["type"] == "ADDED"]
    assert sorted((e["object"]["cluster"], e["object"]["workload"]["name"]) for e in initial) == \
        sorted((n, w) for n, ws in fleet.made.items() for w in ws)
    from ..cluster.test_workloads import _jobset_with_pods

    start = time.monotonic()
    _jobset_with_pods(fleet.kubectl["c"], NS, "late-c")
    fleet.made["c"].append("late-c")
    t.join(20)
    late = [e for e in events if e["type"] == "ADDED" and e["object"]["workload"]["name"] == "late-c"]
    assert late and late[0]["object"]["cluster"] == "c", events[-3:]
    assert time.monotonic() - start < 20
    with settled(fleet_service, ["a", "b", "c"]) as c:
        text = c.get("/metrics/workloads").text
        assert 'wlmap_workload_info{cluster="c",definition="jobset-x-k8s-io-jobset-v1alpha2",group="jobset.x-k8s.io",' \
               f'kind="JobSet",name="late-c",namespace="{NS}"}} 1.0' in text
        assert 'cluster="b"' in text and 'cluster="a"' in text
        own = c.get("/metrics").text
        assert 'wlmap_cluster_available{cluster="b"} 1.0' in own


def test_cluster_list_stream(fleet_service: Server) -> None:
    import json

    with httpx.stream("GET", fleet_service.url + "/clusters", params={"watch": "true"}, timeout=30) as r:
        got = []
        for line in r.iter_lines():
            ev = json.loads(line)
            got.append(ev)
            if ev.get("initialEventsEnd"):
                break
    assert sorted(e["object"]["name"] for e in got if e["type"] == "ADDED") == ["a", "b", "c"]


def test_contexts_route(fleet: Fleet, tmp_path: Any) -> None:
    """--kubeconfig-contexts all: a cluster per context, named after it; the current is the home."""
    kc = fleet.merged_kubeconfig(tmp_path / "merged")
    s = Server("--kubeconfig", str(kc), "--kubeconfig-contexts", "all", "--namespace", SERVICE_NS,
               "--auth", "none", "--karta-resources", "false", "--cluster-probe-interval", "0.5")
    try:
        wait_synced(s, ["a", "b", "c"])
        items = {i["name"]: i for i in httpx.get(s.url + "/clusters").json()["items"]}
        assert {n: i["origin"] for n, i in items.items()} == {"a": "home", "b": "context", "c": "context"}
        assert {n: i["server"] for n, i in items.items()} == {n: srv.url for n, srv in fleet.servers.items()}
        with settled(s, ["b"]) as c:
            assert c.get(f"/workloads/{NS}/train-b").json()["cluster"] == "b"
    finally:
        s.stop()


def test_bad_cluster_flags_fail_at_start(fleet: Fleet, tmp_path: Any) -> None:
    import subprocess
    import sys
    from pathlib import Path

    wlmap = str(Path(sys.executable).parent / "wlmap")
    for args, words in ((["--cluster", "b"], "expected NAME=KUBECONFIG"),
                        (["--cluster", f"B_x={fleet.servers['b'].kubeconfig('service')}"], "not a DNS"),
                        (["--cluster", f"b={tmp_path / 'none'}"], "no kubeconfig file"),
                        (["--cluster", f"b={fleet.servers['b'].kubeconfig('service')}",
                          "--cluster", f"b={fleet.servers['c'].kubeconfig('service')}"], "registered twice")):
        p = subprocess.run([wlmap, "serve", "--port", "0", *args], capture_output=True, text=True, timeout=30)
        assert p.returncode == 2, p.stderr
        assert words in p.stderr and "Traceback" not in p.stderr


def test_direct_reads_over_the_fleet(fleet: Fleet, fleet_service: Server) -> None:
    """--cache false: every read goes to the clusters themselves, with the model's answers."""
    s = Server(*fleet_args(fleet, "--auth", "none", "--cache", "false"))
    try:
        wait_synced(s, ["a", "b", "c"])
        with httpx.Client(base_url=s.url, timeout=30) as c, settled(fleet_service, ["a", "b", "c"]) as m:
            direct = c.get("/workloads", params={"namespace": NS}).json()
            model = m.get("/workloads", params={"namespace": NS}).json()
            assert direct["freshness"]["source"] == "direct" and model["freshness"]["source"] == "model"
            assert rows(direct) == rows(model)
            one = c.get(f"/clusters/c/workloads/{NS}/train-c").json()
            same = m.get(f"/clusters/c/workloads/{NS}/train-c").json()
            assert one.pop("freshness")["source"] == "direct"
            same.pop("freshness")
            assert one == same
            assert c.get(f"/workloads/{NS}/train-b").json()["cluster"] == "b"
            assert c.get(f"/workloads/{NS}/shared").status_code == 409
            assert c.get("/workloads", params={"watch": "true"}).status_code == 400  # streams need the model
    finally:
        s.stop()


def test_a_namespace_outside_the_models_is_read_from_each_cluster(fleet: Fleet) -> None:
    """With --watch-namespace, a list of another namespace is read from the API servers, in every
    cluster, as a one-cluster service does (not answered empty from models that do not hold it)."""
    s = Server(*fleet_args(fleet, "--auth", "none", "--watch-namespace", "elsewhere"))
    try:
        wait_synced(s, ["a", "b", "c"])
        got = httpx.get(s.url + "/workloads", params={"namespace": NS}, timeout=30).json()
        assert rows(got) == sorted((n, w) for n, ws in fleet.made.items() for w in ws)
        assert got["freshness"]["source"] == "direct"
        one = httpx.get(s.url + f"/workloads/{NS}/train-c", timeout=30).json()
        assert one["cluster"] == "c" and one["freshness"]["source"] == "direct"
    finally:
        s.stop()
