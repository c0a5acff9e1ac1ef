"""The three pages against a service backed by the real API server: the list (filter, sort,
links), the workload tree (numbers on every node, pods, gang, definition link), and the
interpret page (YAML round trip, inline definitions, problems shown with their findings)."""

from __future__ import annotations

import http.client
import re
from typing import Any

import httpx
import pytest

from ..cluster.kubeobjects import Kubectl
from ..cluster.util import fixture_object
from ..service.conftest import Server
from .browser import expect
from .world import BIG_WORKERS, NS

JOBSET_DEF = "jobset-x-k8s-io-jobset-v1alpha2"
EXPECTED = {  # name: (kind, phase, ready, gpus) as the list must show them
    "llm-pretrain": ("JobSet", "Running", "4/7", "12"),
    "llama-finetune": ("PyTorchJob", "Running", f"{BIG_WORKERS - 1}/{BIG_WORKERS + 1}", str(8 * (BIG_WORKERS + 1))),
    "sweep-lr": ("JobSet", "Suspended", "0/7", "12"),
    "bert-eval": ("PyTorchJob", "Failed", "0/4", "32"),
    "llama3-serve": ("InferenceService", "Running", "0/3", "5"),
    "debug-shell": ("Pod", "Running", "1/1", "0"),
}


def rows(page: Any) -> list[str]:
    return page.locator("#workloads tr.workload-row").evaluate_all("rs => rs.map(r => r.dataset.name)")


def column(page: Any, cls: str) -> list[str]:
    return [t.strip() for t in page.locator(f"#workloads tr.workload-row td.{cls}").all_inner_texts()]


def overlaps(page: Any, selector: str) -> list[tuple[int, int]]:
    """Pairs of boxes (page coordinates) that intersect."""
    return page.evaluate("""sel => {
        const r = [...document.querySelectorAll(sel)].map(e => e.getBoundingClientRect());
        const out = [];
        for (let i = 0; i < r.length; i++) for (let j = i + 1; j < r.length; j++) {
            const a = r[i], b = r[j];
            if (a.left < b.right - 0.5 && b.left < a.right - 0.5 && a.top < b.bottom - 0.5 && b.top < a.bottom - 0.5)
                out.push([i, j]);
        }
        return out;
    }""", selector)


def texts_overflowing(page: Any) -> list[str]:
    """Texts of the tree that stick out of their box."""
    return page.evaluate("""() => {
        const bad = [];
        for (const g of document.querySelectorAll("svg#tree g.node:not(.grid)")) {
            const box = g.querySelector(":scope > rect.box").getBoundingClientRect();
            for (const t of g.querySelectorAll(":scope > text")) {
                const r = t.getBoundingClientRect();
                if (r.right > box.right + 0.5 || r.left < box.left - 0.5) bad.push(t.textContent);
            }
        }
        return bad;
    }""")


# -- the list ----------------------------------------------------------------------------

def test_list_shows_every_kind_with_phase_ready_and_gpus(service: Server, world: dict[str, Any], page: Any,
                                                         shots: Any) -> None:
    page.goto(f"{service.url}/ui/?namespace={NS}")
    expect(page.locator("#workloads tr.workload-row")).to_have_count(len(EXPECTED))
    assert rows(page) == sorted(EXPECTED)  # default order: namespace, then name
    for name, (kind, phase, ready, gpus) in EXPECTED.items():
        row = page.locator(f'#workloads tr.workload-row[data-name="{name}"]')
        expect(row.locator("td.kind-cell")).to_contain_text(kind)
        chip = row.locator("td.phase .chip")
        expect(chip).to_have_text(phase)
        expect(chip).to_have_class(re.compile(rf"\bphase-{phase.lower()}\b"))
        expect(row.locator(".ready-text")).to_have_text(ready)
        expect(row.locator("td.gpus")).to_have_text(gpus)
    row = page.locator('tr.workload-row[data-name="llm-pretrain"]')
    expect(row.locator("td.definition a")).to_have_text(JOBSET_DEF)
    # why it is not fully running: the row's reason under its phase (one pod is short of GPUs)
    expect(row.locator("td.phase .reason")).to_have_text("Unschedulable")
    expect(page.locator('tr.workload-row[data-name="debug-shell"] td.phase .reason')).to_have_count(0)
    # the figures above the table add the rows up
    expect(page.locator("#stat-workloads .value")).to_have_text("6")
    expect(page.locator("#stat-running .value")).to_have_text("4")
    expect(page.locator("#stat-gpus .value")).to_have_text(str(sum(int(v[3]) for v in EXPECTED.values())))
    # readable on a laptop: nothing sticks out sideways
    assert page.evaluate("document.scrollingElement.scrollWidth") <= 1440
    shots(page, "ui-list")


