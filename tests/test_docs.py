"""The docs stay true: the site builds in strict mode (every link and anchor resolves), the
README's links resolve, the generated tables are current, and every command the docs show runs.

Commands are the `$ ` lines of ```console blocks in README.md and docs/*.md (a line ending with
`\\` goes on on the next one); the lines after a command, up to the next `$ `, are its output as
shown. Each console block is preceded by one marker comment, so none is left out unseen:

    <!-- doc-test: run -->                    run here; exit 0 and, where output is shown, exactly that
    <!-- doc-test: run with a service -->     the same, against a `wlmap serve` (built-in catalog, no
                                              cluster) this test starts: localhost:8080 is its address
    <!-- doc-test: skip (why) -->             not run here: it needs a cluster, installs something, ...
"""

from __future__ import annotations

import os
import re
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
BIN = Path(sys.executable).parent
WLMAP = BIN / "wlmap"
PAGES = [ROOT / "README.md", *sorted(DOCS.glob("*.md"))]

MARKER = re.compile(r"<!-- doc-test: (run with a service|run|skip \(.+\)) -->")
FENCE = re.compile(r"^(\s*)```(\S*)")


@dataclass
class Command:
    page: str
    line: int
    command: str
    output: list[str]  # as shown; empty: not shown


@dataclass
class Block:
    page: str
    line: int
    lang: str
    marker: str | None
    lines: list[str]

    def commands(self) -> list[Command]:
        out: list[Command] = []
        lines = iter(enumerate(self.lines, self.line + 1))
        for n, text in lines:
            if text.startswith("$ "):
                cmd = text[2:]
                while cmd.endswith("\\"):
                    cmd += "\n" + next(lines)[1]  # the shell reads `\` + newline as a continuation
                out.append(Command(self.page, n, cmd, []))
            elif out:
                out[-1].output.append(text)
        return out


def blocks(path: Path) -> list[Block]:
    """Every fenced block of a page, with the marker comment just before it (blank lines between
    allowed); a block's lines lose the fence's indentation."""
    out: list[Block] = []
    lines = path.read_text().splitlines()
    i, last_marker = 0, None
    name = str(path.relative_to(ROOT) if path.is_relative_to(ROOT) else path)
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            if lines[i].strip():
                found = MARKER.search(lines[i])
                last_marker = found.group(1) if found else None
            i += 1
            continue
        indent, start, body = len(m.group(1)), i + 1, []
        i += 1
        while i < len(lines) and not lines[i].strip().startswith("```"):
            body.append(lines[i][indent:])
            i += 1
        out.append(Block(name, start, m.group(2), last_marker, body))
        last_marker = None
        i += 1
    return out


CONSOLE = [b for p in PAGES for b in blocks(p) if b.lang == "console"]


def _id(c: Command) -> str:
    return f"{c.page}:{c.line}"


def _runnable(marker: str) -> list[Command]:
    return [c for b in CONSOLE if b.marker == marker for c in b.commands()]


def test_every_console_block_is_marked_and_has_commands():
    unmarked = [f"{b.page}:{b.line}" for b in CONSOLE if b.marker is None]
    assert not unmarked, f"console blocks without a <!-- doc-test: ... --> marker: {unmarked}"
    empty = [f"{b.page}:{b.line}" for b in CONSOLE if not b.commands()]
    assert not empty, f"console blocks without a `$ ` command (use ```text for a synopsis): {empty}"
    # the convention is used: these are what a newcomer runs first
    runnable = {c.command for c in _runnable("run")}
    assert any(c.startswith("wlmap interpret ") for c in runnable)
    assert "wlmap definitions test examples/definitions -v" in runnable


def _shell_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("WLMAP_") and k not in ("COLUMNS", "LINES")}
    env["PATH"] = f"{BIN}{os.pathsep}{env.get('PATH', '')}"
    return env


def _run(c: Command, address: str | None = None) -> None:
    for tool in ("jq", "curl"):
        if re.search(rf"(^|\| *){tool}\b", c.command, re.MULTILINE):
            assert shutil.which(tool), f"{_id(c)} needs `{tool}` (make tools installs it)"
    cmd = c.command if address is None else c.command.replace("localhost:8080", address)
    r = subprocess.run(["bash", "-o", "pipefail", "-c", cmd], check=False, capture_output=True, text=True,
                       cwd=ROOT, env=_shell_env(), timeout=120)
    assert r.returncode == 0, f"{_id(c)}: `{c.command}` exited {r.returncode}\n{r.stdout}{r.stderr}"
    if c.output:
        shown = [ln.rstrip() for ln in c.output]
        got = [ln.rstrip() for ln in r.stdout.rstrip("\n").splitlines()]
        assert got == shown, f"{_id(c)}: `{c.command}` printed\n" + "\n".join(got)


