"""Where a workload can run: its pod groups packed onto the free capacity of a cluster's nodes.

Input: pod groups (`PodGroup`: a component's pods, their per-pod requests as integer amounts
(see `app.capacity.nodes`), their scheduling constraints, their gang) and the nodes with their
free amounts (`Inventory.free()`). Output: a `Plan`: whether it fits, how many complete copies
fit at once, where each group's pods go, and when it does not fit, what is short per group.

**What must place.** Every pod of every group, at the same time: a workload without gang
information fits when all its pods place. A gang group's `count` is its gang minimum (the pods
that must start together: minAvailable); every group of one gang must meet its minimum together.
A gang with a required topology key places all its pods on nodes that share one value of that
node label (one rack, one NVLink domain); nodes without the label are out. Different gangs may
choose different values.

**Filters.** A pod goes only to a node that passes every filter of `app.capacity.filters`, and
each placed pod takes its requests and one pod slot from that node's free amounts: a plan never
over-commits a node.

**Packing policy.** First-fit decreasing: the groups with the largest pods go first, largest by
the scarcest kind of resource: extended resources (GPUs, MIG slices) before cpu, memory and
storage, each as a share of the cluster's free total, ties by group name. Each pod goes to the
eligible node with room that is the most allocated already (`policy="pack"`, the default, as
GPU schedulers pack, keeping whole nodes free for large pods), or the least allocated
(`policy="spread"`); allocation is the mean used share of the resources the pod requests; ties
go to the node whose name sorts first. The result is deterministic. With a topology key, the
label's values are tried in sorted order and the first where the whole workload places wins.

**Exact on small inputs.** First-fit decreasing can miss a packing that exists. When it fails,
two cheap checks may prove that none exists, for every choice of topology values: some group
alone has room for fewer pods than it needs, or the groups together need more of a resource than
all their eligible nodes have free. Otherwise, on a workload of at most SEARCH_PODS (64) pods,
an exhaustive search (every distribution of each group's identical pods over its eligible
nodes, for every choice of topology values) runs with a budget of tries (`budget`, 20,000 by
default). A verdict is exact (`Plan.exact`) when a placement was found, a check proved there is
none, or the search ended within its budget: on small problems `fits` is false only when no
assignment of pods to nodes exists. A larger workload, a search out of tries, more than
MAX_DOMAIN_CHOICES (4,096) choices of topology values, or a first copy past WORK node visits
(below) leave the first-fit verdict, unproven.

**Sets.** Copies of the whole workload are placed one after another on what the previous copies
left, each as above (the exhaustive search shares one budget across copies), up to `max_sets`:
`sets` is how many complete copies fit at once by this packing (0 when it does not fit).
Cost: the first copy ranks each group's eligible nodes once, in a heap per group that gives each
next node; the heaps are kept for the next copy (a node changed gets a new entry), so a further
copy costs about its pods, not a new ranking of the cluster.

**Bounded work.** A caller must not make one plan take seconds. Work is counted in node visits
(a node ranked, a node taken from or put back in a heap, a node scanned by a check, a node the
search may place on): the first copy (the verdict) may take WORK (300,000), past which it does
not fit, unproven (`exact` false); the copies after it SETS_WORK (100,000) more, past which they
stop and `sets` is a lower bound (`sets_bounded`). A visit costs about a microsecond, so the
copies take at most some 0.1 s and the verdict some 0.3 s (benchmarks/capacity_bench.py: the
worst cases constructed); the search has its own budget of tries. Not counted: reading the
filters once per group and node, and the shortfall of a workload that does not fit.

**Shortfall.** When it does not fit, per group: per requested resource the amount one pod needs,
the most free on any one node that passes the group's filters and that node; how many of the
group's pods place on the free capacity by themselves; and a sentence a person can act on.
"""

from __future__ import annotations

import heapq
import itertools
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from fractions import Fraction

from app.capacity.filters import Constraints, static_reason
from app.capacity.nodes import BYTE_RESOURCES, CPU, PODS, Node, byte_valued, show