def test_list_filter_and_sort(service: Server, world: dict[str, Any], page: Any) -> None:
    page.goto(f"{service.url}/ui/?namespace={NS}")
    expect(page.locator("#workloads tr.workload-row")).to_have_count(6)

    page.fill("#filter", "llama")
    expect(page.locator("#workloads tr.workload-row")).to_have_count(2)
    assert rows(page) == ["llama-finetune", "llama3-serve"]
    expect(page.locator("#stat-workloads .value")).to_have_text("2 of 6")
    page.fill("#filter", "nothing-like-this")
    expect(page.locator("#workloads td.empty")).to_have_text("No workload on this page matches the filter.")
    page.fill("#filter", "")
    # kind and phase are asked of the server (tests/ui/test_list_paging.py checks the requests)
    page.select_option("#kind", "JobSet")
    expect(page.locator("#workloads tr.workload-row")).to_have_count(2)
    assert rows(page) == ["llm-pretrain", "sweep-lr"]
    page.select_option("#kind", "")
    page.click("#phase summary")
    page.check('#phase input[data-phase="Running"]')
    expect(page.locator("#workloads tr.workload-row")).to_have_count(4)
    assert rows(page) == ["debug-shell", "llama-finetune", "llama3-serve", "llm-pretrain"]
    page.uncheck('#phase input[data-phase="Running"]')
    expect(page.locator("#workloads tr.workload-row")).to_have_count(6)

    # numbers sort largest first on the first click, then the other way (the server orders)
    page.click("th[data-sort=gpus]")
    expect(page.locator("#workloads td.gpus").first).to_have_text(str(8 * (BIG_WORKERS + 1)))
    gpus = [int(g) for g in column(page, "gpus")]
    assert gpus == sorted(gpus, reverse=True)
    expect(page.locator("th[data-sort=gpus]")).to_have_attribute("aria-sort", "descending")
    assert "sort=-gpus" in page.url
    page.click("th[data-sort=gpus]")
    expect(page.locator("#workloads td.gpus").first).to_have_text("0")
    assert [int(g) for g in column(page, "gpus")] == sorted(gpus)
    page.click("th[data-sort=name]")
    expect(page.locator("th[data-sort=name]")).to_have_attribute("aria-sort", "ascending")
    # the header turns before the server's rows arrive: wait for the rows themselves
    page.wait_for_function("want => [...document.querySelectorAll('#workloads tr.workload-row')]"
                           ".map(r => r.dataset.name).join() === want", arg=",".join(sorted(EXPECTED)))
    assert rows(page) == sorted(EXPECTED)
    # what the server cannot order by is not offered
    expect(page.locator("th.col-ready")).not_to_have_class(re.compile("sortable"))

    # the state is in the URL: a reload keeps filter and order
    page.fill("#filter", "pretrain")
    page.reload()
    expect(page.locator("#workloads tr.workload-row")).to_have_count(1)
    assert page.input_value("#filter") == "pretrain"

    # the link opens the workload
    page.click('tr.workload-row[data-name="llm-pretrain"] a.workload-link')
    expect(page).to_have_url(re.compile(rf"/ui/workloads/{NS}/llm-pretrain\?kind=JobSet&apiVersion=jobset"))
    expect(page.locator("svg#tree")).to_be_visible()


def test_list_namespace_switch(service: Server, world: dict[str, Any], page: Any) -> None:
    page.goto(f"{service.url}/ui/")  # all namespaces
    expect(page.locator(f'tr.workload-row[data-namespace="{NS}"]')).to_have_count(6)
    page.fill("#namespace", "no-such-namespace")
    page.press("#namespace", "Enter")
    expect(page.locator("#workloads td.empty")).to_have_text("No workloads in namespace “no-such-namespace”.")
    assert "namespace=no-such-namespace" in page.url
    page.fill("#namespace", NS)
    page.press("#namespace", "Enter")
    expect(page.locator("#workloads tr.workload-row")).to_have_count(6)


