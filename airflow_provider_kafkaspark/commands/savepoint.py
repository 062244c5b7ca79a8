"""`kafkaspark savepoint create|list|show|verify|restore|prune|dispose`."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from airflow_provider_kafkaspark.commands.flags import (
    add_shared,
    savepoint_root,
    wants_json,
    with_example,
)
from airflow_provider_kafkaspark.commands.output import (
    EXIT_FINDINGS,
    EXIT_OK,
    emit_json,
    key_values,
    table,
)

if TYPE_CHECKING:
    from airflow_provider_kafkaspark.core.state.savepoint import RetentionPolicy, SavepointStore

LIST_COLUMNS = [
    "savepoint_id",
    "job_name",
    "last_committed_batch",
    "pending_batch",
    "created_at",
    "files",
    "bytes",
]


def add_parser(groups: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    group = groups.add_parser("savepoint", help="create, list, verify, restore, prune savepoints")
    add_shared(group, root=True)
    with_example(group, "kafkaspark savepoint --root s3://bucket/savepoints list --json")
    actions = group.add_subparsers(dest="action", required=True)

    create = actions.add_parser(
        "create", help="savepoint a stopped query's checkpoint (or a running one's: --running)"
    )
    create.add_argument("checkpoint", help="checkpoint URL or path")
    create.add_argument("--job", required=True, help="job name recorded in the manifest")
    create.add_argument("--id", default=None, help="savepoint id (default: job-time-batch)")
    how = create.add_mutually_exclusive_group()
    how.add_argument(
        "--force", action="store_true", help="copy even while a live driver holds the lease"
    )
    how.add_argument(
        "--running",
        action="store_true",
        help="copy a running query's checkpoint as of its last committed batch, without "
        "stopping it (a periodic savepoint)",
    )
    create.add_argument(
        "--max-count", type=int, default=None, help="then keep at most this many savepoints"
    )
    create.add_argument(
        "--max-age-hours", type=float, default=None, help="then dispose older savepoints"
    )
    create.add_argument(
        "--keep",
        action="append",
        default=[],
        metavar="SAVEPOINT_ID",
        help="a savepoint retention never disposes (repeatable), e.g. the last stable one",
    )
    add_shared(create, root=True)
    with_example(
        create,
        "kafkaspark savepoint create /cp/clicks --job clicks --root /sp --running --max-count 24",
    )
    create.set_defaults(func=create_savepoint)

    listing = actions.add_parser("list", help="complete savepoints, newest first")
    listing.add_argument("--job", default=None, help="only this job's savepoints")
    add_shared(listing, root=True)
    with_example(listing, "kafkaspark savepoint list --root /sp --job clicks --json")
    listing.set_defaults(func=list_savepoints)

    show = actions.add_parser("show", help="one savepoint's manifest")
    show.add_argument("savepoint_id", help="an id, or 'latest'")
    show.add_argument("--job", default=None, help="job for 'latest'")
    show.add_argument("--files", action="store_true", help="include the file table")
    add_shared(show, root=True)
    with_example(show, "kafkaspark savepoint show latest --job clicks --root /sp --files")
    show.set_defaults(func=show_savepoint)

    verify = actions.add_parser("verify", help="check every file against its checksum")
    verify.add_argument("savepoint_id", help="an id, or 'latest'")
    verify.add_argument("--job", default=None, help="job for 'latest'")
    add_shared(verify, root=True)
    with_example(verify, "kafkaspark savepoint verify latest --job clicks --root /sp")
    verify.set_defaults(func=verify_savepoint)

    restore = actions.add_parser("restore", help="restore for a query that will use TARGET")
    restore.add_argument("savepoint_id", help="an id, or 'latest'")
    restore.add_argument("target", help="checkpoint location the restored query will use")
    restore.add_argument(
        "--mode", choices=["checkpoint", "offsets", "latest"], default="checkpoint"
    )
    restore.add_argument("--job", default=None, help="job for 'latest'")
    restore.add_argument(
        "--move-aside", action="store_true", help="rename a non-empty target to a backup first"
    )
    restore.add_argument(
        "--force", action="store_true", help="offsets mode: accept a savepoint's pending batch"
    )
    add_shared(restore, root=True)
    with_example(
        restore,
        "kafkaspark savepoint restore latest /cp/clicks --job clicks --root /sp --move-aside",
    )
    restore.set_defaults(func=restore_savepoint)

    prune = actions.add_parser("prune", help="dispose savepoints beyond a retention policy")
    prune.add_argument("--job", default=None, help="only this job's savepoints")
    prune.add_argument("--max-count", type=int, default=None)
    prune.add_argument("--max-age-hours", type=float, default=None)
    prune.add_argument("--dry-run", action="store_true", help="say what would go, remove nothing")
    prune.add_argument(
        "--keep",
        action="append",
        default=[],
        metavar="SAVEPOINT_ID",
        help="a savepoint never disposed (repeatable), e.g. the last stable one",
    )
    add_shared(prune, root=True)
    with_example(
        prune,
        "kafkaspark savepoint prune --job clicks --max-count 5 --dry-run --root /sp",
    )
    prune.set_defaults(func=prune_savepoints)

    dispose = actions.add_parser("dispose", help="delete one savepoint")
    dispose.add_argument("savepoint_id")
    add_shared(dispose, root=True)
    with_example(dispose, "kafkaspark savepoint dispose clicks-20261123T0800-42 --root /sp")
    dispose.set_defaults(func=dispose_savepoint)

    mark = actions.add_parser("mark", help="mark a savepoint in use (never pruned) or not")
    mark.add_argument("savepoint_id")
    mark.add_argument("--unmark", action="store_true")
    add_shared(mark, root=True)
    with_example(mark, "kafkaspark savepoint mark clicks-20261123T0800-42 --root /sp")
    mark.set_defaults(func=mark_savepoint)


def _store(args: argparse.Namespace) -> SavepointStore:
    from airflow_provider_kafkaspark.core.state.savepoint import SavepointStore

    return SavepointStore(savepoint_root(args))


def _policy(args: argparse.Namespace) -> RetentionPolicy | None:
    from airflow_provider_kafkaspark.core.state.savepoint import RetentionPolicy

    if args.max_count is None and args.max_age_hours is None:
        return None
    return RetentionPolicy(
        max_count=args.max_count,
        max_age_s=args.max_age_hours * 3600 if args.max_age_hours is not None else None,
    )


def create_savepoint(args: argparse.Namespace) -> int:
    from airflow_provider_kafkaspark.lifecycle.retention import apply_retention
    from airflow_provider_kafkaspark.lifecycle.savepoint import savepoint_of_running
    from airflow_provider_kafkaspark.versions import SPARK_VERSION

    policy = _policy(args)
    keep = frozenset(args.keep)
    retention = None
    if args.running:
        manifest, retention = savepoint_of_running(
            args.checkpoint,
            savepoint_root(args),
            args.job,
            policy=policy,
            keep=keep,
            savepoint_id=args.id,
        )
    else:
        manifest = _store(args).create(
            args.checkpoint,
            job_name=args.job,
            force=args.force,
            savepoint_id=args.id,
            spark_version=SPARK_VERSION,
        )
        if policy is not None:
            retention = apply_retention(
                savepoint_root(args), args.job, args.checkpoint, policy, keep
            )
    if wants_json(args):
        emit_json(
            {**manifest.summary(), "retention": retention} if retention else manifest.summary()
        )
    else:
        print(f"savepoint {manifest.savepoint_id} created")
        print(key_values(manifest.summary()))
        if retention is not None:
            _print_decisions("disposed", retention["savepoints"], "savepoint_id")
            if retention["backups"]:
                _print_decisions("disposed", retention["backups"], "restore_backup")
    return EXIT_OK


def _print_decisions(verb: str, decision: dict[str, Any], column: str) -> None:
    rows = [
        {column: name, "decision": verb if name in decision["disposed"] else "kept", "reason": why}
        for name, why in decision["reasons"].items()
    ]
    if rows:
        print(table(rows, [column, "decision", "reason"]))


def list_savepoints(args: argparse.Namespace) -> int:
    rows = [m.summary() for m in _store(args).list(args.job)]
    if wants_json(args):
        emit_json(rows)
    else:
        print(table(rows, LIST_COLUMNS))
    return EXIT_OK


def show_savepoint(args: argparse.Namespace) -> int:
    manifest = _store(args).resolve(args.savepoint_id, args.job)
    full = manifest.to_dict()
    if not args.files:
        full.pop("files")
        full["files"] = len(manifest.files)
    if wants_json(args):
        emit_json(full)
    else:
        print(key_values(full))
    return EXIT_OK


def verify_savepoint(args: argparse.Namespace) -> int:
    store = _store(args)
    sid = store.resolve(args.savepoint_id, args.job).savepoint_id
    result = store.verify(sid)
    if wants_json(args):
        emit_json(result.to_dict())
    else:
        state = "OK" if result.ok else "FAILED"
        print(f"savepoint {sid}: {state} ({result.files_checked} files checked)")
        for problem in result.problems:
            print(f"problem: {problem}")
    return EXIT_OK if result.ok else EXIT_FINDINGS


def restore_savepoint(args: argparse.Namespace) -> int:
    from airflow_provider_kafkaspark.core.state.restore import restore

    ref = None if args.mode == "latest" and args.savepoint_id == "latest" else args.savepoint_id
    result = restore(
        _store(args),
        ref,
        args.target,
        args.mode,
        job_name=args.job,
        move_target_aside=args.move_aside,
        force=args.force,
    )
    if wants_json(args):
        emit_json(result.to_dict())
    else:
        print(key_values(result.to_dict()))
    return EXIT_OK


def prune_savepoints(args: argparse.Namespace) -> int:
    from airflow_provider_kafkaspark.core.state.savepoint import RetentionPolicy

    policy = _policy(args) or RetentionPolicy()
    result = _store(args).prune(
        policy, job_name=args.job, dry_run=args.dry_run, keep=frozenset(args.keep)
    )
    if wants_json(args):
        emit_json(result.to_dict())
    else:
        verb = "would dispose" if args.dry_run else "disposed"
        _print_decisions(verb, result.to_dict(), "savepoint_id")
    return EXIT_OK


def dispose_savepoint(args: argparse.Namespace) -> int:
    _store(args).dispose(args.savepoint_id)
    if wants_json(args):
        emit_json({"disposed": args.savepoint_id})
    else:
        print(f"savepoint {args.savepoint_id} disposed")
    return EXIT_OK


def mark_savepoint(args: argparse.Namespace) -> int:
    _store(args).mark_in_use(args.savepoint_id, not args.unmark)
    state = "not in use" if args.unmark else "in use"
    if wants_json(args):
        emit_json({"savepoint_id": args.savepoint_id, "in_use": not args.unmark})
    else:
        print(f"savepoint {args.savepoint_id} marked {state}")
    return EXIT_OK
