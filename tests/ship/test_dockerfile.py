"""The Dockerfile, checked without a registry (these machines cannot pull base images):
parsed for its structure, and its runtime contract reproduced with the real wheel - installed
read-only and run as the image's unprivileged user with only /tmp writable."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
import zipfile
from pathlib import Path

import httpx
import pytest
from dockerfile_parse import DockerfileParser

from app.cli.main import parser as cli_parser
from app.service.settings import Settings

from tests.required import missing

from ..service.conftest import free_port

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def dockerfile() -> DockerfileParser:
    p = DockerfileParser(path=str(ROOT / "Dockerfile"))
    return p


def final_stage(df: DockerfileParser) -> list[dict]:
    instructions = df.structure
    last_from = max(i for i, ins in enumerate(instructions) if ins["instruction"] == "FROM")
    return instructions[last_from:]


def test_multi_stage_slim_base(dockerfile: DockerfileParser) -> None:
    froms = [i["value"] for i in dockerfile.structure if i["instruction"] == "FROM"]
    assert len(froms) >= 2
    global_args = dict(i["value"].split("=", 1) for i in dockerfile.structure[:dockerfile.structure.index(
        next(i for i in dockerfile.structure if i["instruction"] == "FROM"))] if i["instruction"] == "ARG")
    base = global_args.get("PYTHON_IMAGE", "")
    assert re.fullmatch(r"python:3\.1[1-9]-slim(-\w+)?", base), base
    assert froms[0].startswith("${PYTHON_IMAGE} AS build") and froms[-1] == "${PYTHON_IMAGE}"
    # the final stage takes only the virtualenv from the build stage
    copies = [i["value"] for i in final_stage(dockerfile) if i["instruction"] == "COPY"]
    assert copies == ["--from=build /opt/wlmap /opt/wlmap"]


def test_runs_as_non_root(dockerfile: DockerfileParser) -> None:
    users = [i["value"] for i in final_stage(dockerfile) if i["instruction"] == "USER"]
    assert users, "the final stage sets no USER"
    uid = users[-1].split(":")[0]
    assert uid.isdigit() and int(uid) >= 1000, "numeric non-root uid (Kubernetes runAsNonRoot checks numbers)"


def test_entrypoint_is_the_cli_serve_command(dockerfile: DockerfileParser) -> None:
    final = final_stage(dockerfile)
    entry = [i["value"] for i in final if i["instruction"] == "ENTRYPOINT"][-1]
    cmd = [i["value"] for i in final if i["instruction"] == "CMD"][-1]
    import json

    argv = json.loads(entry) + json.loads(cmd)  # exec form only: signals reach wlmap, not a shell
    assert argv[0] == "wlmap"
    args = cli_parser().parse_args(argv[1:])
    assert args.command == "serve"
    # every WLMAP_* variable the image sets is a setting the service reads
    known = set(Settings().to_env()) | {"WLMAP_CONFIGMAP_NAME", "WLMAP_KUBECONFIG", "WLMAP_NAMESPACE",
                                        "WLMAP_CONFIGMAP_SELECTOR"}
    env = dockerfile.envs
    wlmap_env = {k for k in env if k.startswith("WLMAP_")}
    assert wlmap_env and wlmap_env <= known, wlmap_env - known
    assert env["WLMAP_HOST"] == "0.0.0.0"  # reachable from outside the container


def test_oci_labels(dockerfile: DockerfileParser) -> None:
    labels = dockerfile.labels
    for key in ("title", "description", "version", "licenses", "source"):
        assert labels.get(f"org.opencontainers.image.{key}"), key


def test_no_secrets_in_the_image(dockerfile: DockerfileParser) -> None:
    text = (ROOT / "Dockerfile").read_text()
    for ins in dockerfile.structure:
        if ins["instruction"] in ("ENV", "ARG", "LABEL"):
            assert not re.search(r"(?i)(token|password|passwd|secret|api[_-]?key|credential)", ins["value"]), ins
        if ins["instruction"] in ("COPY", "ADD"):
            assert not re.search(r"(?i)(kube/?config|\.kube|\.env\b|id_rsa|\.pem|\.key\b|tokens?\.csv)",
                                 ins["value"]), ins
    assert "ADD " not in text, "COPY only (ADD fetches URLs and unpacks archives)"
    # the build context is an allow-list: nothing but the package sources reaches the image
    ignore = [ln.strip() for ln in (ROOT / ".dockerignore").read_text().splitlines()
              if ln.strip() and not ln.startswith("#")]
    assert ignore[0] == "*"
    assert {ln for ln in ignore if ln.startswith("!")} == {"!pyproject.toml", "!README.md", "!app/", "!definitions/"}


@pytest.fixture
def world_readable_tmp() -> Iterator[Path]:
    """A scratch folder another uid can enter (pytest's tmp_path is private to root)."""
    d = Path(tempfile.mkdtemp(prefix="wlmap-image-"))
    d.chmod(0o755)
    yield d
    for p in [d, *d.rglob("*")]:
        p.chmod(p.stat().st_mode | 0o200)
    shutil.rmtree(d, ignore_errors=True)


def test_image_contract_with_the_real_wheel(world_readable_tmp: Path) -> None:
    """What the final stage does, outside Docker: the wheel carries the catalog, the installed
    tree can be read-only, and `wlmap serve` as uid 10001 with only /tmp writable serves it.
    `make test` sets WLMAP_REQUIRE_IMAGE=1 (CI runs as root on Debian): there it must run."""
    if os.geteuid() != 0:
        missing("needs root to switch to the image's uid", "WLMAP_REQUIRE_IMAGE")
    # The image's interpreter is a system Python any uid can run; this machine's default one may
    # live under /root.  Use the distribution's Python of the same minor version.
    interpreter = Path(f"/usr/bin/python{sys.version_info.major}.{sys.version_info.minor}")
    if not interpreter.exists():
        missing(f"{interpreter} is not installed", "WLMAP_REQUIRE_IMAGE")
    tmp_path = world_readable_tmp
    wheels = tmp_path / "wheels"
    subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--wheel-dir", str(wheels), str(ROOT)],
                   check=True, capture_output=True, timeout=300)
    wheel = next(wheels.glob("workload_map-*.whl"))
    names = zipfile.ZipFile(wheel).namelist()
    catalog = [n for n in names if n.startswith("app/builtin_definitions/") and n.endswith("/definition.yaml")]
    assert len(catalog) == len(list((ROOT / "definitions").rglob("definition.yaml")))

    # install the wheel next to the already installed dependencies, then make it all read-only
    site = tmp_path / "site"
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-compile", "--target", str(site),
                    str(wheel)], check=True, capture_output=True, timeout=300)
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(site)], check=True)
    writable = tmp_path / "tmp"
    writable.mkdir()
    os.chown(writable, 10001, 10001)
    for p in [tmp_path, *tmp_path.rglob("*")]:
        if p != writable and not str(p).startswith(str(writable)):
            p.chmod(p.stat().st_mode & ~0o222)
    port = free_port()
    deps = next(p for p in sys.path if p.endswith("site-packages"))
    env = {"PATH": "/usr/bin:/bin", "TMPDIR": str(writable), "PYTHONPATH": f"{site}:{deps}",
           "PYTHONDONTWRITEBYTECODE": "1", "WLMAP_HOST": "127.0.0.1", "WLMAP_PORT": str(port), "HOME": "/nonexistent"}
    cmd = ["setpriv", "--reuid=10001", "--regid=10001", "--clear-groups", str(interpreter), "-c",
           "import sys; from app.cli.main import main; sys.exit(main(['serve']))"]
    log = open(Path(tempfile.gettempdir()) / f"wlmap-image-contract-{port}.log", "w+")
    proc = subprocess.Popen(cmd, env=env, cwd="/", stdout=log, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                if httpx.get(f"http://127.0.0.1:{port}/readyz", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            assert proc.poll() is None, (log.seek(0), log.read())
            time.sleep(0.2)
        defs = httpx.get(f"http://127.0.0.1:{port}/definitions").json()["items"]
        assert len([d for d in defs if d["source"] == "builtin"]) == len(catalog)
        job = (ROOT / "definitions/jobset.x-k8s.io/JobSet/v1alpha2/testdata/running.yaml").read_bytes()
        r = httpx.post(f"http://127.0.0.1:{port}/interpret", content=job, headers={"content-type": "application/yaml"})
        assert r.status_code == 200 and r.json()["totals"]["gpus"] == 12
        # an inline definition runs in a spawned worker process: that works read-only too
        example = (ROOT / "examples/definitions/acme.example.com/BatchTask/v1").resolve()
        import yaml

        body = {"object": yaml.safe_load((example / "testdata/running.yaml").read_text()),
                "definition": yaml.safe_load((example / "definition.yaml").read_text())}
        r = httpx.post(f"http://127.0.0.1:{port}/interpret", json=body, timeout=30)
        assert r.status_code == 200, r.text
    finally:
        proc.terminate()
        proc.wait(10)
    log.seek(0)
    out = log.read()
    assert "Traceback" not in out and "Permission denied" not in out, out
