"""Why the store cannot answer a read now, as errors of this layer (importable without the Redis
client: the single process never loads it).  The service says each as a problem document
(app/service/errors.py)."""

from __future__ import annotations


class StoreUnavailable(Exception):
    """The shared store does not answer (or answered an error): no answer rather than a stale one."""

    def __init__(self, cause: BaseException | None = None):
        self.cause = cause
        why = f": {type(cause).__name__}" + (f" ({cause})" if str(cause) else "") if cause is not None else ""
        super().__init__(f"the shared store (--store) does not answer{why}; no answer is given rather than a stale one")


class AnswerPending(Exception):
    """The workload has a row, and its shard is still computing its answer: ask again shortly."""

    retry_after = 1  # seconds: a shard writes an answer within moments of its row

    def __init__(self, kind: str, namespace: str, name: str):
        super().__init__(f"{kind} {namespace}/{name}: its shard is computing its answer; try again in a moment")