# -- one workload ------------------------------------------------------------------------

def test_workload_tree_has_the_right_numbers(service: Server, world: dict[str, Any], page: Any, shots: Any) -> None:
    page.goto(f"{service.url}/ui/workloads/{NS}/llm-pretrain?kind=JobSet")
    tree = page.locator("svg#tree")
    expect(tree).to_be_visible()
    expect(page.locator("#head-phase .chip")).to_have_text("Running")
    expect(page.locator("#head-sub")).to_contain_text("JobSet")

    root = tree.locator('g.component[data-name="jobset"]')
    expect(root).to_contain_text("4/7 ready")
    expect(root).to_contain_text("7 pods")
    expect(root).to_contain_text("12 GPUs in total")
    rj = tree.locator('g.component[data-name="replicated-job"]')
    expect(rj).to_contain_text("3 instances")
    expect(rj).to_contain_text("4/7 ready")

    def instance(name: str) -> Any:
        return tree.locator(f'g.instance[data-id="{name}"]')

    expect(instance("trainer")).to_contain_text("3/4 ready")
    expect(instance("trainer")).to_contain_text("4 replicas")
    expect(instance("trainer")).to_contain_text("2 GPU/pod · 8 GPUs")
    expect(instance("trainer")).to_have_attribute("data-state", "partial")
    expect(instance("coordinator")).to_contain_text("1/1 ready")
    expect(instance("coordinator")).to_contain_text("no GPUs")
    expect(instance("coordinator")).to_have_attribute("data-state", "ready")
    expect(instance("evaluator")).to_contain_text("0/2 ready")
    expect(instance("evaluator")).to_contain_text("2 GPU/pod · 4 GPUs")
    expect(instance("evaluator")).to_have_attribute("data-state", "down")
    # the evaluator's two pods do not exist: one placeholder says so
    expect(tree.locator('g.ghost[data-missing="2"]')).to_contain_text("+2 not created")

    pods = tree.locator("g.pod")
    expect(pods).to_have_count(5)
    stuck = tree.locator('g.pod[data-pod="llm-pretrain-trainer-1-1"]')
    expect(stuck).to_contain_text("Unschedulable")
    expect(stuck).to_have_attribute("data-ready", "false")
    expect(tree.locator('g.pod[data-pod="llm-pretrain-trainer-0-0"]')).to_contain_text("on gpu-node-0")
    expect(tree.locator('g.pod[data-pod="llm-pretrain-trainer-1-0"]')).to_contain_text("on gpu-node-1")
    # 2 components + 3 instances + 5 pods + 1 placeholder, each but the root with one connector
    expect(tree.locator("path.edge")).to_have_count(10)
    assert overlaps(page, "svg#tree rect.box") == []
    assert texts_overflowing(page) == []

    # figures, gang, pods and resources
    expect(page.locator("#stat-ready .value")).to_have_text("4 / 7")
    expect(page.locator("#stat-gpus .value")).to_have_text("12")
    expect(page.locator("#stat-cpu .value")).to_have_text("82")
    expect(page.locator("#gang-min")).to_have_text("7 pods")
    expect(page.locator("#podgroup-name")).to_have_text(f"pg-{world['jobset']['metadata']['uid']}-jobset")
    stuck_row = page.locator('#pods-table tr[data-pod="llm-pretrain-trainer-1-1"]')
    expect(stuck_row).to_contain_text("Unschedulable")
    expect(stuck_row).to_contain_text("not scheduled")
    assert page.locator("#pods-table tbody tr").first.get_attribute("data-pod") == "llm-pretrain-trainer-1-1"
    trainer_row = page.locator('#resources-table tr[data-instance="trainer"]')
    expect(trainer_row).to_contain_text("3/4")
    expect(trainer_row).to_contain_text("gpu-node-0, gpu-node-1")
    expect(page.locator("#total-gpus")).to_have_text("12")
    shots(page, "ui-workload")

    # the definition used, one click away
    expect(page.locator("#definition-link")).to_have_text(JOBSET_DEF)
    page.click("#definition-link")
    expect(page).to_have_url(re.compile(rf"/ui/definitions/{JOBSET_DEF}$"))
    yaml_text = page.locator("#definition-yaml")
    expect(yaml_text).to_contain_text("kind: Karta")
    expect(yaml_text).to_contain_text(f"name: {JOBSET_DEF}")
    expect(page.locator("#definition-sub")).to_contain_text("builtin")
    shots(page, "ui-definition")


