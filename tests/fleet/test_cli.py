"""`wlmap get` and `wlmap describe` over several kubeconfig contexts, against the three real API
servers of the fleet fixture (a, b, c), run as the installed CLI.

Each context is read as the `wlmap-service` user; a context that cannot be reached, rejects
the credentials or hangs is named on stderr while the others are still listed."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from ..cluster.apiserver import TOKENS
from .conftest import NS, Fleet

ROOT = Path(__file__).resolve().parents[2]
WLMAP = Path(sys.executable).parent / "wlmap"
TOKEN = TOKENS["service"][0]


def wlmap(*args: str | Path) -> subprocess.CompletedProcess[str]:
    env = {"PATH": "/usr/bin:/bin", "HOME": "/nonexistent"}  # no stray ~/.kube/config or $KUBECONFIG
    r = subprocess.run([str(WLMAP), *map(str, args)], capture_output=True, text=True, env=env, cwd=ROOT,
                       timeout=120, check=False)
    assert "Traceback" not in r.stderr and "Unclosed" not in r.stderr, r.stderr
    assert TOKEN not in r.stdout + r.stderr  # credentials are never printed
    return r


def table(out: str) -> tuple[list[str], list[list[str]]]:
    """Header and rows of a `get` table (no cell holds spaces)."""
    lines = [line.split() for line in out.splitlines()]
    return lines[0], lines[1:]


def by_cluster(rows: list[list[str]]) -> dict[str, set[str]]:
    out: dict[str, set[str]] = {}
    for r in rows:
        out.setdefault(r[0], set()).add(r[1])
    return out


@pytest.fixture(scope="module")
def merged(fleet: Fleet, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Contexts a, b, c (current: a) for the service user."""
    return fleet.merged_kubeconfig(tmp_path_factory.mktemp("cli") / "kubeconfig")


def single(fleet: Fleet, name: str, path: Path) -> Path:
    """A kubeconfig of one cluster only: what reading that cluster alone gives."""
    path.write_text(json.dumps(fleet.kubeconfig_doc(name)))
    return path


def with_extra_contexts(merged: Path, path: Path, extra: dict[str, tuple[str, str]]) -> Path:
    """`merged` plus contexts name -> (server URL, token), each with a user of its own."""
    doc = json.loads(merged.read_text())
    cas = {c["cluster"]["server"]: c["cluster"]["certificate-authority-data"] for c in doc["clusters"]}
    for name, (server, token) in extra.items():
        ca = cas.get(server, doc["clusters"][0]["cluster"]["certificate-authority-data"])  # each server has its own
        doc["clusters"].append({"name": name, "cluster": {"server": server, "certificate-authority-data": ca}})
        doc["users"].append({"name": f"user-{name}", "user": {"token": token}})
        doc["contexts"].append({"name": name, "context": {"cluster": name, "user": f"user-{name}"}})
    path.write_text(json.dumps(doc))
    return path


