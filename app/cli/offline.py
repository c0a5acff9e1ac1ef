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
            except InterpretationError as e:
                out.append(CliError(str(e), EXIT_FAIL, e.errors))
            except (EvaluationTimeout, EvaluationCrashed) as e:
                errors = [
                    {
                        "path": getattr(e, "path", ""),
                        "message": str(e),
                        "expression": getattr(e, "expression", None),
                    }
                ]
                out.append(CliError(str(e), EXIT_FAIL, errors))
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
