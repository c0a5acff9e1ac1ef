"""Event loops under a dropping network: why the service runs asyncio's loop when it talks to an
API server (`--loop auto`).

A real kube-apiserver sits behind a TCP relay (tests/ui/relay.py) that can drop the network: open
connections are reset and new ones are accepted, then reset.  A client process (the service's own
`Kube` client, kubernetes-asyncio over aiohttp, TLS) keeps four readers listing and one probe
asking `/version`, as a fleet member does; the relay goes down for 3 s and comes back, several
times.  Each loop runs the same cycles in fresh processes, side by side, and the script prints
per loop: processes that aborted, processes that saw "File descriptor N is used by transport",
and cycles after which the probe did not get an answer again within 10 s.

    python benchmarks/loop_faults.py [--runs 3] [--cycles 4]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

FD_ERROR = "is used by transport"


# -- the client process ---------------------------------------------------------------------

def _ask(word: str) -> None:
    """Ask the parent to turn the relay (it answers on our stdin once done)."""
    print(word, flush=True)
    sys.stdin.readline()


async def _client(kubeconfig: str, cycles: int) -> None:
    from app.cluster.kube import Kube

    kube = await Kube.connect(kubeconfig, request_timeout=30)

    async def reader() -> None:
        while True:
            try:
                await kube.request("GET", "/api/v1/namespaces", timeout=5)
            except Exception:  # noqa: BLE001, S110 - the network is being dropped on purpose
                pass
            await asyncio.sleep(0.05)

    async def probe() -> str | None:
        try:
            await kube.request("GET", "/version", timeout=5)
            return None
        except Exception as e:  # noqa: BLE001
            return f"{type(e).__name__}: {e}"

    readers = [asyncio.create_task(reader()) for _ in range(4)]
    for _ in range(cycles):
        _ask("down")
        fd_errors = 0
        t0 = time.monotonic()
        while time.monotonic() - t0 < 3:
            fd_errors += FD_ERROR in (await probe() or "")
            await asyncio.sleep(0.1)
        _ask("up")
        t0, error = time.monotonic(), "?"
        while time.monotonic() - t0 < 10 and (error := await probe()) is not None:
            fd_errors += FD_ERROR in error
            await asyncio.sleep(0.2)
        print(json.dumps({"recovered": error is None, "fd_errors": fd_errors, "error": error}), flush=True)
    for t in readers:
        t.cancel()
    await kube.close()


def client_main(loop: str, kubeconfig: str, cycles: int) -> None:
    if loop == "uvloop":
        import uvloop

        uvloop.run(_client(kubeconfig, cycles))
    else:
        asyncio.run(_client(kubeconfig, cycles))


# -- the parent: API server, relay, and the side-by-side table ---------------------------------

def run_client(loop: str, kubeconfig: Path, cycles: int, relay: object) -> dict[str, object]:
    proc = subprocess.Popen([sys.executable, __file__, "--client", loop, str(kubeconfig), str(cycles)],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert proc.stdin is not None and proc.stdout is not None
    results = []
    for line in proc.stdout:
        word = line.strip()
        if word in ("down", "up"):
            getattr(relay, word)()
            proc.stdin.write("ok\n")
            proc.stdin.flush()
        elif word.startswith("{"):
            results.append(json.loads(word))
    relay.up()  # type: ignore[attr-defined]
    rc = proc.wait(30)
    stderr = proc.stderr.read() if proc.stderr else ""
    return {"rc": rc, "cycles": results, "fd_seen": FD_ERROR in stderr or any(r["fd_errors"] for r in results)}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=3, help="client processes per loop")
    ap.add_argument("--cycles", type=int, default=4, help="network drops per process")
    ap.add_argument("--client", nargs=3, metavar=("LOOP", "KUBECONFIG", "CYCLES"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.client:
        client_main(args.client[0], args.client[1], int(args.client[2]))
        return

    from tests.cluster.apiserver import ApiServer, ensure_binaries
    from tests.ui.relay import Relay

    if not ensure_binaries():
        raise SystemExit("kube-apiserver binaries are needed (see tests/cluster/apiserver.py)")
    import uvloop

    server = ApiServer().start()
    relay = Relay(server.port)
    try:
        doc = json.loads(server.kubeconfig("admin").read_text())
        doc["clusters"][0]["cluster"]["server"] = f"https://127.0.0.1:{relay.port}"
        kubeconfig = Path(tempfile.mkdtemp(prefix="wlmap-loops-")) / "kubeconfig"
        kubeconfig.write_text(json.dumps(doc))
        print(f"kube-apiserver behind a resetting relay; {args.runs} client processes per loop, "
              f"{args.cycles} drops of 3 s each; uvloop {uvloop.__version__}")
        for loop in ("uvloop", "asyncio"):
            runs = [run_client(loop, kubeconfig, args.cycles, relay) for _ in range(args.runs)]
            aborted = sum(r["rc"] != 0 for r in runs)
            fd = sum(bool(r["fd_seen"]) for r in runs)
            done = [c for r in runs for c in r["cycles"]]  # type: ignore[attr-defined]
            stuck = sum(not c["recovered"] for c in done)
            codes = sorted({int(r["rc"]) for r in runs})  # type: ignore[call-overload]
            print(f"{loop:8s}: {aborted} of {len(runs)} processes died (exit codes {codes}), "
                  f"{fd} of {len(runs)} saw '{FD_ERROR}', {stuck} of {len(done)} completed cycles not recovered "
                  f"within 10 s ({args.runs * args.cycles - len(done)} cycles never ran)")
    finally:
        relay.close()
        server.stop()


if __name__ == "__main__":
    main()