def test_partial_workload_shows_phase_broken_component_and_unknown_gpus(service: Server, kubectl: Kubectl, page: Any,
                                                                        shots: Any) -> None:
    from ..cluster.test_partial import BAD, half_read_job

    ns = "ui-partial"
    half_read_job(kubectl, ns, "half-read")
    page.goto(f"{service.url}/ui/workloads/{ns}/half-read?kind=PyTorchJob")
    tree = page.locator("svg#tree")
    expect(tree).to_be_visible()
    expect(page.locator("#head-phase .chip")).to_have_text("Running")  # the status still reads
    broken = tree.locator('g.component[data-name="worker"]')
    expect(broken).to_have_attribute("data-failed", "true")
    expect(broken).to_contain_text("could not be read")
    expect(broken).to_contain_text("GPUs: unknown")
    expect(broken.locator("title")).to_contain_text(BAD)  # the whole message, the box shows its start
    assert broken.locator("rect.box").evaluate("e => getComputedStyle(e).stroke") == "rgb(217, 72, 59)"
    expect(tree.locator('g.component[data-name="pytorchjob"]')).to_contain_text("1/? ready")
    master = tree.locator('g.component[data-name="master"]')
    expect(master).to_contain_text("1/1 ready")
    expect(master).not_to_have_attribute("data-failed", "true")
    expect(tree.locator('g.pod[data-pod="half-read-master-0"]')).to_be_visible()
    expect(page.locator("#stat-gpus .value")).to_have_text("unknown")
    expect(page.locator("#total-gpus")).to_have_text("unknown")
    expect(page.locator("#incomplete")).to_contain_text("2 parts could not be read")
    expect(page.locator("#incomplete")).to_contain_text(BAD)
    expect(page.locator("#gang-unknown")).to_contain_text("component worker could not be read")
    expect(page.locator('#resources-table tr[data-failed="true"]')).to_contain_text(BAD)
    expect(page.locator("#unplaced")).to_contain_text("half-read-worker-0")
    assert overlaps(page, "svg#tree rect.box") == []
    assert texts_overflowing(page) == []
    shots(page, "ui-workload-partial")

    page.goto(f"{service.url}/ui/?namespace={ns}")
    row = page.locator('tr.workload-row[data-name="half-read"]')
    expect(row.locator("td.phase")).to_contain_text("Running")
    expect(row.locator(".incomplete")).to_contain_text("worker could not be read")
    expect(row.locator("td.gpus")).to_have_text("unknown")


def test_thirty_pods_stay_legible(service: Server, world: dict[str, Any], new_page: Any, shots: Any) -> None:
    for viewport in ({"width": 1440, "height": 900}, {"width": 1366, "height": 768}):
        page = new_page(viewport)
        page.goto(f"{service.url}/ui/workloads/{NS}/llama-finetune")
        tree = page.locator("svg#tree")
        expect(tree.locator("g.pod")).to_have_count(BIG_WORKERS + 1)
        grid = tree.locator(f'g.grid[data-pods="{BIG_WORKERS}"]')
        expect(grid).to_contain_text(f"{BIG_WORKERS} pods · {BIG_WORKERS - 2} ready")
        expect(tree.locator('g.component[data-name="worker"]')).to_contain_text(
            f"{BIG_WORKERS - 2}/{BIG_WORKERS} ready · {BIG_WORKERS} replicas")
        expect(tree.locator('g.component[data-name="worker"]')).to_contain_text(f"8 GPU/pod · {8 * BIG_WORKERS} GPUs")
        expect(tree.locator("g.pod", has_text="ContainersNotReady")).to_have_count(2)
        # every box on its own, every text inside its box, the picture as wide as its card
        assert overlaps(page, "svg#tree rect.box") == []
        assert texts_overflowing(page) == []
        width = page.evaluate("document.getElementById('tree').getBoundingClientRect().width")
        room = page.evaluate("document.getElementById('tree-scroll').clientWidth")
        assert width <= room, (viewport, width, room)
        assert page.evaluate("document.scrollingElement.scrollWidth") <= viewport["width"]
        shots(page, f"ui-workload-large-{viewport['width']}")


