"""Values handed between tasks: native when a DAG passes an XComArg (`submit.output`,
`submit.output["since_batch"]`), text when a Jinja template renders them. The one place that
turns either into what the operators need, with errors that name the parameter.

Text is read as JSON only (render a dict with `| tojson`): a Python repr is not parsed.
"""

from __future__ import annotations

import json
from typing import Any

from airflow_provider_kafkaspark.errors import InvalidInputError

__all__ = ["parse_batch_id", "parse_mapping"]


def parse_batch_id(
    value: object, what: str = "since_batch", noun: str = "a batch id"
) -> int | None:
    """An int >= 0 (a batch id, or epoch ms with `noun`) from Python or from a rendered
    template: `None`, `""`, `"None"`, `"null"` -> None; `5`, `"5"`, `" 5 "` -> 5. Anything else
    is an error naming `what`."""
    expected = f"{what}: expected {noun} (int >= 0) or None, got"
    if value is None:
        return None
    if isinstance(value, bool):
        raise InvalidInputError(f"{expected} {value!r}")
    if isinstance(value, int):
        number = value
    elif isinstance(value, str):
        text = value.strip()
        if text.lower() in ("", "none", "null"):
            return None
        try:
            number = int(text)
        except ValueError:
            raise InvalidInputError(f"{expected} {value[:40]!r}") from None
    else:
        raise InvalidInputError(f"{expected} {type(value).__name__}")
    if number < 0:
        raise InvalidInputError(f"{expected} {number}")
    return number


def parse_mapping(value: object, what: str, expected: str) -> dict[str, Any] | None:
    """A dict from Python or from JSON text; None, "" and "None" -> None. `expected` says
    what the dict should be, for the error."""
    if value is None:
        return None
    if isinstance(value, dict):
        return value
    if isinstance(value, str):
        text = value.strip()
        if text.lower() in ("", "none", "null"):
            return None
        try:
            parsed = json.loads(text)
        except ValueError:
            hint = (
                "; pass the task's output (an XComArg such as submit.output) or render it "
                "with '| tojson'"
                if text.startswith("{")
                else ""
            )
            raise InvalidInputError(
                f"{what}: {text[:80]!r} is not {expected} as JSON{hint}"
            ) from None
        if isinstance(parsed, dict):
            return parsed
        if parsed is None:
            return None
    raise InvalidInputError(f"{what} must be {expected}, got {type(value).__name__}")


def submit_handle(value: object, checkpoint: str, where: str) -> tuple[dict[str, Any] | None, str]:
    """(the handle, the checkpoint) of a sensor given the submit operator's output: the
    checkpoint given wins, else the handle's; a handle without one, when none was given, is
    refused naming `where`. No handle: (None, the checkpoint given)."""
    handle = parse_mapping(value, where, "the submit operator's output (a dict)")
    if handle is None or checkpoint:
        return handle, checkpoint
    found = handle.get("checkpoint")
    if not isinstance(found, str) or not found:
        raise InvalidInputError(f"{where}: no checkpoint in it; give checkpoint")
    return handle, found
