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

from .accelerators import clamp, request_values
from .quantity import QuantityError, parse_quantity
from .requests import Requests, add, to_strings


def add_counts(a: Mapping[str, int], b: Mapping[str, int]) -> dict[str, int]:
    """Per-resource sum of integer counts, keys sorted."""
    out = dict(a)
    for name, n in b.items():
        out[name] = clamp(out.get(name, 0) + n)
    return {k: out[k] for k in sorted(out)}


@dataclass(frozen=True)
class Sums:
    pods: int = 0
    gpus: int = 0
    accelerators: dict[str, int] = field(default_factory=dict)
    requests: Requests = field(default_factory=dict)

    def __add__(self, other: Sums) -> Sums:
        return Sums(self.pods + other.pods, clamp(self.gpus + other.gpus),
                    add_counts(self.accelerators, other.accelerators), add(self.requests, other.requests))

    def as_json(self) -> dict[str, Any]:
        return totals_json(self.pods, self.gpus, self.accelerators, self.requests)


def totals_json(pods: int, gpus: int, accelerators: Mapping[str, int], requests: Requests,
                strings: dict[str, str] | None = None) -> dict[str, Any]:
    return {"pods": pods, "gpus": gpus, "accelerators": dict(accelerators),
            "requests": dict(strings) if strings is not None else to_strings(requests),
            "requestValues": request_values(requests)}


def add_totals(a: Mapping[str, Any] | None, b: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """The sum of two `totals` objects as the API returns them (None, a total that could not be
    computed, makes the sum None: a partial count must never pass for the whole).  Raises
    QuantityError for a `requests` value that is not a quantity."""
    if a is None or b is None:
        return None
    return (_sums(a) + _sums(b)).as_json()


def _sums(t: Mapping[str, Any]) -> Sums:
    reqs = t.get("requests") or {}
    try:
        parsed = {str(k): parse_quantity(v) for k, v in reqs.items()}
    except (TypeError, ValueError) as e:
        raise QuantityError(str(e)) from None
    return Sums(int(t.get("pods") or 0), int(t.get("gpus") or 0), dict(t.get("accelerators") or {}), parsed)


ZERO = Sums()
