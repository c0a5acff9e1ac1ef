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


def test_a_list_comes_page_by_page_each_object_once_and_a_consumer_may_stop_early(apiserver: ApiServer,
                                                                                  kubectl: Kubectl) -> None:
    """Every object comes once, page by page in the API server's order, with the list's
    resourceVersion; a consumer that stops early leaves nothing behind."""
    ns = "wlmap-pages"
    kubectl.ensure_namespace(ns)
    for i in range(7):
        kubectl.apply({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": f"cm-{i}", "namespace": ns},
                       "data": {"i": str(i)}})
    cms = Resource("", "v1", "ConfigMap", "configmaps", True)
    unhandled: list[dict[str, object]] = []

    async def run() -> None:
        asyncio.get_running_loop().set_exception_handler(lambda loop, ctx: unhandled.append(ctx))
        kube = await Kube.connect(str(apiserver.kubeconfig("admin")))
        try:
            pages = [(sorted(o["metadata"]["name"] for o in page), rv, {(o["apiVersion"], o["kind"]) for o in page})
                     async for page, rv in kube.pages(cms, ns, limit=3)]
            assert [names for names, _, _ in pages] == [["cm-0", "cm-1", "cm-2"], ["cm-3", "cm-4", "cm-5"], ["cm-6"]]
            assert len({rv for _, rv, _ in pages}) == 1 and pages[0][1]  # one list, one version
            assert all(kinds == {("v1", "ConfigMap")} for _, _, kinds in pages)
            whole = await kube.list(cms, ns, limit=2)
            assert sorted(o["metadata"]["name"] for o in whole["items"]) == [f"cm-{i}" for i in range(7)]

            gen = kube.pages(cms, ns, limit=3)
            first, _ = await anext(gen)
            assert len(first) == 3
            await gen.aclose()
            await asyncio.sleep(0.5)
            assert not [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
        finally:
            await kube.close()

    asyncio.run(run())
    assert unhandled == []
