"""SIGTERM stops a real `wlmap serve` within a bound, even with an evaluation in flight (the
open-stream case needs the live model: tests/cluster/test_streams.py)."""

from __future__ import annotations

import signal
import subprocess
import threading
import time

import httpx

from .conftest import Server
from .test_api import TASK
from .test_deadline import BASE, hostile

BOUND = 20.0  # seconds: a correctness bound (the process must exit), not a speed target


def exits_within(s: Server, seconds: float) -> float | None:
    """SIGTERM the server; the seconds it took to exit, or None if it did not (it is then killed)."""
    started = time.monotonic()
    s.proc.send_signal(signal.SIGTERM)
    try:
        s.proc.wait(seconds)
    except subprocess.TimeoutExpired:
        s.proc.kill()
        s.proc.wait(10)
        return None
    return time.monotonic() - started


def test_sigterm_with_an_evaluation_in_flight_exits_within_the_shutdown_timeout() -> None:
    # The evaluation would run for a minute: only the shutdown timeout (2 s) can end it.
    s = Server("--eval-workers", "1", "--eval-deadline", "60", "--shutdown-timeout", "2")
    outcome: dict[str, object] = {}
    try:
        with httpx.Client(base_url=s.url, timeout=30) as c:
            assert c.post("/interpret", json={"object": TASK, "definition": BASE}).status_code == 200  # worker up

        def hang() -> None:
            with httpx.Client(base_url=s.url, timeout=90) as c:
                try:
                    outcome["status"] = c.post("/interpret", json={"object": TASK,
                                                                   "definition": hostile("until(false; .)")}).status_code
                except httpx.HTTPError as e:
                    outcome["error"] = type(e).__name__

        t = threading.Thread(target=hang, daemon=True)
        t.start()
        time.sleep(1.0)  # the request is in the worker by now; if not, it is refused or cut all the same
        took = exits_within(s, BOUND)
        assert took is not None, f"still running {BOUND} s after SIGTERM:\n{s.output()}"
        assert s.proc.returncode in (0, -signal.SIGTERM), s.output()  # uvicorn re-raises the signal it drained on
        t.join(10)
        assert outcome, "the in-flight request neither ended nor failed"
    finally:
        if s.proc.poll() is None:
            s.stop()
        else:
            s.log.close()
