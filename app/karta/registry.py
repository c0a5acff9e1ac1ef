"""Definitions indexed by exact root GVK, in layers of precedence.

Layers are given lowest first (built-in catalog, then user folders, then the cluster, then an
inline definition).  For each GVK the highest layer that has a *valid* definition wins
wholesale, as upstream's cluster source replaces the catalog.  Two valid definitions for one GVK
inside the same layer are ambiguous, as upstream: resolving that GVK is an error naming both.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import cached_property

from .load import Definition

GVKKey = tuple[str, str, str]


class AmbiguousDefinition(LookupError):
    def __init__(self, gvk: GVKKey, names: list[str]):
        self.gvk, self.names = gvk, sorted(names)
        g, v, k = gvk
        gvk_s = f"{g}/{v}/{k}" if g else f"{v}/{k}"
        super().__init__(f"{len(names)} Karta definitions claim {gvk_s}: " + ", ".join(f'"{n}"' for n in self.names))


@dataclass(frozen=True)
class Registry:
    layers: tuple[tuple[Definition, ...], ...]

    @classmethod
    def of(cls, *layers: Iterable[Definition]) -> Registry:
        return cls(tuple(tuple(layer) for layer in layers))

    def with_layer(self, layer: Sequence[Definition]) -> Registry:
        return Registry(self.layers + (tuple(layer),))

    # -- queries ----------------------------------------------------------------------
    def all(self) -> list[Definition]:
        """Every definition, valid or not, highest layer first then by GVK and name."""
        out = []
        for layer in reversed(self.layers):
            out += sorted(layer, key=lambda d: (d.gvk or ("~", "~", "~"), d.name))
        return out

    def active(self) -> list[Definition]:
        """The definition serving each GVK (ambiguous GVKs are left out), by GVK."""
        out = []
        for gvk in sorted(self._by_gvk):
            try:
                d = self.resolve(gvk)
            except AmbiguousDefinition:
                continue
            if d is not None:
                out.append(d)
        return out

    @cached_property
    def _by_gvk(self) -> dict[GVKKey, list[list[Definition]]]:
        index: dict[GVKKey, list[list[Definition]]] = {}
        for layer in self.layers:
            seen: dict[GVKKey, list[Definition]] = {}
            for d in layer:
                if d.valid and d.gvk is not None:
                    seen.setdefault(d.gvk, []).append(d)
            for gvk, defs in seen.items():
                index.setdefault(gvk, []).append(defs)
        return index

    def resolve(self, gvk: GVKKey) -> Definition | None:
        layers = self._by_gvk.get(gvk)
        if not layers:
            return None
        top = layers[-1]
        if len(top) > 1:
            raise AmbiguousDefinition(gvk, [d.name for d in top])
        return top[0]

    def covers(self, gvk: GVKKey) -> bool:
        """Some valid definition claims this GVK (ambiguity included)."""
        return bool(self._by_gvk.get(gvk))

    def resolve_object(self, obj: dict) -> Definition | None:
        api_version = str(obj.get("apiVersion") or "")
        group, _, version = api_version.rpartition("/")
        return self.resolve((group, version, str(obj.get("kind") or "")))

    def by_name(self, name: str) -> Definition | None:
        for layer in reversed(self.layers):
            for d in layer:
                if d.name == name:
                    return d
        return None
