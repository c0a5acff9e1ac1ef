"""Answers in a consumer's own shape (docs/api-contract.md, "Consumer formats"): Kueue's PodSets,
Karmada's components, KAI Scheduler's PodGroups, made from an interpretation that carries its pod
templates (the engine's `templates=True`).  Pure functions of that dict; the service calls
`render` at its edge."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from . import kai, karmada, kueue
from .common import FormatError, IncompleteInterpretation

FORMATS: dict[str, Callable[[dict[str, Any]], dict[str, Any]]] = {
    "kueue": kueue.pod_sets,
    "karmada": karmada.components,
    "kai": kai.pod_groups,
}

__all__ = ["FORMATS", "FormatError", "IncompleteInterpretation", "render"]


def render(fmt: str, interpretation: dict[str, Any]) -> dict[str, Any]:
    """The interpretation in `fmt`'s shape (a key of FORMATS); raises FormatError when the
    consumer cannot take this workload, IncompleteInterpretation when parts of it failed."""
    if interpretation.get("errors"):
        raise IncompleteInterpretation(
            f"the {fmt} format needs the whole interpretation; parts failed", interpretation["errors"]
        )
    return FORMATS[fmt](interpretation)
