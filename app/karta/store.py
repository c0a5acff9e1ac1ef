"""The service's definitions: sources in precedence order, hot reload, last-good versions.

Sources, lowest precedence first:

1. `builtin`   - the catalog shipped in the package;
2. `cluster`   - Karta custom resources (`kartas.run.ai`), when that CRD is served;
3. `configmap` - ConfigMaps of the service's namespace picked by name or label selector;
4. each `--definitions` folder, in the order given (watched).

For a GVK the highest source with a valid definition wins wholesale, as upstream's cluster
source replaces its catalog; two valid definitions for one GVK in the same source are
ambiguous (409).  The order says: what an operator gives this service explicitly (its own
ConfigMaps, its own folders) overrides what is shared cluster-wide, which overrides the catalog.

A reload never loses a good definition: a new version that is invalid (or a document that no
longer parses) keeps the last good version of that definition in service, and the problem is
reported on GET /definitions, in a metric, in the log and (for ConfigMaps) as a Kubernetes
Event.  Deleting a definition lets the next source down (in the end the catalog) serve its
GVK again.  Readers always see one consistent `Registry` snapshot.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..documents import DocumentError
from .load import Definition, NotAKarta, definitions_from_text, iter_definition_files, load_builtin
from .registry import AmbiguousDefinition, Registry

log = logging.getLogger("wlmap.definitions")

CLUSTER = "cluster"
CONFIGMAP = "configmap"


@dataclass
class SourceState:
    """One source's definitions: those in service, and the problems of its latest load."""

    name: str
    served: list[Definition] = field(default_factory=list)
    rejected: list[Definition] = field(default_factory=list)  # invalid, not in service
    last_good: set[str] = field(default_factory=set)  # digests served although a newer edit is invalid
    problems: list[str] = field(default_factory=list)  # files that could not be read


def reconcile(old: SourceState, loaded: list[Definition], unreadable: dict[str, str], name: str) -> SourceState:
    """New state of a source after a reload, keeping last-good versions.

    A definition is identified by its name.  Invalid new versions and definitions of files
    that failed to parse keep the previous valid version."""
    new = SourceState(name)
    previous = {d.name: d for d in old.served}
    seen: set[str] = set()
    for d in loaded:
        if d.valid:
            new.served.append(d)
            seen.add(d.name)
        else:
            new.rejected.append(d)
            prev = previous.get(d.name)
            if prev is not None and d.name not in seen:
                new.served.append(prev)
                new.last_good.add(prev.digest)
                seen.add(d.name)
    for origin, err in unreadable.items():
        new.problems.append(f"{origin}: {err}")
        for prev in old.served:  # keep what this file served before
            if prev.origin.split("#")[0] == origin and prev.name not in seen:
                new.served.append(prev)
                new.last_good.add(prev.digest)
                seen.add(prev.name)
    return new


def load_folder(path: Path) -> tuple[list[Definition], dict[str, str]]:
    loaded: list[Definition] = []
    unreadable: dict[str, str] = {}
    if not path.exists():
        return loaded, {str(path): "no such file or directory"}
    for f in iter_definition_files(path):
        try:
            loaded += definitions_from_text(f.read_bytes(), "directory", str(f), skip_other_kinds=path.is_dir())
        except (OSError, DocumentError, NotAKarta) as e:
            unreadable[str(f)] = str(e)
    return loaded, unreadable


