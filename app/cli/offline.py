"""What the offline commands share: reading a file's documents, choosing each one's definition,
and evaluating (built-in definitions in-process, others in a worker under a deadline)."""

from __future__ import annotations

from typing import Any

from ..documents import DocumentError, parse_documents
from ..engine.interpret import InterpretationError
from ..engine.options import EngineOptions
from ..karta.load import Definition
from ..karta.registry import AmbiguousDefinition, Registry
from .common import EXIT_FAIL, EXIT_NO_DEFINITION, CliError, read_input


class Evaluating:
    """One evaluator for a command's sequence of evaluations of one definition (`async with`),
    called as `await ev(obj)`: the interpretation, or CliError."""

    def __init__(self, d: Definition, deadline: float, options: EngineOptions):
        from ..engine.pool import Evaluator

        self.d = d
        self.ev = Evaluator("untrusted" if d.source != "builtin" else "none", 1, deadline, options=options)

    async def __aenter__(self) -> Evaluating:
        await self.ev.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.ev.close()

    async def __call__(self, obj: dict[str, Any]) -> dict[str, Any]:
        from ..engine.pool import EvaluationCrashed, EvaluationTimeout

        try:
            return await self.ev.interpret(self.d, obj, None)
        except (InterpretationError, EvaluationTimeout, EvaluationCrashed) as e:
            raise _failure(e) from None


def _failure(e: Exception) -> CliError:
    """An evaluation that failed (the definition's error, the deadline, a crashed worker), as the
    CLI reports it."""
    if isinstance(e, InterpretationError):
        return CliError(str(e), EXIT_FAIL, e.errors)
    error = {"path": getattr(e, "path", ""), "message": str(e), "expression": getattr(e, "expression", None)}
    return CliError(str(e), EXIT_FAIL, [error])


async def evaluate(
    jobs: list[tuple[Any, Definition | None, CliError | None]],
    pods: list[dict[str, Any]] | None,
    deadline: float,
    options: EngineOptions,
    templates: bool = False,
) -> list[dict[str, Any] | CliError]:
    """Built-in definitions run in-process; user definitions in a worker killed at the deadline
    (the reference's runner stops an evaluation after 10 s); both with the command's `options`.
    `templates`: each interpretation carries what the consumer formats need (app/formats/)."""
    from ..engine.pool import EvaluationCrashed, EvaluationTimeout, Evaluator

    isolate = any(d is not None and d.source != "builtin" for _, d, _ in jobs)
    ev = Evaluator("untrusted" if isolate else "none", 1, deadline, options=options)
    await ev.start()
    out: list[dict[str, Any] | CliError] = []
    try:
        for doc, d, err in jobs:
            if err is not None or d is None:
                out.append(err or CliError("no definition", EXIT_NO_DEFINITION))
                continue
            try:
                out.append(await ev.interpret(d, doc, pods, templates))
            except (InterpretationError, EvaluationTimeout, EvaluationCrashed) as e:
                out.append(_failure(e))
    finally:
        await ev.close()
    return out


def parse_file(path: str) -> list[Any]:
    try:
        return parse_documents(read_input(path))
    except DocumentError as e:
        raise CliError(f"{path}: {e}") from None


def resolve(doc: Any, registry: Registry) -> Definition:
    if not isinstance(doc, dict) or not doc.get("apiVersion") or not doc.get("kind"):
        raise CliError("document declares no apiVersion and kind", EXIT_FAIL)
    try:
        d = registry.resolve_object(doc)
    except AmbiguousDefinition as e:
        raise CliError(str(e), EXIT_FAIL) from None
    if d is None:
        raise CliError(f"no Karta definition covers {doc['apiVersion']} {doc['kind']}", EXIT_NO_DEFINITION)
    return d
