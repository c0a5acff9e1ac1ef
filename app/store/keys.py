"""Where things are in the store, and the names every replica computes the same way.

One *unit* is what one shard owns: a cluster, or one namespace bucket of it (`cluster#3` with
`--shard-buckets`).  Per unit, hashes keyed by the workload's row key (`group|kind|namespace|name`):

* `rows`: the summary row (what lists and list streams show),
* `facts`: what the workload metrics read beside the row (totals, gang minimum),
* `obj`: the object as the model keeps it (projected, deflated), for `pods=false` and `ref` reads,
* `live`, `pods`, `parts`, `warn`: the live answer in parts (answers.py): the interpretation
  without pods, the pods in name order, each pod's part (keyed by the row field and the pod's uid), the
  Warning Events its diagnosis reads; an API replica assembles GET one from them,
* `sig`: the object's resourceVersion and a digest of what the answer is assembled from, so a new
  owner rewrites only what changed,
* `meta`: owner, fencing epoch, heartbeat, sync state, the kinds the unit's cluster serves,
  the version of its capacity (`capacity`);
* `nodes`, `cap`: the cluster's capacity as the unit's shard keeps it: each node's view, and what
  the pods bound to them request (capacity.py).

One capped Redis Stream carries every change of every unit, in order; its entry ids are the
resume tokens of every stream on every API replica.
"""

from __future__ import annotations

import zlib

PREFIX = "wlmap"
STREAM = f"{PREFIX}:events"


def unit_name(cluster: str, bucket: int, buckets: int) -> str:
    return cluster if buckets <= 1 else f"{cluster}#{bucket}"


def units_of(cluster: str, buckets: int) -> list[str]:
    return [unit_name(cluster, b, buckets) for b in range(max(1, buckets))]


def split_unit(unit: str) -> tuple[str, int]:
    """(cluster, bucket) of a unit name; cluster names may hold '#', buckets are the last part."""
    cluster, sep, b = unit.rpartition("#")
    if sep and b.isascii() and b.isdigit():
        return cluster, int(b)
    return unit, 0


def bucket_of(namespace: str, buckets: int) -> int:
    """A namespace's bucket: the same on every replica and every run (owner chains never cross
    namespaces, so a workload and all its pods fall in one bucket)."""
    return zlib.crc32(namespace.encode()) % buckets if buckets > 1 else 0


def key(unit: str, field: str) -> str:
    return f"{PREFIX}:u:{{{unit}}}:{field}"


def row_field(group: str, kind: str, namespace: str, name: str) -> str:
    return f"{group}|{kind}|{namespace}|{name}"


def parse_row_field(f: str) -> tuple[str, str, str, str]:
    g, k, ns, name = f.split("|", 3)
    return g, k, ns, name


# Stream ids ("<ms>-<n>") as integers that sort the same way: the event log's sequence numbers.
_SHIFT = 22  # up to 4M entries in one millisecond


def id_to_seq(sid: str | bytes) -> int:
    s = sid.decode() if isinstance(sid, bytes) else sid
    ms, _, n = s.partition("-")
    if not (ms.isascii() and ms.isdigit() and n.isascii() and n.isdigit()) or int(n) >= 1 << _SHIFT:
        raise ValueError(s)
    return (int(ms) << _SHIFT) | int(n)


def seq_to_id(seq: int) -> str:
    return f"{seq >> _SHIFT}-{seq & ((1 << _SHIFT) - 1)}"
