"""Schema-driven loading of user files into typed, frozen dataclasses.

The schema *is* the dataclass: field types (int, float, str, bool, Optional, list, dict,
Literal, nested dataclasses) plus optional ``metadata={"check": fn, "doc": "..."}``.
Every problem becomes one :class:`~dpgate.model.errors.ConfigError` naming the file, the path
to the field and what is expected.

Example::

    @dataclass(frozen=True)
    class Port:
        name: str
        cpus: List[int] = field(default_factory=list, metadata={"check": non_negative})

    load(Port, {"name": "tg0", "cpus": [0]}, source="t.yaml", path="nodes.TG")
"""

from __future__ import annotations

import dataclasses
import sys
import typing
from typing import Any, Callable, Dict, List, Optional, Tuple, cast

import yaml

from dpgate.model.errors import ConfigError

_MISSING = dataclasses.MISSING


def _type_name(tp: Any) -> str:
    origin = typing.get_origin(tp)
    if tp is int:
        return "an integer"
    if tp is float:
        return "a number"
    if tp is str:
        return "a string"
    if tp is bool:
        return "true or false"
    if origin is typing.Literal:
        return "one of " + ", ".join(repr(a) for a in typing.get_args(tp))
    if origin in (list, List, tuple, Tuple):
        return "a list"
    if origin in (dict, Dict):
        return "a mapping"
    if dataclasses.is_dataclass(tp):
        return "a mapping with keys " + ", ".join(f.name for f in dataclasses.fields(tp))
    if origin is typing.Union:
        return " or ".join(_type_name(a) for a in typing.get_args(tp) if a is not type(None))
    return getattr(tp, "__name__", str(tp))


def _convert(tp: Any, value: Any, source: str, path: str) -> Any:
    origin = typing.get_origin(tp)
    args = typing.get_args(tp)

    def bad(what: str = "") -> ConfigError:
        return ConfigError(what or f"expected {_type_name(tp)}, got {value!r}", source, path)

    if tp is Any:
        return value
    if origin is typing.Union:
        if value is None and type(None) in args:
            return None
        errors = []
        for arg in args:
            if arg is type(None):
                continue
            try:
                return _convert(arg, value, source, path)
            except ConfigError as err:
                errors.append(err)
        if len(errors) == 1:
            raise errors[0]
        raise bad()
    if origin is typing.Literal:
        if value in args:
            return value
        raise bad(f"expected one of {', '.join(repr(a) for a in args)}, got {value!r}")
    if tp is bool:
        if isinstance(value, bool):
            return value
        raise bad()
    if tp is int:
        if isinstance(value, int) and not isinstance(value, bool):
            return value
        raise bad()
    if tp is float:
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return float(value)
        if isinstance(value, str):  # YAML 1.1 reads 2.5e9 (no dot before e, no sign) as a string
            try:
                return float(value)
            except ValueError:
                pass
        raise bad()
    if tp is str:
        if isinstance(value, str):
            return value
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return str(value)
        raise bad()
    if origin in (list, tuple):
        if not isinstance(value, (list, tuple)):
            raise bad()
        item_tp = args[0] if args else Any
        items = [_convert(item_tp, v, source, f"{path}[{i}]") for i, v in enumerate(value)]
        return tuple(items) if origin is tuple else items
    if origin is dict:
        if not isinstance(value, dict):
            raise bad()
        key_tp, val_tp = args if args else (Any, Any)
        return {
            _convert(key_tp, k, source, f"{path}.{k}"): _convert(val_tp, v, source, _join(path, k))
            for k, v in value.items()
        }
    if dataclasses.is_dataclass(tp):
        return load(cast(type, tp), value, source, path)
    raise TypeError(f"schema: unsupported type {tp!r} at {path}")


def _join(path: str, key: Any) -> str:
    return f"{path}.{key}" if path else str(key)


def load(cls: type, data: Any, source: str = "", path: str = "") -> Any:
    """Build dataclass ``cls`` from plain data, validating every field."""
    if not isinstance(data, dict):
        raise ConfigError(f"expected {_type_name(cls)}, got {data!r}", source, path or "(top)")
    hints = typing.get_type_hints(cls, globalns=vars(sys.modules[cls.__module__]))
    fields = {f.name: f for f in dataclasses.fields(cls) if f.init}
    unknown = [k for k in data if k not in fields]
    if unknown:
        raise ConfigError(
            f"unknown key {unknown[0]!r}; accepted keys: {', '.join(sorted(fields))}",
            source,
            _join(path, unknown[0]),
        )
    kwargs: Dict[str, Any] = {}
    for name, f in fields.items():
        fpath = _join(path, name)
        if name not in data:
            if f.default is _MISSING and f.default_factory is _MISSING:
                doc = f.metadata.get("doc", _type_name(hints[name]))
                raise ConfigError(f"missing required field: {doc}", source, fpath)
            continue
        value = _convert(hints[name], data[name], source, fpath)
        check: Optional[Callable[[Any], Optional[str]]] = f.metadata.get("check")
        if check is not None and value is not None:
            problem = check(value)
            if problem:
                raise ConfigError(f"{problem}, got {data[name]!r}", source, fpath)
        kwargs[name] = value
    obj = cls(**kwargs)
    post = getattr(obj, "validate", None)
    if callable(post):
        problem = post()
        if problem:
            sub, msg = problem if isinstance(problem, tuple) else ("", problem)
            raise ConfigError(msg, source, _join(path, sub) if sub else (path or "(top)"))
    return obj


def read_yaml(path: str, missing_hint: str = "") -> Any:
    """YAML file contents, or one ConfigError naming the file (and line for syntax errors)."""

    try:
        with open(path, encoding="utf-8") as fh:
            return yaml.safe_load(fh)
    except FileNotFoundError:
        raise ConfigError("file not found" + (f": {missing_hint}" if missing_hint else ""), path) from None
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        where = f"line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        raise ConfigError(f"not valid YAML: {getattr(err, 'problem', err)}", path, where) from None


# Reusable checks: return None when fine, else what is expected.
def non_negative(v: Any) -> Optional[str]:
    vals = v if isinstance(v, (list, tuple)) else [v]
    return None if all(x >= 0 for x in vals) else "expected values >= 0"


def positive(v: Any) -> Optional[str]:
    return None if v > 0 else "expected a value > 0"


def one_of(*choices: str) -> Callable[[Any], Optional[str]]:
    def check(v: Any) -> Optional[str]:
        return None if v in choices else f"expected one of {', '.join(choices)}"

    return check
