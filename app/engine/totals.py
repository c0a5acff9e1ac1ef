"""The `totals` of the contract: pods, whole GPUs, accelerator counts, requests and their integer
values, and how two of them add up.

Inside an interpretation sums are kept as :class:`Sums` (exact quantities); `add_totals` adds two
totals in their JSON form (a batch's or a group's sum over interpretations).  Either way
`requestValues` is the integer form of the `requests` beside it (computed from the exact sum,
not summed from rounded values), while `gpus` and `accelerators` add up the per-pod counts, as
the reference counts a pod's GPUs.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from cachetools import LRUCache

from .accelerators import clamp, request_values
from .quantity import QuantityError, parse_quantity
from .requests import Requests, add, to_strings


def add_counts(a: Mapping[str, int], b: Mapping[str, int]) -> dict[str, int]:
    """Per-resource sum of integer counts, keys sorted."""
    out = dict(a)
    for name, n in b.items():
        out[name] = clamp(out.get(name, 0) + n)
    return {k: out[k] for k in sorted(out)}


@dataclass(frozen=True, eq=False)  # compared and hashed by identity: see _SUMS
class Sums:
    pods: int = 0
    gpus: int = 0
    accelerators: dict[str, int] = field(default_factory=dict)
    requests: Requests = field(default_factory=dict)
    # its JSON form, made once: a component of one instance and no children has its instance's
    # sums, and pod definitions repeat (interpret._PodFacts keeps their sums)
    _json: list[dict[str, Any]] = field(default_factory=list, compare=False, repr=False)

    def empty(self) -> bool:
        return not (self.pods or self.gpus or self.accelerators or self.requests)

    def __add__(self, other: Sums) -> Sums:
        if other.empty():
            return self
        if self.empty():
            return other
        hit = _SUMS.get((self, other))
        if hit is None:
            hit = Sums(
                self.pods + other.pods,
                clamp(self.gpus + other.gpus),
                add_counts(self.accelerators, other.accelerators),
                add(self.requests, other.requests),
            )
            if len(_SUMS) >= SUMS_CACHE:
                _SUMS.clear()
            _SUMS[(self, other)] = hit
        return hit

    def as_json(self) -> dict[str, Any]:
        """A fresh `totals` object (its maps are the caller's to keep)."""
        if not self._json:
            self._json.append(totals_json(self.pods, self.gpus, self.accelerators, self.requests))
        return {k: dict(v) if isinstance(v, dict) else v for k, v in self._json[0].items()}


# Sums by the two Sums they add up.  The instances' sums are kept with their pod definitions
# (interpret._PodFacts), so a workload interpreted again adds the same objects, gets the same sums
# back, and reuses their JSON form: the totals of an unchanged workload are not recomputed.  The
# key holds its two Sums, so an identity is never reused while it is here.
SUMS_CACHE = 4096  # a few MB at most: each entry is a handful of small dicts
_SUMS: dict[tuple[Sums, Sums], Sums] = {}


def totals_json(pods: int, gpus: int, accelerators: Mapping[str, int], requests: Requests) -> dict[str, Any]:
    strings = to_strings(requests)
    return {
        "pods": pods,
        "gpus": gpus,
        "accelerators": dict(accelerators),
        "requests": strings,
        "requestValues": _values(requests, strings),
    }


# requestValues by the exact quantity strings they come from: the same totals recur in every
# interpretation of a workload (and across replicas of a design), so the rounding is done once.
_VALUES: LRUCache[tuple[tuple[str, str], ...], dict[str, int]] = LRUCache(maxsize=4096)


def _values(requests: Requests, strings: dict[str, str]) -> dict[str, int]:
    key = tuple(strings.items())
    hit = _VALUES.get(key)
    if hit is None:
        hit = _VALUES[key] = request_values(requests)
    return dict(hit)


def add_totals(a: Mapping[str, Any] | None, b: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """The sum of two `totals` objects as the API returns them (None, a total that could not be
    computed, makes the sum None: a partial count must never pass for the whole).  Raises
    QuantityError for a `requests` value that is not a quantity."""
    if a is None or b is None:
        return None
    return (sums_of(a) + sums_of(b)).as_json()


def sums_of(t: Mapping[str, Any]) -> Sums:
    """A `totals` object as the API returns it, as Sums (exact quantities)."""
    reqs = t.get("requests") or {}
    try:
        parsed = {str(k): parse_quantity(v) for k, v in reqs.items()}
    except (TypeError, ValueError) as e:
        raise QuantityError(str(e)) from None
    return Sums(int(t.get("pods") or 0), int(t.get("gpus") or 0), dict(t.get("accelerators") or {}), parsed)


ZERO = Sums()
