"""Restart (engine/restart.py): the kinds marked `workload-map.dev/restart: rollout` get
`kubectl.kubernetes.io/restartedAt` in every pod template, reading back with exactly that change,
over every fixture of theirs; the others are refused by name."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from pathlib import Path

import pytest

from app.documents import parse_documents
from app.engine.interpret import interpret
from app.engine.replicas import revise
from app.engine.restart import RESTARTED_AT, NotRestartable, restart_set, restartable
from app.karta.load import load_builtin
from app.karta.registry import Registry

CATALOG = Path(__file__).resolve().parents[2] / "definitions"
REGISTRY = Registry.of(load_builtin())
ROLLING = {"Deployment", "StatefulSet", "DaemonSet", "LeaderWorkerSet", "Service"}  # docs/definitions.md, "Restart"
NOW = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)


def _marked() -> list[Path]:
    return sorted(f for d in load_builtin() if restartable(d)
                  for f in CATALOG.glob(f"{d.gvk[0] or 'core'}/{d.gvk[2]}/{d.gvk[1]}/testdata/*.yaml"))


def test_the_marked_kinds_are_those_whose_controllers_roll() -> None:
    marked = {d.gvk[2] for d in load_builtin() if restartable(d)}
    assert marked == ROLLING
    for d in load_builtin():
        if not restartable(d):
            with pytest.raises(NotRestartable, match=f"^{d.gvk[2]} cannot be restarted"):
                restart_set(d)


@pytest.mark.parametrize("fixture", _marked(), ids=lambda p: str(p.relative_to(CATALOG)))
def test_a_restart_reads_back_with_only_the_annotation(fixture: Path) -> None:
    for obj in parse_documents(fixture.read_bytes()):
        d = REGISTRY.resolve_object(obj) if isinstance(obj, dict) else None
        if d is None or not restartable(d):  # the pods of a *-pods.yaml fixture
            continue

        async def ev(o: dict, d=d) -> dict:
            return interpret(o, d)

        set_ = restart_set(d, NOW)
        assert set_ == {"annotations": {RESTARTED_AT: "2026-01-02T03:04:05Z"}}
        done = asyncio.run(_revise(d, obj, set_, ev))
        assert done.moved == [], done.moved
        written = [w for w in done.rewrite.writes if w["changed"]]
        assert written, done.rewrite.writes
        assert all(w["form"] in ("podTemplateSpec", "metadata") for w in written)


async def _revise(d, obj, set_, ev):  # type: ignore[no-untyped-def]
    return await revise(d, obj, await ev(obj), set_, None, None, ev)
