"""Definitions in a watched folder hot-reload; an invalid edit keeps the last good version."""

from __future__ import annotations

import shutil
import time
from pathlib import Path

import httpx
import yaml

from .conftest import EXAMPLES, Server
from .test_api import TASK


def wait_for(pred, timeout: float = 2.0) -> float:
    start = time.monotonic()
    while time.monotonic() - start < timeout:
        if pred():
            return time.monotonic() - start
        time.sleep(0.05)
    raise AssertionError("condition not met in time")


def test_hot_reload_and_last_good(tmp_path: Path):
    f = tmp_path / "task.yaml"
    shutil.copy(EXAMPLES / "batchtask.karta.yaml", f)
    s = Server("--definitions", str(tmp_path))
    try:
        with s.client() as c:
            assert c.post("/interpret", json=TASK).json()["totals"]["pods"] == 3
            doc = yaml.safe_load(f.read_text())
            good = yaml.safe_load(f.read_text())
            doc["spec"]["structureDefinition"]["rootComponent"]["scaleDefinition"]["replicasPath"] = ".spec.workers * 3"
            f.write_text(yaml.safe_dump(doc))
            # visible within 2 s
            wait_for(lambda: c.post("/interpret", json=TASK).json()["totals"]["pods"] == 9)
            edited_digest = c.post("/interpret", json=TASK).json()["definition"]["digest"]

            doc["spec"]["structureDefinition"]["rootComponent"]["ownerRef"] = "nobody"  # invalid edit
            f.write_text(yaml.safe_dump(doc))

            def reported() -> bool:
                items = c.get("/definitions").json()["items"]
                return any(i["state"] == "invalid" and i["source"] == "directory" for i in items)

            wait_for(reported)
            items = [i for i in c.get("/definitions").json()["items"] if i["source"] == "directory"]
            states = sorted(i["state"] for i in items)
            assert states == ["invalid", "last-good"], items
            invalid = next(i for i in items if i["state"] == "invalid")
            assert invalid["errors"][0]["message"] == "root component cannot have owner ref"
            r = c.post("/interpret", json=TASK).json()
            assert r["totals"]["pods"] == 9 and r["definition"]["digest"] == edited_digest  # last good serves

            f.write_text("kind: [broken")  # unparseable: still the last good
            time.sleep(1.2)
            assert c.post("/interpret", json=TASK).json()["totals"]["pods"] == 9
            text = c.get("/metrics").text
            failed = [ln for ln in text.splitlines() if ln.startswith('wlmap_definition_reloads_total{result="failed"}')]
            assert failed and float(failed[0].split()[-1]) >= 2  # the invalid edit and the broken file

            f.write_text(yaml.safe_dump(good))
            wait_for(lambda: c.post("/interpret", json=TASK).json()["totals"]["pods"] == 3)
            f.unlink()  # deleted: no definition covers the kind any more
            wait_for(lambda: c.post("/interpret", json=TASK).status_code == 404)
    finally:
        s.stop()