class DefinitionStore:
    def __init__(self, folders: list[str] | None = None, cluster_sources: list[str] | None = None):
        builtin = load_builtin()
        self.builtin = SourceState(
            "builtin", served=[d for d in builtin if d.valid], rejected=[d for d in builtin if not d.valid]
        )
        self.folders = [Path(p) for p in folders or []]
        # precedence order, lowest first (the module docstring says why)
        self.order = (
            ["builtin"]
            + [k for k in (CLUSTER, CONFIGMAP) if k in (cluster_sources or [])]
            + [str(p) for p in self.folders]
        )
        self.sources: dict[str, SourceState] = {k: SourceState(k) for k in self.order}
        self.sources["builtin"] = self.builtin
        self.synced: dict[str, bool] = {k: False for k in cluster_sources or []}
        self.reloads = {"ok": 0, "failed": 0}
        self.listeners: list[Callable[[SourceState], None]] = []
        self.registry = Registry.of(self.builtin.served)
        for p in self.folders:
            self.reload_folder(p)

    # -- sources -------------------------------------------------------------------------
    def reload_folder(self, path: Path) -> SourceState:
        loaded, unreadable = load_folder(path)
        return self.replace(str(path), loaded, unreadable)

    def replace(self, key: str, loaded: list[Definition], unreadable: dict[str, str]) -> SourceState:
        """A source's complete new contents (every definition it holds now)."""
        state = reconcile(self.sources.get(key, SourceState(key)), loaded, unreadable, key)
        self.sources[key] = state
        if key in self.synced:
            self.synced[key] = True
        self._publish(state)
        return state

    def ready(self) -> bool:
        """Every cluster source has completed its first sync."""
        return all(self.synced.values())

    def _publish(self, changed: SourceState) -> None:
        self.registry = Registry.of(*(self.sources[k].served for k in self.order))
        bad = changed.rejected or changed.problems
        self.reloads["failed" if bad else "ok"] += 1
        for d in changed.rejected:
            first = next((f.message for f in d.findings if f.level == "error"), "")
            kept = " (last good version kept)" if any(s.name == d.name for s in changed.served) else ""
            log.warning("definition %s from %s is invalid%s: %s", d.name or "?", d.origin, kept, first)
        for p in changed.problems:
            log.warning("definition source unreadable (last good version kept): %s", p)
        for fn in self.listeners:
            fn(changed)

    # -- views ---------------------------------------------------------------------------
    def all_states(self) -> list[SourceState]:
        return [self.sources[k] for k in self.order]

    def summaries(self) -> list[dict[str, Any]]:
        reg = self.registry
        out = []
        for state in reversed(self.all_states()):
            for d in state.served:
                try:
                    winner = reg.resolve(d.gvk) if d.gvk else None
                    st = "active" if winner is d else "shadowed"
                except AmbiguousDefinition:
                    st = "ambiguous"
                if st == "active" and d.digest in state.last_good:
                    st = "last-good"
                out.append(summary(d, st))
            for d in state.rejected:
                out.append(summary(d, "invalid"))
        return out

    def counts(self) -> tuple[int, int]:
        served = sum(len(s.served) for s in self.all_states())
        invalid = sum(len(s.rejected) for s in self.all_states())
        return served, invalid

    # -- watching ------------------------------------------------------------------------
    async def watch(self, stop: asyncio.Event, interval: float = 0.5) -> None:
        """Reload a folder when a file in it changes (mtime/size poll: works on every
        filesystem, including ConfigMap volume symlink swaps)."""
        snapshots = {str(p): _snapshot(p) for p in self.folders}
        while not stop.is_set():
            try:
                await asyncio.wait_for(stop.wait(), timeout=interval)
            except TimeoutError:
                pass
            for p in self.folders:
                snap = await asyncio.get_running_loop().run_in_executor(None, _snapshot, p)
                if snap != snapshots[str(p)]:
                    snapshots[str(p)] = snap
                    self.reload_folder(p)


def _snapshot(path: Path) -> tuple[tuple[str, float, int], ...]:
    out = []
    try:
        files = iter_definition_files(path) if path.exists() else []
    except OSError:
        return ()
    for f in files:
        try:
            st = f.stat()
        except OSError:
            continue
        out.append((str(f), st.st_mtime, st.st_size))
    return tuple(out)


def summary(d: Definition, state: str) -> dict[str, Any]:
    g = d.karta.root_gvk
    return {
        "name": d.name,
        "group": g.group if g else None,
        "version": g.version if g else None,
        "kind": g.kind if g else None,
        "source": d.source,
        "origin": d.origin,
        "digest": d.digest,
        "state": state,
        "errors": [f.as_dict() for f in d.findings if f.level == "error"],
        "warnings": [f.as_dict() for f in d.findings if f.level == "warning"],
    }
