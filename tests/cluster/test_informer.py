"""The informer on a real API server: a kind that is not served (yet) is watched soon after it
is, even when nothing pokes the informer - as after an API server restart, whose CRD list is
whole before the CRDs' handlers are up."""

from __future__ import annotations

import asyncio
import contextlib
import time

from app.cluster.informer import Informer
from app.cluster.kube import Kube, Resource

from .apiserver import ApiServer
from .kubeobjects import Kubectl, crd


def test_a_kind_served_later_is_watched_within_seconds_without_a_poke(apiserver: ApiServer,
                                                                      kubectl: Kubectl) -> None:
    res = Resource("retry.example.com", "v1", "Gadget", "gadgets", True)

    async def run() -> float:
        kube = await Kube.connect(str(apiserver.kubeconfig("admin")))
        inf = Informer(kube, res, lambda o: o, lambda kind, key, old, new: None, not_served_retry=30.0)
        task = asyncio.create_task(inf.run(asyncio.Event()))
        try:
            started = time.monotonic()
            while inf.state != "not-served":
                await asyncio.sleep(0.05)
                assert time.monotonic() - started < 15, inf.status()
            await asyncio.to_thread(kubectl.apply, crd("retry.example.com", "Gadget", "gadgets", ["v1"]))
            await asyncio.to_thread(kubectl.wait_crds, ["gadgets.retry.example.com"])
            served = time.monotonic()
            while inf.state != "synced":  # nothing pokes it: its own retry must find the kind
                await asyncio.sleep(0.05)
                assert time.monotonic() - served < 15, "not watching 15 s after the kind is served"
            return time.monotonic() - served
        finally:
            task.cancel()  # (a watch in progress ends at its server-side timeout, not at a stop)
            with contextlib.suppress(asyncio.CancelledError):
                await task
            await kube.close()

    try:
        took = asyncio.run(run())
    finally:
        kubectl.delete("apiextensions.k8s.io/v1", "CustomResourceDefinition", None, "gadgets.retry.example.com")
    assert took < 15  # the retry doubles from 1 s; before, it waited its full 30 s
