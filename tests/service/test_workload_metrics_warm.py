"""The first render of the workload metrics, made ahead of the first scrape after a sync, lets the
event loop run between chunks (a 10,000-workload model held it ~1 s), and leaves nothing for the
scrape to render."""

from __future__ import annotations

import asyncio

from app.service.workload_metrics import WorkloadMetrics
from benchmarks.pod_events_bench import Fed


def test_warm_yields_between_chunks_and_the_scrape_finds_every_line() -> None:
    fed = Fed(60)
    fed.settle()
    warmed = WorkloadMetrics(lambda: [fed.model], False)
    rendered = 0
    real = warmed._render

    def counting(rows):  # type: ignore[no-untyped-def]
        nonlocal rendered
        rendered += len(rows)
        return real(rows)

    warmed._render = counting  # type: ignore[method-assign]
    turns = 0

    async def run() -> None:
        async def other() -> None:
            nonlocal turns
            while True:
                turns += 1
                await asyncio.sleep(0)

        t = asyncio.create_task(other())
        await asyncio.sleep(0)
        await warmed.warm(every=10)
        t.cancel()

    asyncio.run(run())
    assert rendered == 60
    assert turns >= 60 // 10, "the loop ran other tasks between the chunks"
    body = warmed.render()
    assert rendered == 60, "the scrape after the warm-up rendered no workload again"
    assert body == WorkloadMetrics(lambda: [fed.model], False).render()