@pytest.fixture
def hung() -> Iterator[str]:
    """An address that accepts TCP connections and never answers (not even the TLS handshake)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen(16)
        yield f"https://127.0.0.1:{s.getsockname()[1]}"


# -- get -----------------------------------------------------------------------------------

def test_get_all_contexts_lists_every_cluster_with_a_cluster_column(fleet: Fleet, merged: Path,
                                                                     tmp_path: Path) -> None:
    r = wlmap("get", "-A", "--all-contexts", "--kubeconfig", merged)
    assert r.returncode == 0, r.stderr
    head, rows = table(r.stdout)
    assert head == ["CLUSTER", "NAME", "NAMESPACE", "KIND", "PHASE", "READY", "GPUS", "AGE"]
    mine = [row for row in rows if row[2] == NS]  # cluster a is the suite's: other tests add workloads elsewhere
    got = by_cluster(mine)
    for name in "abc":
        assert set(fleet.made[name]) <= got[name], (name, got)
    assert "train-a" not in got["b"] | got["c"] and "train-b" not in got["a"] | got["c"]
    assert [row[0] for row in rows] == sorted(row[0] for row in rows)  # grouped by cluster
    # Each cluster's rows are what reading that cluster alone shows (AGE aside: it ticks).
    for name in "abc":
        alone = wlmap("get", "-n", NS, "--kubeconfig", single(fleet, name, tmp_path / name))
        assert alone.returncode == 0, alone.stderr
        assert [row[:-1] for row in table(alone.stdout)[1]] == [row[1:-1] for row in mine if row[0] == name]


def test_get_named_contexts_reads_only_those(fleet: Fleet, merged: Path) -> None:
    r = wlmap("get", "-n", NS, "--context", "b", "--context", "c", "--kubeconfig", merged)
    assert r.returncode == 0, r.stderr
    head, rows = table(r.stdout)
    assert head[0] == "CLUSTER"
    assert by_cluster(rows) == {"b": set(fleet.made["b"]), "c": set(fleet.made["c"])}
    r = wlmap("get", "-n", NS, "--context", "c", "--kubeconfig", merged)  # one named context: labelled too
    assert by_cluster(table(r.stdout)[1]) == {"c": set(fleet.made["c"])}


def test_get_without_context_flags_is_the_current_context_unlabelled(fleet: Fleet, merged: Path) -> None:
    r = wlmap("get", "-n", NS, "--kubeconfig", merged)
    assert r.returncode == 0, r.stderr
    head, rows = table(r.stdout)
    assert head == ["NAME", "NAMESPACE", "KIND", "PHASE", "READY", "GPUS", "AGE"]
    assert {row[0] for row in rows} == set(fleet.made["a"])
    doc = json.loads(wlmap("get", "-n", NS, "-o", "json", "--kubeconfig", merged).stdout)
    assert "clusters" not in doc and all("cluster" not in i for i in doc["items"])


def test_get_json_labels_rows_with_their_cluster(fleet: Fleet, merged: Path, tmp_path: Path) -> None:
    r = wlmap("get", "-n", NS, "--all-contexts", "-o", "json", "--kubeconfig", merged)
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert [(c["name"], c["available"]) for c in doc["clusters"]] == [("a", True), ("b", True), ("c", True)]
    assert doc["freshness"]["source"] == "direct"
    for name in "abc":
        alone = json.loads(wlmap("get", "-n", NS, "-o", "json", "--kubeconfig",
                                 single(fleet, name, tmp_path / name)).stdout)
        assert [i for i in doc["items"] if i["cluster"] == name] == [{"cluster": name, **i} for i in alone["items"]]
        assert [w for w in doc["warnings"] if w.startswith(f"cluster {name}: ")] == \
               [f"cluster {name}: {w}" for w in alone["warnings"]]
    assert {i["cluster"] for i in doc["items"]} == {"a", "b", "c"}
    r = wlmap("get", "-n", NS, "--all-contexts", "-o", "yaml", "--kubeconfig", merged)
    got = yaml.safe_load(r.stdout)
    assert [(i["cluster"], i["workload"]["name"]) for i in got["items"]] == \
           [(i["cluster"], i["workload"]["name"]) for i in doc["items"]]


# -- describe ------------------------------------------------------------------------------

def test_describe_context_reads_that_cluster_and_names_it(fleet: Fleet, merged: Path) -> None:
    uid = {n: fleet.kubectl[n].get("jobset.x-k8s.io/v1alpha2", "JobSet", NS, "shared")["metadata"]["uid"]
           for n in "bc"}
    assert uid["b"] != uid["c"]
    r = wlmap("describe", "jobset/shared", "-n", NS, "--context", "c", "-o", "json", "--kubeconfig", merged)
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert (doc["cluster"], doc["workload"]["uid"]) == ("c", uid["c"])
    assert {p["name"] for p in doc["live"]["pods"]} and all(p["name"].startswith("shared-") for p in doc["live"]["pods"])
    r = wlmap("describe", "jobset/shared", "-n", NS, "--context", "c", "--kubeconfig", merged)
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines()[0].startswith(f"JobSet/shared   cluster: c   namespace: {NS}   definition: ")
    # The current context (a) has no `shared`; without --context the heading names no cluster.
    assert wlmap("describe", "jobset/shared", "-n", NS, "--kubeconfig", merged).returncode == 3
    r = wlmap("describe", "jobset/train-a", "-n", NS, "--kubeconfig", merged)
    assert r.returncode == 0 and "cluster:" not in r.stdout.splitlines()[0], r.stdout


# -- contexts that fail --------------------------------------------------------------------

def test_unreachable_and_rejected_contexts_do_not_stop_the_others(fleet: Fleet, merged: Path,
                                                                  tmp_path: Path) -> None:
    bad_token = "wrong-token-0123456789"
    cfg = with_extra_contexts(merged, tmp_path / "kc", {"dead": ("https://127.0.0.1:1", TOKEN),
                                                        "refused": (fleet.servers["b"].url, bad_token)})
    r = wlmap("get", "-A", "--all-contexts", "--kubeconfig", cfg)
    assert r.returncode == 1, r.stderr
    assert bad_token not in r.stdout + r.stderr
    rows = [row for row in table(r.stdout)[1] if row[2] == NS]
    assert by_cluster(rows) == {n: set(fleet.made[n]) for n in "abc"}
    errors = [line for line in r.stderr.splitlines() if line.startswith("error: ")]
    assert len(errors) == 2, r.stderr
    assert errors[0].startswith("error: context dead: ") and "reach the API server" in errors[0], errors
    assert errors[1] == "error: context refused: the API server rejected the credentials (Unauthorized)"

    r = wlmap("get", "-n", NS, "--all-contexts", "-o", "json", "--kubeconfig", cfg)
    assert r.returncode == 1
    doc = json.loads(r.stdout)
    assert {c["name"]: c["available"] for c in doc["clusters"]} == {"a": True, "b": True, "c": True, "dead": False,
                                                                    "refused": False}
    assert {i["cluster"] for i in doc["items"]} == {"a", "b", "c"}
    assert any(w.startswith("cluster dead: ") and w.endswith("its workloads are left out") for w in doc["warnings"])
    assert "error: context dead: " in r.stderr


def test_a_context_that_hangs_is_cut_at_the_timeout(fleet: Fleet, merged: Path, tmp_path: Path, hung: str) -> None:
    cfg = with_extra_contexts(merged, tmp_path / "kc", {"hung": (hung, TOKEN)})
    start = time.monotonic()
    r = wlmap("get", "-n", NS, "--context", "hung", "--context", "b", "--context-timeout", "2", "--kubeconfig", cfg)
    assert time.monotonic() - start < 15
    assert r.returncode == 1
    assert by_cluster(table(r.stdout)[1]) == {"b": set(fleet.made["b"])}
    assert r.stderr.splitlines()[-1] == "error: context hung: the API server did not answer within 2 s", r.stderr


def test_context_usage_errors(merged: Path, tmp_path: Path) -> None:
    r = wlmap("get", "--context", "nope", "--kubeconfig", merged)
    assert r.returncode == 1 and r.stdout == ""
    assert r.stderr.startswith('error: no context "nope" in the kubeconfig'), r.stderr
    assert wlmap("get", "--context", "a", "--all-contexts", "--kubeconfig", merged).returncode == 2
    (tmp_path / "empty").write_text("{}")
    r = wlmap("get", "--all-contexts", "--kubeconfig", tmp_path / "empty")
    assert r.returncode == 1 and r.stderr.startswith("error: no contexts in the kubeconfig"), r.stderr
    # Every context failing alike keeps that failure's exit code (4: nothing covers the type).
    r = wlmap("get", "nosuchkind", "-n", NS, "--all-contexts", "--kubeconfig", merged)
    assert r.returncode == 4, r.stderr
    assert [line for line in r.stderr.splitlines() if line.startswith("error: ")] == [
        f'error: context {n}: no Karta definition covers "nosuchkind"' for n in "abc"]


def test_get_filters_names_and_auth_flags_apply_to_every_context(fleet: Fleet, merged: Path, tmp_path: Path) -> None:
    """Issue 22: the kubectl-style flags work with --all-contexts as with one context."""
    r = wlmap("get", "jobset", "shared", "train-a", "nope", "-n", NS, "--all-contexts", "--sort-by", "-name",
              "--kubeconfig", merged)
    assert r.returncode == 3, r.stderr
    assert [row[:2] for row in table(r.stdout)[1]] == [["a", "train-a"], ["b", "shared"], ["c", "shared"]]
    assert r.stderr.splitlines()[-1] == f'error: jobset "nope" not found in namespace {NS} in contexts a, b, c'
    assert r.stderr.count("error:") == 1, r.stderr
    r = wlmap("get", "-n", NS, "--all-contexts", "--phase", "Running", "-o", "wide", "--kubeconfig", merged)
    assert r.returncode == 0, r.stderr
    head, rows = table(r.stdout)
    assert head[-2:] == ["COMPONENTS", "REASON"] and {row[1] for row in rows} >= {"train-a", "train-b", "shared"}
    # Another user's kubeconfig: --token is used for every context; --as impersonates in each.
    bob = fleet.merged_kubeconfig(tmp_path / "bob", user="bob")
    r = wlmap("get", "-n", NS, "--all-contexts", "--kubeconfig", bob)
    assert r.returncode == 1 and r.stdout == "" and r.stderr.count("forbidden") >= 3, r.stderr
    r = wlmap("get", "-n", NS, "--all-contexts", "--token", TOKEN, "--kubeconfig", bob)
    assert r.returncode == 0, r.stderr
    assert by_cluster(table(r.stdout)[1]) == {n: set(fleet.made[n]) for n in "abc"}
    admin = fleet.merged_kubeconfig(tmp_path / "admin", user="admin")
    r = wlmap("get", "-n", NS, "--all-contexts", "--as", "bob", "--kubeconfig", admin)
    assert r.returncode == 1 and r.stdout == "", r.stderr
    assert [line.split(":")[0] for line in r.stderr.splitlines()] == ["error"] * 3
    assert all('User "bob"' in line for line in r.stderr.splitlines()), r.stderr
