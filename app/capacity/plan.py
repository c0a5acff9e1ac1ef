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
assignment of pods to nodes exists. A larger workload, a search out of tries, or more than
MAX_DOMAIN_CHOICES (4,096) choices of topology values leave the first-fit verdict, unproven.

**Sets.** Copies of the whole workload are placed one after another on what the previous copies
left, each as above (the exhaustive search shares one budget across copies), up to `max_sets`:
`sets` is how many complete copies fit at once by this packing (0 when it does not fit).
Cost: a copy ranks each group's eligible nodes once (a heap then gives each next node), so
sets of a small workload on 1,000 nodes, up to 1,000 copies, take about a second or two.

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


class _OutOfTries(Exception):
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
    return min(max(free.get(r, 0), 0) // n for r, n in need.items())


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
            why = {i: r for i, n in enumerate(self.nodes) if (r := static_reason(n, g.constraints)) is not None}
            self.reasons.append(why)
            self.eligible.append([i for i in range(len(self.nodes)) if i not in why])
        self.total_free: Counter[str] = Counter()
        for f in self.free:
            self.total_free.update({r: max(n, 0) for r, n in f.items()})
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
        out = []
        for choice in itertools.islice(itertools.product(*values), MAX_DOMAIN_CHOICES + 1):
            chosen = {g.name: (g.topology_key, v) for g, v in zip(gangs, choice, strict=True)}
            out.append(
                [
                    [i for i in elig if self._in(i, chosen.get(g.gang.name) if g.gang else None)]
                    for g, elig in zip(self.groups, self.eligible, strict=True)
                ]
            )
        return out[:MAX_DOMAIN_CHOICES], len(out) > MAX_DOMAIN_CHOICES

    def _in(self, i: int, domain: tuple[str | None, str] | None) -> bool:
        if domain is None:
            return True
        key, value = domain
        return key is not None and self.nodes[i].labels.get(key) == value

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

    def greedy(
        self, free: list[dict[str, int]], eligible: list[list[int]], partial: bool = False
    ) -> list[Counter[int]] | None:
        """First-fit decreasing onto `free` (changed only when every pod places). Only the
        nodes it places on are copied, so a copy of a workload costs its pods, not the cluster.
        While one group places, only the node it places on changes: a heap of (score, node)
        gives the next node, the same one a scan of every node would. `partial`: place what
        fits of each group, leave the rest, and always keep the result in `free` (to explain
        a failure: what the pods that do place leave)."""
        work: dict[int, dict[str, int]] = {}
        placed: list[Counter[int]] = [Counter() for _ in self.groups]
        for gi in self.order:
            need, left = self.need[gi], self.groups[gi].count
            ranked = []
            for i in eligible[gi]:
                f = work[i] if i in work else free[i]
                if _room(f, need) >= 1:
                    ranked.append((self._score(gi, i, f), i))
            heapq.heapify(ranked)  # the lowest score first, then the first node by name
            while left:
                if not ranked:
                    if partial:
                        break
                    return None
                i = heapq.heappop(ranked)[1]
                f = work.setdefault(i, dict(free[i]))
                k = min(left, _room(f, need)) if self.policy == BINPACK else 1
                self._take(f, need, k)
                placed[gi][i] += k
                left -= k
                if _room(f, need) >= 1:
                    heapq.heappush(ranked, (self._score(gi, i, f), i))
        for i, f in work.items():
            free[i] = f
        return placed

    def search(
        self, free: list[dict[str, int]], eligible: list[list[int]], tries: list[int]
    ) -> list[Counter[int]] | None:
        """Every distribution of each group's pods over its eligible nodes, until one places.
        `tries` is the budget left (a one-element list, shared); _OutOfTries when it runs out."""
        work = [dict(f) for f in free]
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
        return all(sum(max(free[i].get(r, 0), 0) for i in nodes) >= n for r, n in demand.items())

    def place(self, free: list[dict[str, int]], tries: list[int]) -> tuple[list[Counter[int]] | None, bool]:
        """One copy: (placement or None, whether the answer is proven)."""
        for eligible in self.domains:
            placed = self.greedy(free, eligible)
            if placed is not None:
                return placed, True
        open_ = [e for e in self.domains if self._could_fit(free, e)]
        if not open_:
            return None, not self.domains_cut
        if sum(g.count for g in self.groups) > SEARCH_PODS:
            return None, False  # too big to search: the first-fit verdict, unproven
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
        the most pods): the free amounts it leaves, the pods placed and each group's eligible
        nodes there."""
        best: tuple[int, list[dict[str, int]], list[Counter[int]], list[list[int]]] | None = None
        for eligible in self.domains or [self.eligible]:
            work = [dict(f) for f in self.free]
            placed = self.greedy(work, eligible, partial=True) or []
            total = sum(sum(c.values()) for c in placed)
            if best is None or total > best[0]:
                best = (total, work, placed, eligible)
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
        rooms = [{i: _room(self.free[i], need) for i in domain[gi]} for domain in self.domains]
        placeable = min(g.count, max((sum(r.values()) for r in rooms), default=0))
        unplaced = g.count - sum(placed.values())
        why = self._why(gi, resources, placeable, unplaced)
        return Shortfall(g.name, g.count, placeable, tuple(resources), why, unplaced)

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
    first, exact = fit.place(work, tries)
    if first is None:
        left, placed, eligible = fit.leftover()
        short = {g.name: fit.shortfall(gi, left, placed[gi], eligible[gi]) for gi, g in enumerate(fit.groups)}
        return Plan(False, 0, {}, short, exact, policy)
    sets = 1
    while sets < max_sets and fit.groups and fit.place(work, tries)[0] is not None:
        sets += 1
    if not fit.groups:
        sets = max_sets  # nothing to place: any number of copies fits
    placement = {
        g.name: tuple((fit.nodes[i].name, k) for i, k in sorted(first[gi].items())) for gi, g in enumerate(fit.groups)
    }
    placement.update({g.name: () for g in groups if g.count <= 0})
    return Plan(True, sets, placement, {}, True, policy)
