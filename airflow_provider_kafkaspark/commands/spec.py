"""`kafkaspark spec schema|validate`: the job spec's JSON Schema, made from the spec's own
fields (`core/spec/schema.py`), and the check a spec file passes before any submit, naming
the file and the field at fault."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from airflow_provider_kafkaspark.commands.flags import add_shared, wants_json, with_example
from airflow_provider_kafkaspark.commands.output import EXIT_BAD_INPUT, EXIT_OK, emit_json
from airflow_provider_kafkaspark.errors import InvalidInputError


def add_parser(groups: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    group = groups.add_parser("spec", help="the job spec: its JSON Schema, checking spec files")
    actions = group.add_subparsers(dest="action", required=True)

    schema = actions.add_parser(
        "schema", help="print the job spec's JSON Schema (draft 2020-12), made from its fields"
    )
    schema.add_argument(
        "--output", default=None, help="write the schema to this file instead of stdout"
    )
    with_example(
        schema,
        "kafkaspark spec schema > job-spec.schema.json",
        "kafkaspark spec schema --output job-spec.schema.json",
    )
    schema.set_defaults(func=print_schema)

    validate = actions.add_parser(
        "validate", help="check job spec files as a submit does, naming the field at fault"
    )
    validate.add_argument("specs", nargs="+", metavar="spec", help="job spec JSON files")
    add_shared(validate)
    with_example(
        validate,
        "kafkaspark spec validate clicks.json",
        "kafkaspark spec validate specs/*.json --json",
    )
    validate.set_defaults(func=validate_specs)


def schema_text() -> str:
    from airflow_provider_kafkaspark.core.spec.schema import job_spec_schema

    return json.dumps(job_spec_schema(), indent=2) + "\n"


def print_schema(args: argparse.Namespace) -> int:
    text = schema_text()
    if args.output:
        try:
            Path(args.output).write_text(text)
        except OSError as exc:
            raise InvalidInputError(f"{args.output}: cannot write ({exc.strerror})") from exc
    else:
        print(text, end="")
    return EXIT_OK


def validate_specs(args: argparse.Namespace) -> int:
    """Each file through `JobSpec.load`, the parser every submit uses; exit 2 when one fails."""
    from airflow_provider_kafkaspark.core.spec.jobspec import JobSpec

    results: list[dict[str, Any]] = []
    for path in args.specs:
        try:
            spec = JobSpec.load(path)
        except InvalidInputError as exc:
            results.append({"spec": path, "valid": False, "error": str(exc)})
        else:
            results.append({"spec": path, "valid": True, "job_name": spec.job_name})
    if wants_json(args):
        emit_json(results)
    else:
        for result in results:
            if result["valid"]:
                print(f"{result['spec']}: valid (job {result['job_name']})")
            else:
                print(f"{result['spec']}: {result['error']}")
    return EXIT_OK if all(r["valid"] for r in results) else EXIT_BAD_INPUT
