"""`?format=` over HTTP (docs/api-contract.md, "Consumer formats"): the shape instead of the
interpretation, per batch item, and a 400 naming the allowed values."""

from __future__ import annotations

from pathlib import Path

import yaml

FIXTURE = Path(__file__).resolve().parents[2] / "definitions/kubeflow.org/PyTorchJob/v1/testdata/elastic.yaml"


def _obj() -> dict:
    return yaml.safe_load(FIXTURE.read_text())


def test_interpret_in_each_format(client):
    r = client.post("/interpret?format=kueue", json=_obj())
    assert r.status_code == 200, r.text
    assert [(s["name"], s["count"], s["minCount"]) for s in r.json()["podSets"]] == [("worker", 3, 2)]
    assert "formatInputs" not in client.post("/interpret", json=_obj()).json()
    assert client.post("/interpret?format=kai", json=_obj()).json()["podGroups"][0]["spec"]["minMember"] == 2
    r = client.post("/interpret/batch?format=karmada", json={"items": [{"object": _obj()}, {"object": {"kind": 1}}]})
    items = r.json()["items"]
    assert items[0]["components"][0]["replicas"] == 3 and "error" in items[1] and "totals" not in r.json()


def test_unknown_format_names_the_allowed_values(client):
    for path in ("/interpret?format=volcano", "/interpret/batch?format=volcano"):
        body = _obj() if path == "/interpret?format=volcano" else {"items": [{"object": _obj()}]}
        r = client.post(path, json=body)
        assert r.status_code == 400 and r.headers["content-type"].startswith("application/problem+json")
        assert "kueue, karmada, kai" in r.json()["detail"]


PARTIAL = Path(__file__).resolve().parents[2] / "tests/data/partial/grove"


def test_partial_and_unrepresentable_are_422(client):
    body = {"object": yaml.safe_load((PARTIAL / "testdata/cliques-only.yaml").read_text()),
            "definition": yaml.safe_load((PARTIAL / "definition.yaml").read_text())}
    r = client.post("/interpret?format=karmada", json=body)
    assert r.status_code == 422 and r.json()["type"].endswith(":interpretation-incomplete"), r.text
    assert r.json()["errors"][0]["component"] == "scaling-group"
    jobset = yaml.safe_load((FIXTURE.parents[4] / "jobset.x-k8s.io/JobSet/v1alpha2/testdata/running.yaml").read_text())
    jobset["spec"]["replicatedJobs"] = [dict(jobset["spec"]["replicatedJobs"][0], name=f"j{i}") for i in range(9)]
    r = client.post("/interpret?format=kueue", json=jobset)
    assert r.status_code == 422 and r.json()["type"].endswith(":format-not-representable"), r.text
    assert r.json()["title"] == "Not representable as kueue" and "at most 8" in r.json()["detail"]