BINPACK = "pack"
SPREAD = "spread"
POLICIES = (BINPACK, SPREAD)
BUDGET = 20_000
MAX_SETS = 1000
SEARCH_PODS = 64  # the exhaustive search runs on workloads of at most this many pods
MAX_DOMAIN_CHOICES = 4096  # choices of topology values tried (one value per gang with a key)
WORK = 300_000  # node visits the first copy may take (the verdict); past it: not proven
SETS_WORK = 100_000  # node visits the copies after the first may take; past it: `sets` is a lower bound
EXPLAIN_WORK = 100_000  # node visits the explanation of a failure may take; past it: from the free amounts alone


@dataclass(frozen=True)
class Gang:
    """Pods that must start together: every group naming this gang places all its `count`
    pods at once, and with a `topology_key`, all on nodes sharing one value of that label."""

    name: str
    topology_key: str | None = None


@dataclass(frozen=True)
class PodGroup:
    """`count` identical pods of one component. `requests`: per-pod integer amounts (cpu in
    millicores, bytes, counts; see app.capacity.nodes). For a gang group, `count` is the gang's
    minimum for this group."""

    name: str
    count: int
    requests: Mapping[str, int]
    constraints: Constraints = field(default_factory=Constraints)
    gang: Gang | None = None
    component: str | None = None  # the component the pods are of (None: `name`)
    instance: str | None = None  # the component's instance (None: it has one, without an id)


@dataclass(frozen=True)
class ResourceNeed:
    resource: str
    per_pod: int
    # what remains on one eligible node once the pods that do place are placed: the most of
    # this resource (0 if none), on `node` (the first by name on a tie; None: no eligible node)
    most_free: int
    node: str | None
    short: bool = False  # no eligible node has `per_pod` of it left: the resource that stops the pods


@dataclass(frozen=True)
class Shortfall:
    group: str
    pods: int  # the pods that had to place
    placeable: int  # how many place on the free capacity when the group is alone
    resources: tuple[ResourceNeed, ...]
    reason: str
    unplaced: int = 0  # the pods left over when first-fit places what it can of every group


@dataclass(frozen=True)
class Plan:
    fits: bool
    sets: int
    placement: dict[str, tuple[tuple[str, int], ...]]  # group -> ((node, pods), ...) by node name
    shortfall: dict[str, Shortfall]  # empty when it fits
    exact: bool  # the verdict is proven: a placement was found, or the search was complete
    policy: str = BINPACK
    sets_bounded: bool = False  # the copies stopped at SETS_WORK: `sets` is a lower bound


class _OutOfTries(Exception):
    pass


class _OutOfWork(Exception):
    pass


_CORE = frozenset({CPU, PODS}) | BYTE_RESOURCES


def _extended(resource: str) -> bool:
    return resource not in _CORE and not byte_valued(resource)


def _need(group: PodGroup) -> dict[str, int]:
    need = {r: n for r, n in group.requests.items() if n > 0 and r != PODS}
    need[PODS] = 1
    return need


def _room(free: Mapping[str, int], need: Mapping[str, int]) -> int:
    """How many pods with these needs fit in these free amounts (need always has `pods`)."""
    most = -1
    for r, n in need.items():
        k = free.get(r, 0) // n
        if k <= 0:
            return 0
        if most < 0 or k < most:
            most = k
    return most


def _static(node: Node, constraints: Constraints, seen: dict[tuple[object, ...], str | None]) -> str | None:
    """static_reason; without a nodeSelector or affinity it reads only readiness, cordon and
    taints, so nodes alike in those share one answer (`seen`, per group)."""
    if constraints.node_selector or constraints.affinity is not None:
        return static_reason(node, constraints)
    key = (node.ready, node.unschedulable, node.taints)
    if key not in seen:
        seen[key] = static_reason(node, constraints)
    return seen[key]


