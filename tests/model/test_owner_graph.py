"""The incremental owner index gives what a walk from scratch gives, whatever the event order.

Random clusters of owner chains (workload -> intermediate owners -> pods, with re-created owners
of the same name under a new UID, non-controller references, chains longer than the 6-hop
limit) are fed to the graph as events in random order, with deletions and re-additions; after
every step the graph's members, chains and nesting must equal a fresh computation."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from app.model.owners import MAX_HOPS, OwnerGraph
from app.model.records import Obj

COVERED = {("jobset.x-k8s.io", "JobSet"), ("batch", "Job"), ("", "Pod"), ("apps", "Deployment")}
KINDS = [("jobset.x-k8s.io", "JobSet"), ("batch", "Job"), ("apps", "ReplicaSet"), ("apps", "Deployment"),
         ("example.com", "Wrapper")]


def obj(group: str, kind: str, name: str, uid: str, owners: tuple = (), ns: str = "ns", ready: bool = False) -> Obj:
    return Obj(group, kind, ns, name, uid, "1", owners, None, None, ready)


def ref(o: Obj, controller: bool = True) -> tuple:
    return (o.group, o.kind, o.name, o.uid, controller, "v1")


def fresh(objs: dict[str, Obj]) -> tuple[dict[str, frozenset], dict[str, bool]]:
    """Chains and nesting computed from scratch (the rules of cluster/owners.py)."""
    by_uid = dict(objs)

    def owner(level: Obj, r: tuple) -> Obj | None:
        o = by_uid.get(r[3])
        if o is None or (o.group, o.kind, o.name) != (r[0], r[1], r[2]):
            return None
        if o.namespace and o.namespace != level.namespace:
            return None
        return o

    chains, nested = {}, {}
    for o in objs.values():
        if o.kind == "Pod":
            uids, level = {o.uid}, o
            for _ in range(MAX_HOPS + 1):
                uids |= {r[3] for r in level.owners}
                c = level.controller
                nxt = owner(level, c) if c else None
                if nxt is None:
                    break
                level = nxt
            chains[o.uid] = frozenset(uids)
        if (o.group, o.kind) in COVERED:
            level, n = o, False
            for _ in range(MAX_HOPS):
                c = level.controller
                if c is None:
                    break
                if (c[0], c[1]) in COVERED:
                    n = True
                    break
                nxt = owner(level, c)
                if nxt is None:
                    break
                level = nxt
            nested[o.uid] = n
    return chains, nested


@st.composite
def clusters(draw: st.DrawFn) -> list[Obj]:
    objs: list[Obj] = []
    n = draw(st.integers(1, 12))
    for i in range(n):
        g, k = draw(st.sampled_from(KINDS))
        owners: tuple = ()
        if objs and draw(st.booleans()):
            parent = draw(st.sampled_from(objs))
            owners = (ref(parent, controller=draw(st.booleans()) or True),)
            if draw(st.integers(0, 5)) == 0:  # an owner re-created under another UID: the reference is stale
                owners = ((parent.group, parent.kind, parent.name, f"stale-{i}", True, "v1"),)
            if draw(st.integers(0, 4)) == 0:  # and a second, non-controller reference
                other = draw(st.sampled_from(objs))
                owners += (ref(other, controller=False),)
        objs.append(obj(g, k, f"{k.lower()}-{i % 4}", f"u{i}", owners))
    for j in range(draw(st.integers(0, 10))):
        owners = ()
        if draw(st.booleans()):
            parent = draw(st.sampled_from(objs))
            owners = (ref(parent),)
        objs.append(obj("", "Pod", f"pod-{j}", f"p{j}", owners, ready=draw(st.booleans())))
    return objs


def check(g: OwnerGraph, live: dict[str, Obj]) -> None:
    chains, nested = fresh(live)
    assert {p: g.chain(p) for p in chains} == chains
    assert {u: g.nested.get(u, False) for u in nested} == nested
    members: dict[str, set[str]] = {}
    for p, c in chains.items():
        for w in c:
            members.setdefault(w, set()).add(p)
    assert {w: set(g.member_uids(w)) for w in members} == members
    assert set(g.members) <= set(members)  # nothing left behind for a workload without pods
    for w in members:
        assert g.ready_count(w) == sum(1 for p in members[w] if live[p].ready)


@settings(max_examples=300, deadline=None)
@given(clusters(), st.data())
def test_any_event_order_gives_the_fresh_answer(objs: list[Obj], data: st.DataObject) -> None:
    g = OwnerGraph(lambda gr, k: (gr, k) in COVERED, lambda *a: None)
    live: dict[str, Obj] = {}
    order = data.draw(st.permutations(objs))
    for o in order:
        live[o.uid] = o
        g.put(o, pod=o.kind == "Pod", workload=(o.group, o.kind) in COVERED)
        check(g, live)
    # deletions and re-additions, in random order
    for o in data.draw(st.lists(st.sampled_from(objs), max_size=10)):
        if o.uid in live:
            del live[o.uid]
            g.drop(o.uid)
        else:
            live[o.uid] = o
            g.put(o, pod=o.kind == "Pod", workload=(o.group, o.kind) in COVERED)
        check(g, live)


def test_a_pod_before_its_owners_is_attached_when_they_arrive() -> None:
    js = obj("jobset.x-k8s.io", "JobSet", "train", "js")
    job = obj("batch", "Job", "train-0", "job", (ref(js),))
    pod = obj("", "Pod", "train-0-0", "pod", (ref(job),), ready=True)
    wanted: list[tuple] = []
    g = OwnerGraph(lambda gr, k: (gr, k) in COVERED, lambda *a: wanted.append(a))
    g.put(pod, pod=True, workload=True)
    assert g.chain("pod") == {"pod", "job"} and g.nested["pod"] is True  # its Job is covered: nested already
    assert ("batch", "v1", "Job") in wanted  # the model is asked to hold the owner kind
    affected = g.put(job, pod=False, workload=True)
    assert "job" in affected and g.chain("pod") == {"pod", "job", "js"}
    affected = g.put(js, pod=False, workload=True)
    assert g.ready_count("js") == 1 and g.ready_count("job") == 1
    assert g.drop("job") >= {"js", "job"}
    assert g.chain("pod") == {"pod", "job"} and g.ready_count("js") == 0


def test_walks_stop_after_six_hops() -> None:
    chain = [obj("example.com", "Wrapper", "w0", "w0")]
    for i in range(1, 9):
        chain.append(obj("example.com", "Wrapper", f"w{i}", f"w{i}", (ref(chain[-1]),)))
    pod = obj("", "Pod", "p", "p", (ref(chain[-1]),))
    g = OwnerGraph(lambda gr, k: False, lambda *a: None)
    for o in chain + [pod]:
        g.put(o, pod=o.kind == "Pod", workload=False)
    check(g, {o.uid: o for o in chain + [pod]})
    assert "w0" not in g.chain("p") and "w2" in g.chain("p")
