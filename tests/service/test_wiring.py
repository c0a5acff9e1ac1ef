"""One wiring root: a service's parts are made from its own settings and passed in, so two
services in one process (or a test beside the service) share none of them."""

from __future__ import annotations

import asyncio
import json

from prometheus_client import generate_latest

from app.engine.accelerators import DEFAULT_RULES
from app.karta.load import load_builtin
from app.karta.registry import Registry
from app.service import wiring
from app.service.app import create_app
from app.service.service import Service
from app.service.settings import Settings

from .conftest import ROOT

JOBSET = json.loads((ROOT / "benchmarks" / "data" / "jobset-16k.json").read_text())


def test_each_service_is_wired_from_its_own_settings() -> None:
    custom = wiring.build(Settings(isolation="none", stream_buffer=5, stream_write_timeout=2.5, max_streams=7,
                                   max_streams_per_caller=3, max_body_bytes=1000, max_inflight_body_bytes=5000,
                                   body_read_timeout=4.0, jq_result_cache=False,
                                   accelerator_resources=["nvidia.com/gpu"], gpu_resources=["nvidia.com/gpu"]))
    default = wiring.build(Settings(isolation="none"))
    s = custom.streams
    assert (s.buffer, s.write_timeout, s.total, s.per_caller) == (5, 2.5, 7, 3)
    assert default.streams.buffer == 1000 and default.streams is not s
    b = custom.body_limits
    assert (b.max_body, b.inflight, b.seconds) == (1000, 5000, 4.0)
    assert custom.engine.jq_results is None and default.engine.jq_results is not None
    assert custom.engine.rules.accelerators == ("nvidia.com/gpu",) and default.engine.rules is DEFAULT_RULES
    assert custom.evaluator.options is custom.engine and default.evaluator.options is default.engine
    assert custom.metrics.registry is not default.metrics.registry


def test_the_engine_options_reach_the_interpretation() -> None:
    """The service's accelerator rules count its answers; another service's are its own."""
    d = Registry.of(load_builtin()).resolve_object(JOBSET)
    assert d is not None
    nvidia_only = wiring.build(Settings(isolation="none", accelerator_resources=["nvidia.com/gpu"],
                                        gpu_resources=["nvidia.com/gpu"]))
    none_counted = wiring.build(Settings(isolation="none", accelerator_resources=["example.com/none"],
                                         gpu_resources=["example.com/none"]))

    async def totals(service: Service) -> dict:
        return (await service.evaluate(d, JOBSET, None))["totals"]

    a, b = asyncio.run(totals(nvidia_only)), asyncio.run(totals(none_counted))
    assert a["gpus"] > 0 and a["accelerators"] == {"nvidia.com/gpu": a["gpus"]}
    assert b["gpus"] == 0 and b["accelerators"] == {}
    assert a["requests"] == b["requests"]  # only what counts as an accelerator differs


def test_each_app_scrapes_its_own_registry() -> None:
    """Two apps in one process: each counts its own interpretations; the scrape-time series of
    the definition store are registered on each (nothing is registered at import)."""
    first, second = create_app(Settings(isolation="none")), create_app(Settings(isolation="none"))
    d = Registry.of(load_builtin()).resolve_object(JOBSET)
    assert d is not None
    asyncio.run(first.state.service.evaluate(d, JOBSET, None))
    one, other = (generate_latest(a.state.service.metrics.registry).decode() for a in (first, second))
    assert 'wlmap_interpretations_total{definition="' + d.name in one
    assert 'wlmap_interpretations_total{definition="' not in other
    assert "wlmap_definition_reloads_total" in one and "wlmap_definition_reloads_total" in other