def test_ambiguous_name_offers_the_candidates(service: Server, kubectl: Kubectl, page: Any) -> None:
    ns = "ui-twins"
    kubectl.ensure_namespace(ns)
    for rel in ("definitions/jobset.x-k8s.io/JobSet/v1alpha2/testdata/running.yaml",
                "definitions/kubeflow.org/PyTorchJob/v1/testdata/created.yaml"):
        obj, st = fixture_object(rel, ns, "twin")
        kubectl.set_status(kubectl.apply(obj), st)
    page.goto(f"{service.url}/ui/workloads/{ns}/twin")
    problem = page.locator(".problem")
    expect(problem.locator(".problem-title")).to_contain_text("(409)")
    links = problem.locator("li a")
    expect(links).to_have_count(2)
    page.click("text=PyTorchJob ui-twins/twin")
    expect(page.locator("#head-sub")).to_contain_text("PyTorchJob")
    expect(page.locator('svg#tree g.component[data-name="pytorchjob"]')).to_be_visible()


def test_missing_workload_is_a_clear_problem(service: Server, world: dict[str, Any], page: Any) -> None:
    page.goto(f"{service.url}/ui/workloads/{NS}/no-such-workload")
    expect(page.locator(".problem .problem-title")).to_contain_text("Not found (404)")
    expect(page.locator(".problem .problem-detail")).to_contain_text("no-such-workload")


# -- interpret ---------------------------------------------------------------------------

JOBSET_RUNNING = "definitions/jobset.x-k8s.io/JobSet/v1alpha2/testdata/running.yaml"
BATCHTASK = "examples/definitions/acme.example.com/BatchTask/v1"


def read(rel: str) -> str:
    from ..cluster.util import ROOT

    return (ROOT / rel).read_text()


def interpret(page: Any, manifest: str, definition: str = "", pods: str = "") -> None:
    page.fill("#manifest", manifest)
    page.fill("#definition", definition)
    if pods:
        page.click("#toggle-pods")
        page.fill("#pods", pods)
    page.click("#interpret")


def test_interpret_jobset_yaml(bare: Server, page: Any, shots: Any) -> None:
    page.goto(f"{bare.url}/ui/interpret")
    expect(page.locator("#interpret-help")).to_be_visible()
    interpret(page, read(JOBSET_RUNNING))
    expect(page.locator("#result-title")).to_contain_text("JobSet llm-pretrain")
    expect(page.locator("#result-title .chip")).to_have_text("Running")
    tree = page.locator("svg#tree")
    expect(tree.locator('g.component[data-name="jobset"]')).to_contain_text("12 GPUs in total")
    expect(tree.locator('g.instance[data-id="trainer"]')).to_contain_text("4 replicas")
    expect(tree.locator('g.instance[data-id="trainer"]')).to_contain_text("2 GPU/pod · 8 GPUs")
    expect(tree.locator('g.instance[data-id="evaluator"]')).to_contain_text("2 GPU/pod · 4 GPUs")
    expect(tree.locator("g.pod")).to_have_count(0)  # no pods given: the tree of the spec
    expect(page.locator("#stat-gpus .value")).to_have_text("12")
    expect(page.locator("#stat-pods .value")).to_have_text("7")
    expect(page.locator("#gang-min")).to_have_text("7 pods")
    expect(page.locator("#definition-link")).to_have_text(JOBSET_DEF)
    # the picture: the end of the editors, then the result down to the bottom of the tree
    page.evaluate("document.getElementById('manifest').scrollTop = 0")
    page.evaluate("window.scrollTo(0, document.getElementById('structure').getBoundingClientRect().bottom + scrollY"
                  " - innerHeight + 16)")
    shots(page, "ui-interpret")

    # the draft survives a reload (sessionStorage), and ?run interprets it straight away
    page.goto(f"{bare.url}/ui/interpret?run")
    assert "kind: JobSet" in page.input_value("#manifest")
    expect(page.locator('svg#tree g.component[data-name="jobset"]')).to_contain_text("12 GPUs in total")