def test_the_convention_reads_markers_continuations_and_output(tmp_path: Path):
    page = tmp_path / "page.md"
    page.write_text("Text.\n\n<!-- doc-test: run -->\n\n```console\n$ echo one \\\n    two\none two\n$ true\n```\n\n"
                    "```console\n$ unmarked\n```\n\n  <!-- doc-test: skip (needs a cluster) -->\n  ```console\n"
                    "  $ kubectl get pods\n  ```\n")
    run, unmarked, skipped = blocks(page)
    assert (run.marker, unmarked.marker, skipped.marker) == ("run", None, "skip (needs a cluster)")
    assert [(c.command, c.output) for c in run.commands()] == [("echo one \\\n    two", ["one two"]), ("true", [])]
    assert skipped.commands()[0].command == "kubectl get pods"
    _run(run.commands()[0])
    with pytest.raises(AssertionError, match="printed"):
        _run(Command("page.md", 1, "echo two", ["one"]))
    with pytest.raises(AssertionError, match="exited 1"):
        _run(Command("page.md", 1, "false", []))
    with pytest.raises(AssertionError, match="exited 1"):  # a pipe fails when any part fails
        _run(Command("page.md", 1, "false | cat", []))


@pytest.mark.parametrize("command", _runnable("run"), ids=_id)
def test_documented_command_runs_as_shown(command: Command):
    _run(command)


@pytest.fixture(scope="module")
def service() -> Iterator[str]:
    """`wlmap serve` as `make serve` runs it (built-in catalog, no cluster), on a free port."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = {k: v for k, v in _shell_env().items() if k != "KUBECONFIG"}
    proc = subprocess.Popen([str(WLMAP), "serve", "--port", str(port)], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, env=env, cwd=ROOT)
    try:
        deadline = time.monotonic() + 30
        while True:
            assert proc.poll() is None, "wlmap serve exited"
            try:
                if httpx.get(f"http://127.0.0.1:{port}/readyz", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            assert time.monotonic() < deadline, "wlmap serve did not get ready"
            time.sleep(0.1)
        yield f"127.0.0.1:{port}"
    finally:
        proc.terminate()
        proc.wait(10)


@pytest.mark.parametrize("command", _runnable("run with a service"), ids=_id)
def test_documented_request_answers_as_shown(command: Command, service: str):
    _run(command, service)


def test_site_builds_strict(tmp_path: Path):
    """mkdocs.yml makes every broken link, anchor and nav entry a warning, and strict mode makes
    a warning an error."""
    r = subprocess.run([str(BIN / "mkdocs"), "build", "--strict", "--site-dir", str(tmp_path / "site")],
                       check=False, capture_output=True, text=True, cwd=ROOT,
                       env={**_shell_env(), "NO_MKDOCS_2_WARNING": "1"})
    assert r.returncode == 0, r.stderr
    assert "WARNING" not in r.stderr, r.stderr
    assert (tmp_path / "site" / "index.html").exists()


def _slug(heading: str) -> str:
    """The anchor of a heading, as mkdocs' toc and GitHub make it (for the headings used here)."""
    text = re.sub(r"`([^`]*)`", r"\1", heading)
    text = re.sub(r"[^\w\s-]", "", text).strip().lower()
    return re.sub(r"[-\s]+", "-", text)


def _anchors(path: Path) -> set[str]:
    headings = [ln for ln in _without_code(path.read_text(), keep_inline=True) if re.match(r"#{1,6} ", ln)]
    return {_slug(h.lstrip("#")) for h in headings}


def _without_code(text: str, keep_inline: bool = False) -> list[str]:
    """The lines outside fenced blocks (and without inline code, unless `keep_inline`)."""
    out, fence = [], False
    for ln in text.splitlines():
        if FENCE.match(ln):
            fence = not fence
            continue
        if not fence:
            out.append(ln if keep_inline else re.sub(r"`[^`]*`", "", ln))
    return out


