"""The owner index, maintained incrementally from watch events.

Same rules as a direct read (cluster/owners.py, docs/karta-semantics.md "Live pods"): a pod belongs to every
UID named by any owner reference along its controller chain (and to itself), walking only
`controller: true` references, checking name and UID at every hop, at most 6 hops; an owner
that is not in the model ends the walk.  A workload object is nested (part of another
workload) when its controller chain reaches a kind that has a definition.

Every walk records which UIDs it looked up (found or not).  When an object with one of those
UIDs appears, changes or goes, exactly the objects whose walks touched it are walked again:
pods that arrived before their Job, a ReplicaSet re-created under a new UID, a Deployment
deleted from under its pods.  Membership (`members`) and readiness follow from the walks.

Per-pod entries are kept small (a kept pod costs its record plus these): chains and walks as
tuples (a set costs 216 bytes however few it holds), and a pod is not listed as a member of
itself (`member_uids` adds it back).
"""

from __future__ import annotations

from collections.abc import Callable

from .records import Obj, Owner

MAX_HOPS = 6


class OwnerGraph:
    def __init__(self, covered: Callable[[str, str], bool], wanted: Callable[[str, str, str], None]):
        self.covered = covered  # (group, kind) has a definition
        self.wanted = wanted  # (group, version, kind): an owner kind the model does not hold yet
        self.by_uid: dict[str, Obj] = {}
        self.chains: dict[str, tuple[str, ...]] = {}  # pod uid -> workload uids it belongs to (itself too)
        self.members: dict[str, set[str]] = {}  # workload uid -> pod uids (other than itself)
        self.nested: dict[str, bool] = {}  # workload object uid -> part of another workload
        self._touched: dict[str, set[str]] = {}  # uid looked up -> uids whose walk looked it up
        self._walked: dict[str, tuple[str, ...]] = {}  # uid -> uids its own walk looked up
        self.pods: set[str] = set()
        self.workloads: set[str] = set()
        self.children: dict[str, set[str]] = {}  # controller uid -> uids of the objects it controls
        # workload uid -> its Ready pods, kept as chains and readiness change (a pod event costs
        # its chain's length, not its workload's size); `_counted`: the pods counted, in which chain
        self.ready: dict[str, int] = {}
        self._counted: dict[str, tuple[str, ...]] = {}

    # -- changes ---------------------------------------------------------------------------
    def put(self, obj: Obj, *, pod: bool, workload: bool) -> set[str]:
        """Add or replace an object; returns the workload UIDs whose pods or nesting changed."""
        prev = self.by_uid.get(obj.uid)
        if prev is not None:
            self._unlink(prev)
        self.by_uid[obj.uid] = obj
        ctrl = obj.controller
        if ctrl is not None:
            self.children.setdefault(ctrl[3], set()).add(obj.uid)
        if pod:
            self.pods.add(obj.uid)
        if workload:
            self.workloads.add(obj.uid)
        return self._rewalk({obj.uid} | self._touched.get(obj.uid, set()))

    def drop(self, uid: str) -> set[str]:
        obj = self.by_uid.pop(uid, None)
        if obj is None:
            return set()
        self._unlink(obj)
        affected = self._rewalk(set(self._touched.get(uid, set())) - {uid})
        self.pods.discard(uid)
        self.workloads.discard(uid)
        affected |= self._forget(uid)
        self.nested.pop(uid, None)
        affected.add(uid)
        return affected

    def rewalk_all(self) -> set[str]:
        """After the set of covered kinds changed (definitions came or went)."""
        return self._rewalk(set(self.pods) | set(self.workloads))

    # -- queries ---------------------------------------------------------------------------
    def chain(self, pod: str) -> frozenset[str]:
        """The UIDs a pod belongs to (its own included); empty for an object that is not a pod."""
        return frozenset(self.chains.get(pod, ()))

    def member_uids(self, uid: str) -> list[str]:
        own = [uid] if uid in self.chains else []
        return own + list(self.members.get(uid, ()))

    def pods_of(self, uid: str) -> list[Obj]:
        return [self.by_uid[p] for p in self.member_uids(uid) if p in self.by_uid]

    def ready_count(self, uid: str) -> int:
        return self.ready.get(uid, 0)

    def descendants(self, uid: str) -> set[str]:
        """The objects under `uid` along controller references (intermediate owners and pods,
        those without pods too: a Job that cannot create any), at most MAX_HOPS levels down."""
        out: set[str] = set()
        level = {uid}
        for _ in range(MAX_HOPS):
            level = {c for u in level for c in self.children.get(u, ()) if c not in out}
            if not level:
                break
            out |= level
        return out

    def ancestors(self, uid: str) -> list[str]:
        """`uid` and the objects above it along its controller chain (as far as the model holds it)."""
        out = [uid]
        level = self.by_uid.get(uid)
        for _ in range(MAX_HOPS):
            ctrl = level.controller if level is not None else None
            if ctrl is None:
                break
            out.append(ctrl[3])
            level = self._owner(level, ctrl, set())  # type: ignore[arg-type]
        return out

    # -- walks -----------------------------------------------------------------------------
    def _rewalk(self, uids: set[str]) -> set[str]:
        affected: set[str] = set()
        for uid in uids:
            obj = self.by_uid.get(uid)
            if obj is None:
                continue
            touched: set[str] = set()
            if uid in self.pods:
                affected |= self._set_chain(uid, self._chain(obj, touched))
            if uid in self.workloads:
                nested = self._nested(obj, touched)
                if self.nested.get(uid) != nested:
                    self.nested[uid] = nested
                    affected.add(uid)
            self._record_walk(uid, touched)
        return affected

    def _owner(self, level: Obj, ref: Owner, touched: set[str]) -> Obj | None:
        group, kind, name, uid, _, version = ref
        touched.add(uid)
        owner = self.by_uid.get(uid)
        if owner is None:
            self.wanted(group, version, kind)
            return None
        if owner.name != name or owner.kind != kind or owner.group != group:
            return None
        if owner.namespace and owner.namespace != level.namespace:
            return None
        return owner

    def _chain(self, pod: Obj, touched: set[str]) -> frozenset[str]:
        uids = {pod.uid}
        level = pod
        for _ in range(MAX_HOPS + 1):
            uids.update(o[3] for o in level.owners)
            ctrl = level.controller
            owner = self._owner(level, ctrl, touched) if ctrl else None
            if owner is None:
                break
            level = owner
        return frozenset(uids)

    def _nested(self, obj: Obj, touched: set[str]) -> bool:
        level = obj
        for _ in range(MAX_HOPS):
            ctrl = level.controller
            if ctrl is None:
                return False
            if self.covered(ctrl[0], ctrl[1]):
                return True
            owner = self._owner(level, ctrl, touched)
            if owner is None:
                return False
            level = owner
        return False

    def _set_chain(self, pod: str, chain: frozenset[str]) -> set[str]:
        old = frozenset(self.chains.get(pod, ()))
        self._count(pod, chain)
        if chain:
            self.chains[pod] = tuple(chain)
        else:
            self.chains.pop(pod, None)
        for w in old - chain - {pod}:
            s = self.members.get(w)
            if s is not None:
                s.discard(pod)
                if not s:
                    del self.members[w]
        for w in chain - old - {pod}:
            self.members.setdefault(w, set()).add(pod)
        return set(chain | old)  # its readiness counts for all of them

    def _count(self, pod: str, chain: frozenset[str]) -> None:
        """The pod's readiness counted in its chain as it is now (and no longer in the one before)."""
        ready = self.ready
        for w in self._counted.pop(pod, ()):
            n = ready[w] - 1
            if n:
                ready[w] = n
            else:
                del ready[w]
        obj = self.by_uid.get(pod)
        if chain and obj is not None and obj.ready:
            counted = self._counted[pod] = tuple(chain)
            for w in counted:
                ready[w] = ready.get(w, 0) + 1

    def _record_walk(self, uid: str, touched: set[str]) -> None:
        for t in set(self._walked.get(uid, ())) - touched:
            s = self._touched.get(t)
            if s is not None:
                s.discard(uid)
                if not s:
                    del self._touched[t]
        for t in touched:
            self._touched.setdefault(t, set()).add(uid)
        if touched:
            self._walked[uid] = tuple(touched)
        else:
            self._walked.pop(uid, None)

    def _unlink(self, obj: Obj) -> None:
        ctrl = obj.controller
        kids = self.children.get(ctrl[3]) if ctrl is not None else None
        if kids is not None:
            kids.discard(obj.uid)
            if not kids:
                del self.children[ctrl[3]]  # type: ignore[index]

    def _forget(self, uid: str) -> set[str]:
        affected = self._set_chain(uid, frozenset()) if uid in self.chains else set()
        self._record_walk(uid, set())
        return affected
