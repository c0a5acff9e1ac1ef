"""A shard's writes to one unit, fenced: only the unit's current owner may write.

Ownership in the store follows the unit's Lease (app/store/claims.py): a shard that acquires a
unit records itself and the Lease's epoch (its leaseTransitions, which grows with every change of
owner) in the unit's `meta`.  Every write is one Lua script that first checks that record, so a
shard that lost its Lease without noticing (paused, partitioned) cannot overwrite what the new
owner wrote: its write is refused (-1) and it stops.  A store that lost its data (a restart
without persistence) refuses the same way; the owner then claims again and rewrites everything.

Each script call is atomic: the rows, the hashes beside them and the stream entries announcing
them change together, so a reader never sees a row whose change event is not in the stream.
"""

from __future__ import annotations

from typing import Any

import redis.asyncio as aioredis

from . import keys

# KEYS: meta, stream, then FIELDS' keys (rows, facts, obj, live, pods, parts, warn, sig, nodes, cap).
# ARGV: owner, epoch, maxlen, unit, cluster, then operations: HSET <key index> <field> <value> |
# HDEL <key index> <field> | DEL <key index> | XADD <type> <row field> <object> <resource>.
_WRITE = """
local meta = KEYS[1]
if redis.call('HGET', meta, 'owner') ~= ARGV[1] or redis.call('HGET', meta, 'epoch') ~= ARGV[2] then
  return -1
end
local stream = KEYS[2]
if redis.call('EXISTS', stream) == 0 then
  redis.call('XADD', stream, '*', 't', 'EPOCH')
end
local maxlen, unit, cluster = ARGV[3], ARGV[4], ARGV[5]
local i, n = 6, 0
while i <= #ARGV do
  local op = ARGV[i]
  if op == 'HSET' then
    redis.call('HSET', KEYS[tonumber(ARGV[i + 1])], ARGV[i + 2], ARGV[i + 3])
    i = i + 4
  elseif op == 'HDEL' then
    redis.call('HDEL', KEYS[tonumber(ARGV[i + 1])], ARGV[i + 2])
    i = i + 3
  elseif op == 'DEL' then
    redis.call('DEL', KEYS[tonumber(ARGV[i + 1])])
    i = i + 2
  elseif op == 'XADD' then
    redis.call('XADD', stream, 'MAXLEN', '~', maxlen, '*', 'u', unit, 'c', cluster, 't', ARGV[i + 1],
               'k', ARGV[i + 2], 'o', ARGV[i + 3], 'r', ARGV[i + 4])
    i = i + 5
    n = n + 1
  else
    return redis.error_reply('unknown operation ' .. op)
  end
end
local t = redis.call('TIME')
redis.call('HSET', meta, 'heartbeat', tostring(t[1] * 1000 + math.floor(t[2] / 1000)))
return n
"""

# KEYS: meta.  ARGV: owner, epoch.  Refused (0) when a newer epoch owns the unit already.
_CLAIM = """
local cur = redis.call('HGET', KEYS[1], 'epoch')
if cur and tonumber(cur) > tonumber(ARGV[2]) then
  return 0
end
local t = redis.call('TIME')
local now = tostring(t[1] * 1000 + math.floor(t[2] / 1000))
redis.call('HSET', KEYS[1], 'owner', ARGV[1], 'epoch', ARGV[2], 'synced', '0', 'watching', '0',
           'heartbeat', now, 'since', now)
return 1
"""

FIELDS = ("rows", "facts", "obj", "live", "pods", "parts", "warn", "sig", "nodes", "cap")  # a unit's keys beside meta
_INDEX = {f: i + 1 for i, f in enumerate(("meta", "stream", *FIELDS))}


class Fenced(Exception):
    """The unit's record in the store names another owner or epoch (or is gone)."""


class Ops:
    """The operations of one write to one unit, in order."""

    def __init__(self) -> None:
        self.args: list[Any] = []
        self.events = 0

    def hset(self, field: str, name: str, value: bytes | str) -> None:
        self.args += ["HSET", _INDEX[field], name, value]

    def hdel(self, field: str, name: str) -> None:
        self.args += ["HDEL", _INDEX[field], name]

    def delete(self, field: str) -> None:
        self.args += ["DEL", _INDEX[field]]

    def xadd(self, type_: str, name: str, obj: bytes | str = b"", resource: str = "") -> None:
        self.args += ["XADD", type_, name, obj, resource]
        self.events += 1

    def __bool__(self) -> bool:
        return bool(self.args)


class UnitWriter:
    def __init__(self, redis: aioredis.Redis, unit: str, cluster: str, owner: str, epoch: int, maxlen: int):
        self.redis, self.unit, self.cluster = redis, unit, cluster
        self.owner, self.epoch, self.maxlen = owner, str(epoch), maxlen
        self.keys = [keys.key(unit, "meta"), keys.STREAM] + [keys.key(unit, f) for f in FIELDS]
        self._write = redis.register_script(_WRITE)
        self._claim = redis.register_script(_CLAIM)

    async def claim(self) -> None:
        if not await self._claim(keys=[self.keys[0]], args=[self.owner, self.epoch]):
            raise Fenced(f"unit {self.unit}: a newer owner holds it in the store")

    async def write(self, ops: Ops) -> int:
        """Apply `ops` (an empty one is a heartbeat); Fenced when this shard no longer owns the unit."""
        n = await self._write(
            keys=self.keys, args=[self.owner, self.epoch, self.maxlen, self.unit, self.cluster, *ops.args]
        )
        if int(n) < 0:
            raise Fenced(f"unit {self.unit}: the store names another owner (or lost its data)")
        return int(n)

    async def held(self) -> tuple[dict[str, bytes], dict[str, bytes], dict[str, bytes]]:
        """What the store holds for this unit, by row field: rows, answer digests, pod lists."""
        async with self.redis.pipeline(transaction=False) as p:
            for f in ("rows", "sig", "pods"):
                p.hgetall(self.keys[_INDEX[f] - 1])
            got = await p.execute()
        rows, sigs, pods = ({k.decode(): v for k, v in h.items()} for h in got)
        return rows, sigs, pods

    async def held_nodes(self) -> dict[str, bytes]:
        """The node records the store holds for this unit (capacity.py), by node name."""
        got: Any = await self.redis.hgetall(self.keys[_INDEX["nodes"] - 1])
        return {k.decode(): v for k, v in got.items()}
