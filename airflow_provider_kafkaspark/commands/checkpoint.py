"""`kafkaspark checkpoint inspect`."""

from __future__ import annotations

import argparse

from airflow_provider_kafkaspark.commands.flags import add_shared, wants_json, with_example
from airflow_provider_kafkaspark.commands.output import (
    EXIT_FINDINGS,
    EXIT_OK,
    emit_json,
    key_values,
    table,
)


def add_parser(groups: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    group = groups.add_parser("checkpoint", help="read a Spark streaming checkpoint")
    add_shared(group)
    actions = group.add_subparsers(dest="action", required=True)
    inspect = actions.add_parser("inspect", help="position, offsets, state layout, control files")
    inspect.add_argument("checkpoint", help="checkpoint URL or path (any fsspec URL)")
    inspect.add_argument(
        "--verify", action="store_true", help="also check every retained log file (slower)"
    )
    add_shared(inspect)
    with_example(inspect, "kafkaspark checkpoint inspect s3://bucket/checkpoints/clicks --json")
    inspect.set_defaults(func=inspect_checkpoint)


def inspect_checkpoint(args: argparse.Namespace) -> int:
    from airflow_provider_kafkaspark.core.control.folder import ControlFolder
    from airflow_provider_kafkaspark.core.state.checkpoint import (
        CheckpointPosition,
        CheckpointReader,
    )

    reader = CheckpointReader(args.checkpoint)
    control = ControlFolder(reader.location)
    lease = control.read_lease()
    stopped = control.read_stopped()
    submitted = control.read_submitted()
    # A job that failed before its query started (a bad job) has control files and no
    # checkpoint yet: show what it left. Anything else without a checkpoint is an error.
    exists = reader.exists() or (stopped is None and submitted is None)
    position = reader.position() if exists else CheckpointPosition.empty(reader.url)
    state = reader.state_layout().to_dict() if exists else {"operators": {}}
    problems = reader.validate() if args.verify and exists else []
    result = {
        **position.to_dict(),
        "state": state,
        "lease": (
            {"holder": lease.describe(), "fresh": lease.is_fresh(), "age_ms": lease.age_ms()}
            if lease
            else None
        ),
        "stopped": (
            {
                "reason": stopped.reason,
                "clean": stopped.clean,
                "at_ms": stopped.stopped_at_ms,
                "exit_code": stopped.exit_code,
                "message": stopped.message,
            }
            if stopped
            else None
        ),
        "driver_log": submitted.log_file if submitted else None,
        "problems": problems if args.verify else None,
    }
    if wants_json(args):
        emit_json(result)
        return EXIT_FINDINGS if problems else EXIT_OK

    hidden = ("committed_offsets", "planned_offsets", "state")
    print(key_values({k: v for k, v in result.items() if k not in hidden}))
    planned = position.planned_offsets
    topics = sorted(set(planned) | set(position.committed_offsets))
    rows = [
        {
            "topic": t,
            "partition": p,
            "committed": position.committed_offsets.get(t, {}).get(p),
            "planned": planned.get(t, {}).get(p),
        }
        for t in topics
        for p in sorted(set(planned.get(t, {})) | set(position.committed_offsets.get(t, {})))
    ]
    print()
    print(table(rows, ["topic", "partition", "committed", "planned"]))
    if state["operators"]:
        print()
        print(key_values({"state": state}))
    for problem in problems:
        print(f"problem: {problem}")
    return EXIT_FINDINGS if problems else EXIT_OK