def test_readme_links_resolve():
    """mkdocs checks the pages; the README is checked here: each relative link names a file of
    the repository, and each anchor a heading of that file."""
    readme = ROOT / "README.md"
    links = re.findall(r"\]\(([^)\s]+)\)", "\n".join(_without_code(readme.read_text())))
    assert len(links) >= 10
    broken = []
    for link in links:
        if re.match(r"[a-z]+://|mailto:", link):
            continue
        target, _, anchor = link.partition("#")
        path = (ROOT / target) if target else readme
        if not path.is_file() or (anchor and anchor not in _anchors(path)):
            broken.append(link)
    assert not broken, f"README links that do not resolve: {broken}"


def test_readme_stays_short_and_keeps_the_two_commands():
    text = (ROOT / "README.md").read_text()
    assert len(text.splitlines()) < 300
    assert "`make serve`" in text and "`make test`" in text  # .ci/run calls `make test`


def test_catalog_page_table_is_current():
    r = subprocess.run([sys.executable, str(ROOT / "scripts" / "catalog_table.py"), "--check"], check=False,
                       capture_output=True, text=True, cwd=ROOT)
    assert r.returncode == 0, r.stderr


def test_catalog_page_lists_every_builtin_kind_with_its_states():
    from app.karta.load import load_builtin

    page = (DOCS / "catalog.md").read_text()
    for d in load_builtin():
        states = (d.raw["metadata"].get("annotations") or {}).get("workload-map.dev/states")
        assert states, f"{d.name} has no workload-map.dev/states annotation"
        assert f"`{d.name}`" in page and states in page


def test_readme_example_jobset_is_one_workload_with_12_gpus():
    import json

    r = subprocess.run([str(WLMAP), "interpret", "definitions/jobset.x-k8s.io/JobSet/v1alpha2/testdata/running.yaml",
                        "-o", "json"], check=False, capture_output=True, text=True, cwd=ROOT)
    assert r.returncode == 0, r.stderr
    res = json.loads(r.stdout)
    assert res["workload"]["kind"] == "JobSet"
    assert len(res["tree"]["children"][0]["instances"]) == 3  # three replicated jobs
    assert res["totals"]["gpus"] == 12


def test_configuration_pages_cover_every_serve_flag_and_chart_value():
    """docs/configuration.md names every `wlmap serve` flag and docs/helm.md every top-level
    chart value, so a newcomer never has to read code to find a setting."""
    import argparse

    import yaml

    from app.cli.main import parser

    serve = next(a for a in parser()._actions if isinstance(a, argparse._SubParsersAction)).choices["serve"]
    configuration = (DOCS / "configuration.md").read_text()
    flags = [opt for a in serve._actions for opt in a.option_strings if opt.startswith("--") and opt != "--help"]
    missing = [f for f in flags if f"`{f}" not in configuration]
    assert not missing, f"flags missing from docs/configuration.md: {missing}"
    helm = (DOCS / "helm.md").read_text()
    values = yaml.safe_load((ROOT / "helm" / "workload-map" / "values.yaml").read_text())
    config_keys = [f"config.{k}" for k in values["config"]]
    undocumented = [k for k in list(values) + config_keys
                    if f"`{k}" not in helm and f"`{k.split('.')[-1]}`" not in helm
                    and k not in ("imagePullSecrets", "nameOverride", "fullnameOverride")]
    assert not undocumented, f"chart values missing from docs/helm.md: {undocumented}"


def test_security_promises_name_tests_that_exist():
    """Every test SECURITY.md says keeps a promise exists (a renamed or removed test must take
    its promise's wording with it)."""
    text = (ROOT / "SECURITY.md").read_text()
    refs = re.findall(r"(tests/[\w/]+\.py)(?:::\{([^}]*)\}|::(\w+))?", text)
    assert len(refs) >= 15
    for path, group, single in refs:
        source = (ROOT / path).read_text() if (ROOT / path).exists() else None
        assert source is not None, f"SECURITY.md names {path}, which does not exist"
        for name in filter(None, [single, *(n.strip() for n in group.split(","))]):
            assert re.search(rf"def {re.escape(name)}\b", source), f"SECURITY.md names {path}::{name}, not found"
    # the short form, a test named after a file already cited
    for path, name in re.findall(r"`(test_\w+\.py)::(\w+)`", text):
        hits = [p for p in ROOT.glob(f"tests/**/{path}") if re.search(rf"def {name}\b", p.read_text())]
        assert hits, f"SECURITY.md names {path}::{name}, not found"
