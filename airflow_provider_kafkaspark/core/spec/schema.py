"""The job spec's JSON Schema (draft 2020-12), made from the spec's own dataclasses: each
field's type and default, and what its metadata says (`jobspec.described`: the description
and the keywords its type does not say). Nothing here lists a field: a field added to
`JobSpec`, `KafkaSourceSpec` or `SinkSpec` is in the schema with it.

`kafkaspark spec schema` prints it, the reference's spec page is made from it, and the tests
validate every example spec of the repository against it. `JobSpec.from_dict` stays the
check a spec passes before it runs (its errors name the file and the field): the schema says
the same shape to editors and other tools; what it cannot say (exactly one of `subscribe`,
`subscribe_pattern` and `assign`; a topic for the Kafka sinks; offsets JSON) the
descriptions say.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from typing import Any

from airflow_provider_kafkaspark.core.spec.jobspec import (
    DESCRIPTION,
    ONE_OR_MANY,
    SCHEMA_KEYWORDS,
    JobSpec,
)

DIALECT = "https://json-schema.org/draft/2020-12/schema"
TITLE = "kafkaspark job spec"

_SIMPLE: dict[type, str] = {
    str: "string",
    bool: "boolean",
    int: "integer",
    float: "number",
    type(None): "null",
}


def job_spec_schema() -> dict[str, Any]:
    """The JSON Schema of a job spec file: `JobSpec` at the root, the nested specs in
    `$defs`."""
    defs: dict[str, Any] = {}
    root = object_schema(JobSpec, defs)
    return {"$schema": DIALECT, "title": TITLE, **root, "$defs": dict(sorted(defs.items()))}


def object_schema(kind: type[Any], defs: dict[str, Any]) -> dict[str, Any]:
    """The schema of one spec dataclass: its fields as properties, those without a default
    required, no others allowed (`from_dict` refuses unknown fields)."""
    hints = typing.get_type_hints(kind)
    properties: dict[str, Any] = {}
    required: list[str] = []
    for spec_field in dataclasses.fields(kind):
        properties[spec_field.name] = field_schema(spec_field, hints[spec_field.name], defs)
        if not _has_default(spec_field):
            required.append(spec_field.name)
    schema: dict[str, Any] = {}
    if kind.__doc__:
        schema["description"] = " ".join(kind.__doc__.split())
    schema.update(
        {
            "type": "object",
            "required": required,
            "properties": properties,
            "additionalProperties": False,
        }
    )
    return schema


def field_schema(spec_field: dataclasses.Field[Any], hint: Any, defs: dict[str, Any]) -> Any:
    """One field's schema: its type's, merged with its metadata's keywords, then its
    description and default."""
    schema = _merged(type_schema(hint, defs), dict(spec_field.metadata.get(SCHEMA_KEYWORDS, {})))
    types_of = schema.get("type")
    if isinstance(types_of, list) and "null" in types_of and "enum" in schema:
        schema["enum"] = [*schema["enum"], None]
    if spec_field.metadata.get(ONE_OR_MANY):
        if schema.get("type") != "array":
            raise TypeError(f"{spec_field.name}: one_or_many needs a list type")
        schema = {"anyOf": [dict(schema["items"]), schema]}
    described: dict[str, Any] = {}
    if spec_field.metadata.get(DESCRIPTION):
        described["description"] = spec_field.metadata[DESCRIPTION]
    if _has_default(spec_field):
        described["default"] = _json_value(_default(spec_field))
    return {**described, **schema}


def type_schema(hint: Any, defs: dict[str, Any]) -> dict[str, Any]:
    """The schema of a field's type: the JSON types of `str`, `int`, `float`, `bool` and
    None, `tuple[X, ...]` as an array, `dict[str, X]` as an object, a spec dataclass as a
    reference into `defs`, and unions of those."""
    if hint in _SIMPLE:
        return {"type": _SIMPLE[hint]}
    origin = typing.get_origin(hint)
    args = typing.get_args(hint)
    if origin in (types.UnionType, typing.Union):
        members = [type_schema(arg, defs) for arg in args]
        if all(set(m) == {"type"} and isinstance(m["type"], str) for m in members):
            return {"type": [m["type"] for m in members]}
        return {"anyOf": members}
    if origin is tuple and len(args) == 2 and args[1] is Ellipsis:
        return {"type": "array", "items": type_schema(args[0], defs)}
    if origin is dict and args and args[0] is str:
        return {"type": "object", "additionalProperties": type_schema(args[1], defs)}
    if dataclasses.is_dataclass(hint) and isinstance(hint, type):
        if hint.__name__ not in defs:
            defs[hint.__name__] = {}  # taken, for a spec that refers to itself
            defs[hint.__name__] = object_schema(hint, defs)
        return {"$ref": f"#/$defs/{hint.__name__}"}
    raise TypeError(f"no JSON Schema for the spec field type {hint!r}")


def _has_default(spec_field: dataclasses.Field[Any]) -> bool:
    return (
        spec_field.default is not dataclasses.MISSING
        or spec_field.default_factory is not dataclasses.MISSING
    )


def _default(spec_field: dataclasses.Field[Any]) -> Any:
    if spec_field.default_factory is not dataclasses.MISSING:
        return spec_field.default_factory()
    return spec_field.default


def _json_value(value: Any) -> Any:
    if isinstance(value, tuple | list):
        return [_json_value(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _json_value(v) for k, v in value.items()}
    return value


def _merged(base: dict[str, Any], more: dict[str, Any]) -> dict[str, Any]:
    """`base` with `more`'s keywords, objects merged key by key (so `items` or
    `additionalProperties` may add a keyword to the type's own)."""
    result = dict(base)
    for key, value in more.items():
        if isinstance(value, dict) and isinstance(result.get(key), dict):
            result[key] = _merged(result[key], value)
        else:
            result[key] = value
    return result
