"""Output for people (aligned tables) and machines (`--json`), and the exit codes."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

EXIT_OK = 0
EXIT_ERROR = 1  # the system answered badly: Kafka unreachable, a live lease, ...
EXIT_BAD_INPUT = 2  # the input is wrong: a file, a URL, an id, an argument
EXIT_FINDINGS = 3  # the command worked and found something that needs a person


def emit_json(value: Any) -> None:
    print(json.dumps(value, indent=2, sort_keys=True, default=str))


def server_status(status: Mapping[str, Any]) -> int:
    """A local server's status as JSON, and the exit code: findings when it is not running."""
    print(json.dumps(status, indent=2))
    return EXIT_OK if status["running"] else EXIT_FINDINGS


def table(rows: Sequence[Mapping[str, Any]], columns: Sequence[str]) -> str:
    if not rows:
        return "(none)"
    cells = [[_cell(row.get(c)) for c in columns] for row in rows]
    widths = [max(len(c), *(len(r[i]) for r in cells)) for i, c in enumerate(columns)]
    lines = ["  ".join(c.upper().ljust(w) for c, w in zip(columns, widths, strict=True))]
    lines += ["  ".join(v.ljust(w) for v, w in zip(r, widths, strict=True)) for r in cells]
    return "\n".join(line.rstrip() for line in lines)


def key_values(pairs: Mapping[str, Any]) -> str:
    width = max((len(k) for k in pairs), default=0)
    return "\n".join(f"{k.ljust(width)}  {_cell(v)}" for k, v in pairs.items())


def _cell(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, (dict, list)):
        return json.dumps(value, separators=(",", ":"), sort_keys=True)
    return str(value)
