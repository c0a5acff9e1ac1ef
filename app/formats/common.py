"""What the three shapes share: one entry per pod-bearing instance, named as a DNS label."""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

_NOT_LABEL = re.compile(r"[^a-z0-9-]+")


class FormatError(Exception):
    """The consumer cannot take this workload as it is (e.g. more PodSets than Kueue admits).
    `slug` and `title` name the problem for the service's 422 and the CLI's error line."""

    slug = "format-not-representable"
    title = "Not representable as {fmt}"

    def __init__(self, message: str, errors: list[dict[str, Any]] | None = None):
        super().__init__(message)
        self.errors = errors


class IncompleteInterpretation(FormatError):
    """Parts of the interpretation failed; every shape needs them all."""

    slug = "interpretation-incomplete"
    title = "Interpretation incomplete"


@dataclass(frozen=True)
class PodPart:
    """One pod-bearing instance: its name in the consumer's shape, its pod count, the gang
    minimum of its scale (None without one), its pod view and its whole template."""

    name: str
    count: int
    minimum: int | None
    pod: dict[str, Any]
    template: dict[str, Any]


def dns_label(text: str, fallback: str = "main") -> str:
    """`text` as a DNS label (lower case, `-` for anything else, at most 63 characters)."""
    label = _NOT_LABEL.sub("-", text.lower()).strip("-")[:63].rstrip("-")
    return label or fallback


def _instances(node: dict[str, Any]) -> Iterator[tuple[str, dict[str, Any]]]:
    for inst in node.get("instances") or []:
        if "pod" in inst:
            yield node["name"], inst
    for child in node.get("children") or []:
        yield from _instances(child)


def pod_parts(interpretation: dict[str, Any]) -> list[PodPart]:
    """Every pod-bearing instance that has a pod template, in tree order; named by its instance
    id (a JobSet's replicated job, a Ray worker group), else its component, made unique."""
    templates = {
        (t["component"], t["instance"]): t["template"] for t in inputs(interpretation).get("podTemplates") or []
    }
    parts: list[PodPart] = []
    taken: set[str] = set()
    for component, inst in _instances(interpretation.get("tree") or {}):
        template = templates.get((component, inst.get("id")))
        if template is None:  # the definition holds no pod there (a PyTorchJob without a Master)
            continue
        name = base = dns_label(inst.get("id") or component)
        n = 1
        while name in taken:
            n += 1
            name = f"{base[: 62 - len(str(n))]}-{n}"
        taken.add(name)
        count = max(0, int(inst.get("totals", {}).get("pods") or 0))
        low = inst.get("minReplicas")
        minimum = low if isinstance(low, int) and not isinstance(low, bool) else None
        parts.append(PodPart(name, count, minimum, inst["pod"], template))
    return parts


def inputs(interpretation: dict[str, Any]) -> dict[str, Any]:
    """What the engine adds for the formats (`formatInputs`: the workload's labels, its templates)."""
    return interpretation.get("formatInputs") or {}


def workload_meta(interpretation: dict[str, Any]) -> dict[str, Any]:
    return interpretation.get("workload") or {}