class _Fit:
    """One fit problem: nodes sorted by name, each group's needs and eligible nodes."""

    def __init__(
        self, groups: Sequence[PodGroup], nodes: Sequence[Node], free: Mapping[str, Mapping[str, int]], policy: str
    ) -> None:
        self.nodes = sorted(nodes, key=lambda n: n.name)
        self.free = [dict(free.get(n.name, {})) for n in self.nodes]
        self.policy = policy
        self.groups = [g for g in groups if g.count > 0]
        self.need = [_need(g) for g in self.groups]
        self.reasons: list[dict[int, str]] = []
        self.eligible: list[list[int]] = []
        for g in self.groups:
            seen: dict[tuple[object, ...], str | None] = {}
            why = {i: r for i, n in enumerate(self.nodes) if (r := _static(n, g.constraints, seen)) is not None}
            self.reasons.append(why)
            self.eligible.append([i for i in range(len(self.nodes)) if i not in why])
        self.total_free: Counter[str] = Counter()
        for f in self.free:
            for r, n in f.items():
                if n > 0:
                    self.total_free[r] += n
        self.work, self.limit = 0, WORK  # node visits so far, and where they stop (_OutOfWork)
        self.ver = [0] * len(self.nodes)  # bumped when a node's free amounts change (greedy's heaps)
        self.kept: tuple[int, list[dict[str, int]], list[list[tuple[float, int, int]] | None]] | None = None
        self._sets: dict[tuple[int, int], frozenset[int]] = {}
        self.order = sorted(range(len(self.groups)), key=self._size_key)
        self.kinds = [[r for r in need if r != PODS] or [PODS] for need in self.need]  # what allocation counts
        self.domains, self.domains_cut = self._domains()

    # --- ordering ---------------------------------------------------------------------------

    def _size_key(self, gi: int) -> tuple[Fraction, Fraction, str]:
        """Larger pods first: by their largest share of an extended resource, then of a core one."""
        total = self.total_free
        shares = {r: Fraction(n, max(total[r], 1)) for r, n in self.need[gi].items() if r != PODS}
        ext = max((s for r, s in shares.items() if _extended(r)), default=Fraction(0))
        core = max((s for r, s in shares.items() if not _extended(r)), default=Fraction(0))
        return (-ext, -core, self.groups[gi].name)

    # --- topology ---------------------------------------------------------------------------

    def _gangs(self) -> list[Gang]:
        seen: dict[str, Gang] = {}
        for g in self.groups:
            if g.gang is not None and g.gang.topology_key and g.gang.name not in seen:
                seen[g.gang.name] = g.gang
        return sorted(seen.values(), key=lambda g: g.name)

    def _domains(self) -> tuple[list[list[list[int]]], bool]:
        """Per choice of topology values (one per gang with a key): each group's eligible nodes;
        and whether the choices were cut at MAX_DOMAIN_CHOICES."""
        gangs = self._gangs()
        values = [sorted({n.labels[g.topology_key] for n in self.nodes if g.topology_key in n.labels}) for g in gangs]
        at = {g.name: k for k, g in enumerate(gangs)}
        # per group: None (any node), or (its gang's position, its eligible nodes by that key's value)
        split: list[tuple[int, dict[str, list[int]]] | None] = []
        for g, elig in zip(self.groups, self.eligible, strict=True):
            k = at.get(g.gang.name) if g.gang else None
            if k is None:
                split.append(None)
                continue
            key, by = gangs[k].topology_key or "", dict[str, list[int]]()
            for i in elig:
                v = self.nodes[i].labels.get(key)
                if v is not None:
                    by.setdefault(v, []).append(i)
            split.append((k, by))
        out = []
        for choice in itertools.islice(itertools.product(*values), MAX_DOMAIN_CHOICES + 1):
            out.append(
                [e if s is None else s[1].get(choice[s[0]], []) for s, e in zip(split, self.eligible, strict=True)]
            )
        return out[:MAX_DOMAIN_CHOICES], len(out) > MAX_DOMAIN_CHOICES

    # --- placing ----------------------------------------------------------------------------

    def _take(self, free: dict[str, int], need: Mapping[str, int], k: int) -> None:
        for r, n in need.items():
            free[r] = free.get(r, 0) - n * k

    def _score(self, gi: int, i: int, free: Mapping[str, int]) -> float:
        """The node's allocation as the policy ranks it: lower goes first."""
        alloc, kinds = self.nodes[i].allocatable, self.kinds[gi]
        shares = [1 - max(free.get(r, 0), 0) / alloc[r] for r in kinds if alloc.get(r, 0) > 0]
        used = sum(shares) / len(shares) if shares else 0.0
        return -used if self.policy == BINPACK else used

    def _visit(self, n: int) -> None:
        """Count n node visits; _OutOfWork past the limit (see WORK and SETS_WORK)."""
        self.work += n
        if self.work > self.limit:
            raise _OutOfWork

    def greedy(
        self, free: list[dict[str, int]], eligible: list[list[int]], d: int | None = None, partial: bool = False
    ) -> list[Counter[int]] | None:
        """First-fit decreasing onto `free` (changed only when every pod places). Only the
        nodes it places on are copied, so a copy of a workload costs its pods, not the cluster.
        Each group's eligible nodes with room sit in a heap of (score, node, version): the
        lowest score first, then the first node by name, the node a scan of every node would
        pick. A node's entry is current while its version is (`ver`, bumped when its free
        amounts change; a change pushes its new entry to every group's heap). The heaps of
        domain `d` are kept for the next copy (`kept`) while only this greedy changes `free`,
        so a further copy costs its pods, not a new ranking of every node. `partial`: place
        what fits of each group, leave the rest, and keep the result in `free` (to explain a
        failure: what the pods that do place leave)."""
        kept = self.kept
        heaps: list[list[tuple[float, int, int]] | None]
        if d is not None and kept is not None and kept[0] == d and kept[1] is free:
            heaps = kept[2]
        else:
            heaps = [None] * len(self.groups)
        ver = self.ver
        was: dict[int, int] = {}  # versions before this copy, put back when it fails
        work: dict[int, dict[str, int]] = {}
        placed: list[Counter[int]] = [Counter() for _ in self.groups]
        ok = False
        try:
            for gi in self.order:
                need, left = self.need[gi], self.groups[gi].count
                h = heaps[gi]
                if h is None:
                    self._visit(len(eligible[gi]))
                    h = heaps[gi] = []
                    for i in eligible[gi]:
                        f = work[i] if i in work else free[i]
                        if _room(f, need) >= 1:
                            h.append((self._score(gi, i, f), i, ver[i]))
                    heapq.heapify(h)
                while left:
                    while h and h[0][2] != ver[h[0][1]]:
                        heapq.heappop(h)  # an entry of before the node changed
                    if not h:
                        if partial:
                            break
                        return None
                    i = heapq.heappop(h)[1]
                    f = work.setdefault(i, dict(free[i]))
                    k = min(left, _room(f, need)) if self.policy == BINPACK else 1
                    self._take(f, need, k)
                    placed[gi][i] += k
                    left -= k
                    was.setdefault(i, ver[i])
                    ver[i] += 1
                    self._visit(len(heaps))
                    for gj, hj in enumerate(heaps):
                        if (
                            hj is not None
                            and (gj == gi or i in self._eligible_set(eligible, gj))
                            and _room(f, self.need[gj]) >= 1
                        ):
                            heapq.heappush(hj, (self._score(gj, i, f), i, ver[i]))
            ok = True
        finally:
            if not ok:
                for i, v in was.items():
                    ver[i] = v
                if kept is not None and heaps is kept[2]:
                    self.kept = None  # its heaps were popped: rebuilt next time
        for i, f in work.items():
            free[i] = f
        if d is not None:
            self.kept = (d, free, heaps)
        return placed

    def _eligible_set(self, eligible: list[list[int]], gi: int) -> frozenset[int]:
        key = (id(eligible[gi]), gi)
        got = self._sets.get(key)
        if got is None:
            got = self._sets[key] = frozenset(eligible[gi])
        return got

    def search(
        self, free: list[dict[str, int]], eligible: list[list[int]], tries: list[int]
    ) -> list[Counter[int]] | None:
        """Every distribution of each group's pods over its eligible nodes, until one places.
        `tries` is the budget left (a one-element list, shared); _OutOfTries when it runs out."""
        touched = set().union(*eligible)
        self._visit(len(touched))
        work = list(free)
        for i in touched:
            work[i] = dict(free[i])
        placed: list[Counter[int]] = [Counter() for _ in self.groups]

        def place(step: int, left: int, start: int) -> bool:
            if left == 0:
                step += 1
                if step == len(self.order):
                    return True
                left, start = self.groups[self.order[step]].count, 0
            gi = self.order[step]
            need, nodes = self.need[gi], eligible[gi]
            for pos in range(start, len(nodes)):  # identical pods: non-decreasing node positions
                i = nodes[pos]
                if _room(work[i], need) < 1:
                    continue
                tries[0] -= 1
                if tries[0] < 0:
                    raise _OutOfTries
                self._take(work[i], need, 1)
                placed[gi][i] += 1
                if place(step, left - 1, pos):
                    return True
                self._take(work[i], need, -1)
                placed[gi][i] -= 1
            return False

        if self.order and not place(0, self.groups[self.order[0]].count, 0):
            return None
        free[:] = work
        return [+c for c in placed]

    def _alone(self, free: list[dict[str, int]], gi: int, nodes: list[int]) -> int:
        """How many of group gi's pods the nodes have room for, the group alone (capped)."""
        self._visit(len(nodes))
        count, total = self.groups[gi].count, 0
        for i in nodes:
            total += _room(free[i], self.need[gi])
            if total >= count:
                return count
        return total

    def _could_fit(self, free: list[dict[str, int]], eligible: list[list[int]]) -> bool:
        """False when this choice of topology values surely fails: some group alone has room for
        too few pods, or the groups together need more of a resource than their nodes have."""
        if any(self._alone(free, gi, eligible[gi]) < g.count for gi, g in enumerate(self.groups)):
            return False
        demand: Counter[str] = Counter()
        for gi, g in enumerate(self.groups):
            demand.update({r: n * g.count for r, n in self.need[gi].items()})
        nodes = set().union(*eligible)
        self._visit(len(nodes))
        return all(sum(max(free[i].get(r, 0), 0) for i in nodes) >= n for r, n in demand.items())

    def place(self, free: list[dict[str, int]], tries: list[int]) -> tuple[list[Counter[int]] | None, bool]:
        """One copy: (placement or None, whether the answer is proven)."""
        for d, eligible in enumerate(self.domains):
            placed = self.greedy(free, eligible, d)
            if placed is not None:
                return placed, True
        open_ = [e for e in self.domains if self._could_fit(free, e)]
        if not open_:
            return None, not self.domains_cut
        if sum(g.count for g in self.groups) > SEARCH_PODS:
            return None, False  # too big to search: the first-fit verdict, unproven
        self.kept = None  # the search changes `free` behind the heaps
        try:
            for eligible in open_:
                placed = self.search(free, eligible, tries)
                if placed is not None:
                    return placed, True
        except _OutOfTries:
            return None, False
        return None, not self.domains_cut

    # --- explaining -------------------------------------------------------------------------

    def leftover(self) -> tuple[list[dict[str, int]], list[Counter[int]], list[list[int]]]:
        """What first-fit places of every group (in the choice of topology values that places
        the most pods, among those tried within the work bound): the free amounts it leaves, the
        pods placed and each group's eligible nodes there."""
        best: tuple[int, list[dict[str, int]], list[Counter[int]], list[list[int]]] | None = None
        try:
            for eligible in self.domains or [self.eligible]:
                work = list(self.free)  # greedy replaces the entries it changes, never edits one
                placed = self.greedy(work, eligible, partial=True) or []
                total = sum(sum(c.values()) for c in placed)
                if best is None or total > best[0]:
                    best = (total, work, placed, eligible)
        except _OutOfWork:
            if best is None:
                raise  # not one choice placed: the caller explains from the free amounts
        assert best is not None
        return best[1], best[2], best[3]

    def shortfall(self, gi: int, left: list[dict[str, int]], placed: Counter[int], eligible: list[int]) -> Shortfall:
        """Group gi's shortfall: per requested resource, what remains on the best of its eligible
        nodes once what places is placed (`left`, `placed`: see `leftover`)."""
        g, need = self.groups[gi], self.need[gi]
        resources = []
        for r in sorted(need, key=lambda r: (r == PODS, r)):
            most, node = 0, None
            for i in eligible:
                amount = max(left[i].get(r, 0), 0)
                if node is None or amount > most:
                    most, node = amount, self.nodes[i].name
            resources.append(ResourceNeed(r, need[r], most, node, most < need[r]))
        placeable = min(g.count, self._alone_best(gi))
        unplaced = g.count - sum(placed.values())
        why = self._why(gi, resources, placeable, unplaced)
        return Shortfall(g.name, g.count, placeable, tuple(resources), why, unplaced)

    def _alone_best(self, gi: int) -> int:
        """The most of group gi's pods the free capacity has room for, the group alone, in one
        value of its gang's topology label (any eligible node without one): each node's room
        worked out once, summed per value."""
        need = self.need[gi]
        rooms = {i: _room(self.free[i], need) for i in self.eligible[gi]}
        gang = self.groups[gi].gang
        key = gang.topology_key if gang is not None else None
        if key is None:
            return sum(rooms.values())
        per_value: Counter[str] = Counter()
        for i, n in rooms.items():
            value = self.nodes[i].labels.get(key)
            if value is not None:
                per_value[value] += n
        return max(per_value.values(), default=0)

    def _why(self, gi: int, resources: list[ResourceNeed], placeable: int, unplaced: int) -> str:
        g, eligible = self.groups[gi], self.eligible[gi]
        if not eligible:
            counts = Counter(self.reasons[gi].values())
            listed = "; ".join(f"{r} ({n} node{'s' * (n > 1)})" for r, n in sorted(counts.items(), key=lambda x: -x[1]))
            return f"no node passes the filters: {listed}" if listed else "there are no nodes"
        key = g.gang.topology_key if g.gang else None
        within = f" within one {key}" if key else ""
        if placeable == 0:
            if not any(self.free[i].get(PODS, 0) > 0 for i in eligible):
                return f"no node that passes the filters has a free pod slot ({len(eligible)} pass)"
            if key and not any(key in self.nodes[i].labels for i in eligible):
                return f"no node that passes the filters has the label {key}"
            return _short(resources, "") or (
                f"no one node has room for a whole pod{within}: each is short of some resource it requests"
            )
        short = _short(resources, " left")
        then = f"; once they are placed, {short}" if short else ""
        if placeable < g.count:
            return (
                f"{placeable} of {g.count} pods place{within}: the nodes that pass the filters "
                f"({len(eligible)}) have room for no more{then}"
            )
        together = f"all {g.count} pods place{within} by themselves, but not together with the other groups"
        if unplaced and short:
            return f"{together}: once the others are placed, {unplaced} do not: {short}"
        return together