@pytest.mark.parametrize("as_json", [False, True], ids=["yaml", "json-manifest"])
def test_interpret_with_a_definition(bare: Server, page: Any, as_json: bool) -> None:
    manifest = read(f"{BATCHTASK}/testdata/running.yaml")
    if as_json:
        import json

        import yaml

        manifest = json.dumps(yaml.safe_load(manifest), indent=2)
    page.goto(f"{bare.url}/ui/interpret")
    interpret(page, manifest, read(f"{BATCHTASK}/definition.yaml"))
    expect(page.locator("#result-title")).to_contain_text("BatchTask nightly")
    expect(page.locator("#result-title .chip")).to_have_text("Running")
    task = page.locator('svg#tree g.component[data-name="task"]')
    expect(task).to_contain_text("3 replicas")
    expect(task).to_contain_text("1 GPU/pod · 3 GPUs")
    expect(page.locator("#stat-gpus .value")).to_have_text("3")
    expect(page.locator("#gang-min")).to_have_text("3 pods")
    # an inline definition has no page of its own
    expect(page.locator("#definition-name")).to_have_text("acme-example-com-batchtask-v1")
    expect(page.locator("#definition-link")).to_have_count(0)


def test_interpret_with_pods(bare: Server, page: Any) -> None:
    page.goto(f"{bare.url}/ui/interpret")
    base = "definitions/kubeflow.org/PyTorchJob/v1/testdata"
    interpret(page, read(f"{base}/running.yaml"), pods=read(f"{base}/running-pods.yaml"))
    tree = page.locator("svg#tree")
    expect(tree.locator("g.pod")).to_have_count(4)
    expect(tree.locator('g.pod[data-pod="llama-finetune-master-0"]')).to_contain_text("on dgx-a100-017")
    # worker-2 is crash-looping: not ready, and the pod box says why
    expect(tree.locator('g.component[data-name="worker"]')).to_contain_text("2/3 ready")
    crashing = tree.locator('g.pod[data-pod="llama-finetune-worker-2"]')
    expect(crashing).to_have_attribute("data-ready", "false")
    expect(crashing).to_contain_text("ContainersNotReady")
    expect(page.locator("#stat-ready .value")).to_have_text("3 / 4")
    expect(page.locator("#pods-table tbody tr")).to_have_count(4)
    expect(page.locator('#pods-table tr[data-pod="llama-finetune-worker-2"]')).to_contain_text("CrashLoopBackOff")


def test_interpret_invalid_definition_shows_the_findings(bare: Server, page: Any, shots: Any) -> None:
    broken = read(f"{BATCHTASK}/definition.yaml").replace("replicasPath: .spec.workers // 1",
                                                         "replicasPath: .spec.workers | foo(")
    broken = broken.replace("      name: task\n", "      name: task\n      replicaPath: .spec.workers\n", 1)
    page.goto(f"{bare.url}/ui/interpret")
    interpret(page, read(f"{BATCHTASK}/testdata/running.yaml"), broken)
    problem = page.locator(".problem")
    expect(problem.locator(".problem-title")).to_have_text("Invalid definition (422)")
    finding = problem.locator("tr.finding")
    expect(finding).to_have_count(1)
    expect(finding).to_contain_text("spec.structureDefinition.rootComponent.scaleDefinition.replicasPath")
    expect(finding).to_contain_text("unexpected EOF")
    # the validator's warnings help too (an unknown key)
    expect(page.locator("#definition-warnings")).to_contain_text("replicaPath")
    expect(page.locator("svg#tree")).to_have_count(0)
    shots(page, "ui-interpret-invalid")


def test_interpret_problems(bare: Server, page: Any) -> None:
    page.goto(f"{bare.url}/ui/interpret")
    page.click("#interpret")
    expect(page.locator(".problem .problem-detail")).to_have_text("Paste a workload manifest first.")
    interpret(page, "kind: [")
    expect(page.locator(".problem .problem-title")).to_have_text("Malformed body (400)")
    interpret(page, "apiVersion: example.com/v1\nkind: Gadget\nmetadata: {name: g}\n")
    expect(page.locator(".problem .problem-title")).to_contain_text("No definition (404)")
    expect(page.locator(".problem .problem-detail")).to_contain_text("example.com/v1 Gadget")
    # with a definition the request is an envelope: the manifest must be one document
    interpret(page, read(JOBSET_RUNNING) + "\n---\n" + read(JOBSET_RUNNING), read(f"{BATCHTASK}/definition.yaml"))
    expect(page.locator(".problem .problem-detail")).to_have_text(
        "The manifest holds 2 YAML documents: keep exactly one.")


