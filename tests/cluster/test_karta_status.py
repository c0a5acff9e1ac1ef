"""Karta resources report their own state (--manage-kartas true), on a real API server: the
conditions, index labels and Events the replica holding the Lease writes, and the hand-over
of that Lease between replicas.

The last test stops the module's manager replica: keep it last."""

from __future__ import annotations

import copy
import os
import signal
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
import yaml

from ..service.conftest import Server
from .apiserver import ApiServer
from .conftest import SERVICE_NS
from .kubeobjects import Kubectl, crd
from .util import BATCHTASK_DEF, definition_text, eventually, load

KARTA_API = "run.ai/v1alpha1"
LEASE = f"/apis/coordination.k8s.io/v1/namespaces/{SERVICE_NS}/leases/workload-map-karta-manager"
BATCHTASK = load("examples/definitions/acme.example.com/BatchTask/v1/testdata/running.yaml")
RBAC = "rbac.authorization.k8s.io/v1"
USER = {"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "wlmap-service"}


def karta(name: str, kind: str = "BatchTask", group: str = "acme.example.com") -> dict[str, Any]:
    doc = yaml.safe_load(definition_text(BATCHTASK_DEF))
    doc["metadata"] = {"name": name}
    doc["spec"]["structureDefinition"]["rootComponent"]["kind"] = {"group": group, "version": "v1", "kind": kind}
    return doc


def invalid(doc: dict[str, Any]) -> dict[str, Any]:
    bad = copy.deepcopy(doc)
    del bad["spec"]["structureDefinition"]["rootComponent"]["statusDefinition"]
    return bad


def manager_rbac() -> list[dict[str, Any]]:
    """What the chart grants with kartas.manage (tests/ship checks the chart's own rules)."""
    def bind(kind: str, name: str, ns: str | None) -> list[dict[str, Any]]:
        meta = {"name": name, **({"namespace": ns} if ns else {})}
        ref = {"apiGroup": "rbac.authorization.k8s.io", "kind": kind, "name": name}
        return [{"apiVersion": RBAC, "kind": f"{kind}Binding", "metadata": meta, "roleRef": ref, "subjects": [USER]}]

    return [
        {"apiVersion": RBAC, "kind": "ClusterRole", "metadata": {"name": "wlmap-karta-manager"},
         "rules": [{"apiGroups": ["run.ai"], "resources": ["kartas", "kartas/status"], "verbs": ["patch"]}]},
        *bind("ClusterRole", "wlmap-karta-manager", None),
        {"apiVersion": RBAC, "kind": "Role", "metadata": {"name": "wlmap-karta-manager", "namespace": SERVICE_NS},
         "rules": [{"apiGroups": ["coordination.k8s.io"], "resources": ["leases"], "verbs": ["create"]},
                   {"apiGroups": ["coordination.k8s.io"], "resources": ["leases"],
                    "resourceNames": ["workload-map-karta-manager"], "verbs": ["get", "update"]}]},
        *bind("Role", "wlmap-karta-manager", SERVICE_NS),
        {"apiVersion": RBAC, "kind": "Role", "metadata": {"name": "wlmap-karta-events", "namespace": "default"},
         "rules": [{"apiGroups": [""], "resources": ["events"], "verbs": ["create"]}]},
        *bind("Role", "wlmap-karta-events", "default"),
    ]


def replica(apiserver: ApiServer) -> Server:
    return Server("--kubeconfig", str(apiserver.kubeconfig("service")), "--namespace", SERVICE_NS, "--auth", "none",
                  "--cache", "false", "--manage-kartas", "true")


@pytest.fixture(scope="module")
def manager(apiserver: ApiServer, kubectl: Kubectl) -> Iterator[Server]:
    docs = manager_rbac()
    for doc in docs:
        kubectl.apply(doc)
    s = replica(apiserver)
    eventually(lambda: manager_of(s)["leading"], timeout=20, what="the first replica holds the Lease")
    yield s
    s.stop()
    for doc in reversed(docs):
        meta = doc["metadata"]
        kubectl.delete(doc["apiVersion"], doc["kind"], meta.get("namespace"), meta["name"])


@pytest.fixture
def made(kubectl: Kubectl, manager: Server) -> Iterator[list[tuple[str, str, str | None, str]]]:
    """Objects to delete after the test; the next test starts once the manager has seen them go."""
    out: list[tuple[str, str, str | None, str]] = []
    yield out
    for api, kind, ns, name in reversed(out):
        kubectl.delete(api, kind, ns, name)
    gone = {f"karta:{name}" for _, kind, _, name in out if kind == "Karta"}
    if manager.proc.poll() is None:
        eventually(lambda: not gone & {d["origin"] for d in httpx.get(manager.url + "/definitions").json()["items"]},
                   what="deleted Kartas gone from the service")


def create(kubectl: Kubectl, made: list, doc: dict[str, Any]) -> None:
    kubectl.apply(doc)
    made.append((doc["apiVersion"], doc["kind"], None, doc["metadata"]["name"]))


def manager_of(s: Server) -> dict[str, Any]:
    sources = httpx.get(s.url + "/definitions", timeout=10).json()["sources"]
    return next(x["kartaManager"] for x in sources if x["name"] == "cluster")


def conds(kubectl: Kubectl, name: str) -> dict[str, dict[str, Any]]:
    obj = kubectl.get(KARTA_API, "Karta", None, name)
    return {c["type"]: c for c in (obj.get("status") or {}).get("conditions") or []}


def states(kubectl: Kubectl, name: str) -> dict[str, str]:
    return {t: c["status"] for t, c in conds(kubectl, name).items()}


def events(apiserver: ApiServer, name: str) -> list[dict[str, Any]]:
    q = f"fieldSelector=involvedObject.name%3D{name},involvedObject.kind%3DKarta"
    return apiserver.call("GET", f"/api/v1/namespaces/default/events?{q}")["items"]


def test_valid_karta_is_ready_and_labelled_within_2_seconds(manager: Server, kubectl: Kubectl,
                                                            apiserver: ApiServer, made: list) -> None:
    doc = karta("ks-batchtask")
    create(kubectl, made, doc)
    want = {"Validated": "True", "CRDExists": "True", "Ready": "True", "Conflict": "False"}
    # (how soon: benchmarks/karta_status_bench.py; a test under a loaded CI only waits)
    eventually(lambda: states(kubectl, "ks-batchtask") == want, what="conditions written")
    obj, _ = eventually(lambda: (o := kubectl.get(KARTA_API, "Karta", None, "ks-batchtask"))["metadata"].get("labels")
                        and o, what="the labels written (a patch of their own, after the status)")
    assert obj["metadata"]["labels"] == {"run.ai/karta-group": "acme.example.com", "run.ai/karta-version": "v1",
                                         "run.ai/karta-kind": "BatchTask"}
    c = conds(kubectl, "ks-batchtask")
    assert {t: x["reason"] for t, x in c.items()} == {"Validated": "ValidationSucceeded", "CRDExists": "CRDFound",
                                                      "Ready": "Ready", "Conflict": "NoConflict"}
    assert all(x["observedGeneration"] == obj["metadata"]["generation"] for x in c.values())
    ev, _ = eventually(lambda: events(apiserver, "ks-batchtask"), what="an Event on the Karta")
    assert [(e["type"], e["reason"]) for e in ev] == [("Normal", "Validated")]

    # An invalid edit: Validated False with the validator's text; the last good version serves on.
    kubectl.apply(invalid(doc))
    eventually(lambda: states(kubectl, "ks-batchtask")["Validated"] == "False", what="Validated False")
    c2 = conds(kubectl, "ks-batchtask")
    assert c2["Validated"]["reason"] == "ValidationFailed"
    assert c2["Validated"]["message"] == "root component must have status definition"
    assert c2["Ready"]["status"] == "False"
    assert c2["Ready"]["message"] == ("Validated and CRDExists must both be True; the last valid version of this "
                                      "Karta stays in service")
    assert c2["CRDExists"]["lastTransitionTime"] == c["CRDExists"]["lastTransitionTime"]  # it did not flip
    assert c2["Validated"]["observedGeneration"] == obj["metadata"]["generation"] + 1
    r = httpx.post(manager.url + "/interpret", json=BATCHTASK, timeout=30).json()
    assert r["definition"]["source"] == "cluster" and r["status"]["phase"] == "Running"
    entry = next(d for d in httpx.get(manager.url + "/definitions").json()["items"] if d["name"] == "ks-batchtask"
                 and d["state"] != "invalid")
    assert entry["state"] == "last-good"
    ev, _ = eventually(lambda: [e for e in events(apiserver, "ks-batchtask") if e["reason"] == "ValidationFailed"],
                       what="a Warning Event")
    assert ev[0]["type"] == "Warning" and ev[0]["message"] == "root component must have status definition"

    kubectl.apply(doc)  # fixed again
    eventually(lambda: states(kubectl, "ks-batchtask") == want, what="valid again")


def test_kind_without_crd_turns_ready_when_the_crd_comes(manager: Server, kubectl: Kubectl,
                                                         apiserver: ApiServer, made: list) -> None:
    create(kubectl, made, karta("ks-late", kind="LateTask", group="late.example.com"))
    eventually(lambda: states(kubectl, "ks-late").get("CRDExists") == "False", what="CRDExists False")
    c = conds(kubectl, "ks-late")
    assert c["Validated"]["status"] == "True" and c["Ready"]["status"] == "False"
    assert c["CRDExists"]["reason"] == "CRDNotFound"
    assert c["CRDExists"]["message"] == "CRD for late.example.com/LateTask not found or does not serve version v1"
    ev, _ = eventually(lambda: events(apiserver, "ks-late"), what="an Event")
    assert [(e["type"], e["reason"]) for e in ev] == [("Warning", "CRDMissing")]

    kubectl.apply(crd("late.example.com", "LateTask", "latetasks", ["v1"]))
    made.insert(0, ("apiextensions.k8s.io/v1", "CustomResourceDefinition", None, "latetasks.late.example.com"))
    eventually(lambda: states(kubectl, "ks-late") == {"Validated": "True", "CRDExists": "True", "Ready": "True",
                                                      "Conflict": "False"}, timeout=15, what="CRD found")
    assert conds(kubectl, "ks-late")["CRDExists"]["reason"] == "CRDFound"
    eventually(lambda: [e for e in events(apiserver, "ks-late") if e["reason"] == "Validated"], what="Event")

    kubectl.delete("apiextensions.k8s.io/v1", "CustomResourceDefinition", None, "latetasks.late.example.com")
    eventually(lambda: states(kubectl, "ks-late")["CRDExists"] == "False", timeout=15, what="CRD gone")
    assert states(kubectl, "ks-late")["Ready"] == "False"


def test_status_edited_by_someone_else_is_put_right(manager: Server, kubectl: Kubectl, made: list) -> None:
    create(kubectl, made, karta("ks-foreign"))
    want = {"Validated": "True", "CRDExists": "True", "Ready": "True", "Conflict": "False"}
    eventually(lambda: states(kubectl, "ks-foreign") == want, what="status written")
    good = conds(kubectl, "ks-foreign")
    forged = [dict(c, status="False", reason="Forged") for c in good.values()]
    kubectl.set_status(kubectl.get(KARTA_API, "Karta", None, "ks-foreign"), {"conditions": forged})
    eventually(lambda: states(kubectl, "ks-foreign") == want, what="status put right")
    kubectl.patch(kubectl.get(KARTA_API, "Karta", None, "ks-foreign"),
                  {"metadata": {"labels": {"run.ai/karta-kind": "Other"}}})
    eventually(lambda: kubectl.get(KARTA_API, "Karta", None, "ks-foreign")["metadata"]["labels"]
               ["run.ai/karta-kind"] == "BatchTask", what="label put right")


def test_karta_shadowed_by_a_configmap_is_not_in_force(manager: Server, kubectl: Kubectl, made: list) -> None:
    create(kubectl, made, karta("ks-shadowed"))
    eventually(lambda: states(kubectl, "ks-shadowed").get("Ready") == "True", what="in force")
    cm = {"apiVersion": "v1", "kind": "ConfigMap",
          "metadata": {"name": "ks-shadow", "namespace": SERVICE_NS,
                       "labels": {"workload-map.dev/definitions": "true"}},
          "data": {"batchtask.yaml": definition_text(BATCHTASK_DEF)}}
    kubectl.apply(cm)
    made.append(("v1", "ConfigMap", SERVICE_NS, "ks-shadow"))
    eventually(lambda: states(kubectl, "ks-shadowed")["Ready"] == "False", what="shadowed")
    ready = conds(kubectl, "ks-shadowed")["Ready"]
    assert ready["message"] == (
        'valid and served, but not in force: the service uses definition "acme-example-com-batchtask-v1" from '
        f"configmap configmap:{SERVICE_NS}/ks-shadow/batchtask.yaml, which takes precedence over Karta resources")
    assert states(kubectl, "ks-shadowed")["Conflict"] == "False"  # no other *Karta* names the kind


def test_two_kartas_for_one_kind_report_the_conflict(manager: Server, kubectl: Kubectl, made: list) -> None:
    create(kubectl, made, karta("ks-dup-a"))
    create(kubectl, made, invalid(karta("ks-dup-b")))  # names the kind, but is not valid: a serves it

    kind = 'group "acme.example.com" version "v1" kind "BatchTask"'

    used = 'the service uses Karta "ks-dup-a", the only valid one'
    want = {"ks-dup-a": f'Karta "ks-dup-b" also names {kind}; {used}',
            "ks-dup-b": f'Karta "ks-dup-a" also names {kind}; {used}'}

    def both_conflict() -> bool:  # (while the two are loaded one after the other, a passing state may show)
        return all(conds(kubectl, n).get("Conflict", {}).get("message") == m for n, m in want.items())

    eventually(both_conflict, what="Conflict on both, naming the one used")
    a, b = conds(kubectl, "ks-dup-a"), conds(kubectl, "ks-dup-b")
    assert a["Conflict"]["reason"] == "DuplicateKind" and a["Ready"]["status"] == "True"
    assert b["Validated"]["status"] == "False" and b["Ready"]["status"] == "False"

    # A second valid one: two valid definitions of one source are ambiguous, neither is used.
    create(kubectl, made, karta("ks-dup-c"))
    eventually(lambda: states(kubectl, "ks-dup-a")["Ready"] == "False", what="a no longer in force")
    why = ('the service uses none of them: "ks-dup-a", "ks-dup-c" are valid definitions of the same source, which '
           "is ambiguous, so requests for this kind fail until all but one are removed or changed")
    assert conds(kubectl, "ks-dup-a")["Conflict"]["message"] == f'Karta "ks-dup-b", "ks-dup-c" also names {kind}; {why}'
    eventually(lambda: conds(kubectl, "ks-dup-c").get("Conflict", {}).get("message") ==
               f'Karta "ks-dup-a", "ks-dup-b" also names {kind}; {why}', what="c names a and b")
    c = conds(kubectl, "ks-dup-c")
    assert c["Ready"]["status"] == "False" and c["Ready"]["message"] == f"valid and served, but not in force: {why}"

    kubectl.delete(KARTA_API, "Karta", None, "ks-dup-c")
    kubectl.delete(KARTA_API, "Karta", None, "ks-dup-b")
    eventually(lambda: states(kubectl, "ks-dup-a") == {"Validated": "True", "CRDExists": "True", "Ready": "True",
                                                       "Conflict": "False"}, what="a alone again")


def test_nothing_is_written_when_nothing_changed(manager: Server, kubectl: Kubectl, made: list) -> None:
    names = ["ks-quiet-1", "ks-quiet-2"]
    for n in names:
        create(kubectl, made, karta(n, kind=f"Quiet{n[-1]}"))
    eventually(lambda: all(states(kubectl, n).get("Validated") == "True" and
                           kubectl.get(KARTA_API, "Karta", None, n)["metadata"].get("labels") for n in names),
               what="status and labels written")
    time.sleep(1.0)  # the watch events of those writes come back and are found to need nothing
    before = {n: kubectl.get(KARTA_API, "Karta", None, n)["metadata"]["resourceVersion"] for n in names}
    writes = manager_of(manager)["writes"]
    time.sleep(3.0)  # a quiet period
    after = {n: kubectl.get(KARTA_API, "Karta", None, n)["metadata"]["resourceVersion"] for n in names}
    assert after == before
    assert manager_of(manager)["writes"] == writes


def test_one_replica_writes_and_hands_over_when_it_stops(manager: Server, apiserver: ApiServer,
                                                         kubectl: Kubectl, made: list) -> None:
    """Last in the module: it stops the module's replica."""
    second = replica(apiserver)
    third: Server | None = None
    try:
        assert manager_of(manager)["leading"] and not manager_of(second)["leading"]
        assert apiserver.call("GET", LEASE)["spec"]["holderIdentity"] == manager_of(manager)["holder"]
        doc = karta("ks-handover")
        create(kubectl, made, doc)
        eventually(lambda: states(kubectl, "ks-handover").get("Ready") == "True", what="first replica writes")
        time.sleep(1.0)
        assert manager_of(second)["writes"] == {"status": 0, "labels": 0, "events": 0}  # the follower never wrote

        manager.stop()  # SIGTERM: the Lease is released, the follower takes it at its next look
        eventually(lambda: apiserver.call("GET", LEASE)["spec"].get("holderIdentity") in (None, "",
                   manager_of(second)["holder"]), timeout=5, what="the Lease released")
        _, took = eventually(lambda: manager_of(second)["leading"], timeout=10, what="the follower leads")
        assert took < 10  # released: well before the 15 s the Lease would take to expire
        kubectl.apply(invalid(doc))
        eventually(lambda: states(kubectl, "ks-handover")["Validated"] == "False",
                   what="the new leader keeps status current")
        assert manager_of(second)["writes"]["status"] >= 1

        # A leader that stops renewing (killed, no release) is replaced once its Lease expires.
        third = replica(apiserver)
        assert not manager_of(third)["leading"]
        os.kill(second.proc.pid, signal.SIGKILL)
        second.proc.wait(10)
        _, took = eventually(lambda: manager_of(third)["leading"], timeout=30, what="the Lease expires")
        assert took > 5  # it waited for the expiry
        kubectl.apply(doc)
        eventually(lambda: states(kubectl, "ks-handover")["Validated"] == "True", what="third replica writes")
    finally:
        for s in (second, third):
            if s is not None:
                s.stop()