def _short(resources: Sequence[ResourceNeed], left: str) -> str:
    """The resources no eligible node has enough of, as a sentence (empty: none)."""
    out = []
    for n in resources:
        if not n.short:
            continue
        if n.resource == PODS:
            out.append(f"no node has a free pod slot{left}")
        else:
            most = (
                f"the most on one node is {show(n.resource, n.most_free)}: {n.node}" if n.most_free else "none has any"
            )
            out.append(f"no node has {show(n.resource, n.per_pod)} free {n.resource}{left} ({most})")
    return "; ".join(out)


def plan(
    groups: Sequence[PodGroup],
    nodes: Sequence[Node],
    free: Mapping[str, Mapping[str, int]],
    *,
    policy: str = BINPACK,
    max_sets: int = MAX_SETS,
    budget: int = BUDGET,
) -> Plan:
    """The fit of `groups` on `nodes` whose free amounts are `free` (node name -> amounts)."""
    if policy not in POLICIES:
        raise ValueError(f"unknown policy {policy!r} (one of {', '.join(POLICIES)})")
    names = Counter(g.name for g in groups)
    if len(names) != len(groups):
        raise ValueError(f"group names must be unique: {sorted(n for n, k in names.items() if k > 1)}")
    fit = _Fit(groups, nodes, free, policy)
    tries = [budget]
    work = [dict(f) for f in fit.free]
    try:
        first, exact = fit.place(work, tries)
    except _OutOfWork:
        first, exact = None, False  # too much work to tell: the first-fit verdict so far, unproven
    if first is None:
        fit.limit = fit.work + EXPLAIN_WORK  # the explanation has a bound of its own
        try:
            left, placed, eligible = fit.leftover()
        except _OutOfWork:  # too much to place even partly: what is free now, nothing placed
            left, placed, eligible = fit.free, [Counter() for _ in fit.groups], fit.eligible
        short = {g.name: fit.shortfall(gi, left, placed[gi], eligible[gi]) for gi, g in enumerate(fit.groups)}
        return Plan(False, 0, {}, short, exact, policy)
    sets, bounded = 1, False
    fit.limit = fit.work + SETS_WORK
    try:
        while sets < max_sets and fit.groups and fit.place(work, tries)[0] is not None:
            sets += 1
    except _OutOfWork:
        bounded = True
    if not fit.groups:
        sets = max_sets  # nothing to place: any number of copies fits
    placement = {
        g.name: tuple((fit.nodes[i].name, k) for i, k in sorted(first[gi].items())) for gi, g in enumerate(fit.groups)
    }
    placement.update({g.name: () for g in groups if g.count <= 0})
    return Plan(True, sets, placement, {}, True, policy, bounded)