def test_start_from_a_builtin_definition(bare: Server, page: Any) -> None:
    page.goto(f"{bare.url}/ui/definitions/{JOBSET_DEF}")
    page.click("#use-definition")
    expect(page).to_have_url(re.compile(r"/ui/interpret$"))
    assert f"name: {JOBSET_DEF}" in page.input_value("#definition")
    page.fill("#definition", "")
    page.select_option("#builtin", "kubeflow-org-pytorchjob-v1")
    expect(page.locator("#definition")).to_have_value(re.compile("name: kubeflow-org-pytorchjob-v1"))
    interpret(page, read("definitions/kubeflow.org/PyTorchJob/v1/testdata/running.yaml"), page.input_value("#definition"))
    expect(page.locator('svg#tree g.component[data-name="pytorchjob"]')).to_contain_text("32 GPUs in total")
    page.goto(f"{bare.url}/ui/definitions/no-such-definition")
    expect(page.locator(".problem .problem-title")).to_contain_text("No definition (404)")


# -- without a cluster, with authorization -------------------------------------------------

def test_without_a_cluster_the_list_says_so(bare: Server, page: Any, shots: Any) -> None:
    page.goto(f"{bare.url}/ui/")
    notice = page.locator("#no-cluster")
    expect(notice).to_contain_text("No cluster configured")
    shots(page, "ui-no-cluster")
    expect(page.locator("#workloads")).to_be_hidden()
    page.click("#to-interpret")
    expect(page).to_have_url(re.compile(r"/ui/interpret$"))
    expect(page.locator("#manifest")).to_be_visible()


def test_token_prompt_and_authorized_reads(secured: Server, world: dict[str, Any], kubectl: Kubectl,
                                           page: Any, shots: Any) -> None:
    from ..cluster.apiserver import TOKENS
    from ..cluster.kubeobjects import reader_rbac

    page.goto(f"{secured.url}/ui/?namespace={NS}")
    prompt = page.locator(".token-prompt")
    expect(prompt).to_contain_text("This service needs a token")
    expect(page.locator("#workloads")).to_be_hidden()
    expect(page.locator("#token-state")).to_have_text("No token")

    page.fill("#inline-token", "not-a-token")
    page.press("#inline-token", "Enter")
    expect(prompt).to_contain_text("The token was not accepted")
    shots(page, "ui-token-prompt")

    # alice may read JobSets and Pods in the namespace, nothing else: the list says what is left out
    for doc in reader_rbac("alice", NS, [("jobset.x-k8s.io", "jobsets")]):
        kubectl.apply(doc)
    page.fill("#inline-token", TOKENS["alice"][0])
    page.press("#inline-token", "Enter")
    expect(page.locator("#workloads tr.workload-row")).to_have_count(3)
    assert rows(page) == ["debug-shell", "llm-pretrain", "sweep-lr"]
    expect(page.locator("#warnings")).to_be_visible()
    shots(page, "ui-list-restricted")
    expect(page.locator("#token-state")).to_have_text("Token set")

    # the admin token through the top bar's dialog: every workload
    page.click("#token-button")
    page.fill("#token-input", TOKENS["admin"][0])
    page.click("#token-save")
    expect(page.locator("#workloads tr.workload-row")).to_have_count(6)
    expect(page.locator('tr.workload-row[data-name="llm-pretrain"] .ready-text')).to_have_text("4/7")
    # the token follows to the workload page (sessionStorage)
    page.click('tr.workload-row[data-name="llm-pretrain"] a.workload-link')
    expect(page.locator('svg#tree g.instance[data-id="trainer"]')).to_contain_text("3/4 ready")

    # forgetting it brings the prompt back
    page.click("#token-button")
    page.click("#token-clear")
    expect(page.locator(".token-prompt")).to_contain_text("This service needs a token")


