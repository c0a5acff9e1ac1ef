"""Metric label values stay bounded whatever callers send: an inline definition's name is the
caller's to choose, so its series are labelled "inline" (registered definitions keep their
names: operators bound those).  Every label value is a series kept for the process's life."""

from __future__ import annotations

import copy
import re

import httpx

from .test_api import BATCHTASK_DEF, TASK


def _definition_labels(text: str) -> set[str]:
    return set(re.findall(r'^wlmap_interpretation[a-z_]*\{definition="([^"]*)"', text, re.M))


def test_inline_definition_names_are_not_metric_labels(client: httpx.Client):
    for i in range(100):
        d = copy.deepcopy(BATCHTASK_DEF)
        d["metadata"]["name"] = f"caller-chosen-{i}"
        r = client.post("/interpret", json={"object": TASK, "definition": d})
        assert r.status_code == 200, r.text
        assert r.json()["definition"]["name"] == f"caller-chosen-{i}"  # the answer still names it
    labels = _definition_labels(client.get("/metrics").text)
    assert "inline" in labels
    assert not any(label.startswith("caller-chosen-") for label in labels), sorted(labels)


def test_registered_definitions_keep_their_names(client: httpx.Client):
    assert client.post("/interpret", json=TASK).status_code == 200
    r = client.get("/definitions").json()
    served = {d["name"] for d in r["items"]}
    assert _definition_labels(client.get("/metrics").text) & served
