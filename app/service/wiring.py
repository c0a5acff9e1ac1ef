"""The one wiring root: a service's parts made from its settings and passed to whoever uses
them (no module's globals are set).  create_app composes the HTTP app around what this builds;
the CLI builds its own engine options from its flags (app/engine/options.py)."""

from __future__ import annotations

from ..engine.options import EngineOptions, engine_options
from .gc_policy import CollectorPolicy, parse_thresholds
from .metrics import Metrics
from .middleware import BodyLimits
from .service import Service
from .settings import Settings
from .state_metrics import StateCollector
from .streams import Limits


def engine(settings: Settings) -> EngineOptions:
    """The accelerator rules (--accelerator-resource, --gpu-resource) and the jq result cache
    (--jq-result-cache) of every interpretation, in-process and in the evaluation workers."""
    return engine_options(settings.accelerator_resources, settings.gpu_resources, settings.jq_result_cache)


def stream_limits(settings: Settings) -> Limits:
    return Limits(
        settings.stream_buffer, settings.stream_write_timeout, settings.max_streams_per_caller, settings.max_streams
    )


def body_limits(settings: Settings) -> BodyLimits:
    return BodyLimits(settings.max_body_bytes, settings.max_inflight_body_bytes, settings.body_read_timeout)


def collector(settings: Settings) -> CollectorPolicy:
    """The process's garbage-collector policy (--gc-thresholds, --gc-freeze): gc_policy.py."""
    return CollectorPolicy(parse_thresholds(settings.gc_thresholds), settings.gc_freeze)


def build(settings: Settings) -> Service:
    """A service ready for create_app: its metrics on a registry of its own, with the series
    read at scrape time from the service itself."""
    metrics = Metrics()
    service = Service(
        settings,
        engine=engine(settings),
        streams=stream_limits(settings),
        body_limits=body_limits(settings),
        metrics=metrics,
        collector=collector(settings),
    )
    metrics.registry.register(StateCollector(service))
    return service