def test_interpret_asks_for_a_token_then_answers(secured: Server, page: Any) -> None:
    from ..cluster.apiserver import TOKENS

    page.goto(f"{secured.url}/ui/interpret")
    expect(page.locator("#builtin")).to_be_hidden()  # the definitions cannot be listed without a token
    interpret(page, read(JOBSET_RUNNING))
    expect(page.locator(".token-prompt")).to_contain_text("This service needs a token")
    page.fill("#inline-token", TOKENS["admin"][0])
    page.press("#inline-token", "Enter")
    expect(page.locator('svg#tree g.component[data-name="jobset"]')).to_contain_text("12 GPUs in total")
    expect(page.locator("#builtin")).to_be_visible()


def test_ui_is_public_and_data_is_not(secured: Server, world: dict[str, Any]) -> None:
    def get(path: str) -> tuple[int, str]:  # http.client sends the path as written (no dot-segment removal)
        conn = http.client.HTTPConnection("127.0.0.1", secured.port, timeout=10)
        try:
            conn.request("GET", path)
            resp = conn.getresponse()
            return resp.status, resp.read().decode(errors="replace")
        finally:
            conn.close()

    for path in ("/ui/", "/ui/interpret", f"/ui/workloads/{NS}/llm-pretrain", f"/ui/definitions/{JOBSET_DEF}",
                 "/ui/static/ui.css", "/ui/static/js/app.js"):
        assert get(path)[0] == 200, path
    for path in (f"/workloads?namespace={NS}", f"/workloads/{NS}/llm-pretrain", "/definitions",
                 f"/ui/../workloads?namespace={NS}", f"/ui/static/../../workloads?namespace={NS}",
                 f"/ui/%2e%2e/workloads?namespace={NS}", f"/ui/static/..%2f..%2fworkloads?namespace={NS}"):
        status, body = get(path)
        assert status in (401, 404), (path, status)
        assert '"items"' not in body and '"live"' not in body, path


def test_routes(bare: Server) -> None:
    with httpx.Client(base_url=bare.url, timeout=10) as c:
        r = c.get("/ui")
        assert r.status_code == 307 and r.headers["location"] == "/ui/"
        assert c.get("/", params={"q": "1"}).headers["location"] == "/ui/?q=1"
        r = c.get("/ui/")
        assert r.headers["content-type"].startswith("text/html")
        assert "script-src 'self'" in r.headers["content-security-policy"]
        assert '<script type="module" src="/ui/static/js/app.js">' in r.text
        for path in ("/ui/interpret", "/ui/workloads/ns/name", "/ui/definitions/d"):
            assert c.get(path).text == r.text
        assert c.get("/ui/static/ui.css").headers["content-type"].startswith("text/css")
        js = c.get("/ui/static/js/tree.js")
        assert js.headers["content-type"].startswith("text/javascript") and js.headers["cache-control"] == "no-cache"
        assert c.get("/ui/nothing-here").status_code == 404
        assert c.get("/ui/static/nothing.js").status_code == 404
        assert not [p for p in c.get("/openapi.json").json()["paths"] if p.startswith("/ui")]
        # nothing the pages load comes from another origin (works offline)
        assert not re.search(r"(src|href)=\"(https?:)?//", r.text)


def test_interpret_shows_accelerators_beyond_nvidia_gpus(bare: Server, page: Any) -> None:
    manifests = read("tests/data/manifests/accelerators.yaml").split("\n---\n")
    page.goto(f"{bare.url}/ui/interpret")
    interpret(page, manifests[1])  # MIG slices and Intel GPUs
    expect(page.locator("#stat-gpus .value")).to_have_text("3")
    expect(page.locator("#stat-accelerators .value")).to_have_text("gpu.intel.com/i915 3, nvidia.com/mig-1g.10gb 6")
    expect(page.locator("#resources-table tbody .accelerators")).to_have_text(
        "gpu.intel.com/i915 3, nvidia.com/mig-1g.10gb 6")
    interpret(page, read(JOBSET_RUNNING))  # NVIDIA GPUs only: the GPU figures say it all
    expect(page.locator("#stat-gpus .value")).to_have_text("12")
    expect(page.locator("#stat-accelerators")).to_have_count(0)
