"""YAML loading that remembers where every value came from.

Specs are validated once, at the boundary, by pydantic. When validation fails we want the error
to name the file *and line* of the offending value, so the loader converts YAML nodes itself and
keeps a map from each value's path (a tuple of keys and indices) to its line number.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import yaml
from pydantic import BaseModel, ValidationError

from limbo_plugin.errors import SpecError

PathKey = tuple[str | int, ...]
ModelT = TypeVar("ModelT", bound=BaseModel)


@dataclass
class LoadedYaml:
    """A parsed YAML document plus the line (1-based) of every value in it."""

    file: Path
    data: Any
    lines: dict[PathKey, int] = field(default_factory=dict)

    def line_of(self, path: Iterable[str | int]) -> int | None:
        """Line of the value at ``path``, or of its nearest ancestor that has one."""
        key = tuple(path)
        while True:
            if key in self.lines:
                return self.lines[key]
            if not key:
                return None
            key = key[:-1]

    def error(self, path: Iterable[str | int], message: str) -> SpecError:
        parts = tuple(path)
        return SpecError(self.file, message, line=self.line_of(parts), path=format_path(parts))


def format_path(path: Iterable[str | int]) -> str:
    """Render ``("tools", 3, "name")`` as ``tools[3].name``."""
    out = ""
    for part in path:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += f".{part}" if out else str(part)
    return out


def _convert(node: yaml.Node, path: PathKey, lines: dict[PathKey, int], file: Path) -> Any:
    lines[path] = node.start_mark.line + 1
    if isinstance(node, yaml.MappingNode):
        result: dict[Any, Any] = {}
        for key_node, value_node in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":
                raise SpecError(file, "YAML merge keys ('<<') are not supported",
                                line=key_node.start_mark.line + 1, path=format_path(path))
            key = yaml.SafeLoader.construct_scalar(_SCALAR_LOADER, key_node)
            if key in result:
                raise SpecError(file, f"duplicate key {key!r}", line=key_node.start_mark.line + 1,
                                path=format_path(path))
            result[key] = _convert(value_node, (*path, key), lines, file)
        return result
    if isinstance(node, yaml.SequenceNode):
        return [_convert(item, (*path, i), lines, file) for i, item in enumerate(node.value)]
    return _SCALAR_LOADER.construct_object(node, deep=True)


_SCALAR_LOADER = yaml.SafeLoader("")
COMPOSER: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
"""libyaml's parser when PyYAML was built with it (about 8× faster on the spec tree, the same
nodes and line marks), else the pure-Python one."""


def load_yaml(file: str | Path) -> LoadedYaml:
    """Parse one YAML file; syntax errors become :class:`SpecError` with the file and line."""
    file = Path(file)
    try:
        text = file.read_text(encoding="utf-8")
    except OSError as exc:
        raise SpecError(file, f"cannot read file: {exc.strerror}") from exc
    return load_yaml_text(text, file)


def load_yaml_text(text: str, file: str | Path = "<string>") -> LoadedYaml:
    file = Path(file)
    try:
        node = yaml.compose(text, Loader=COMPOSER)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark is not None else None
        problem = exc.problem or exc.context or "invalid YAML"
        raise SpecError(file, f"YAML syntax error: {problem}", line=line) from exc
    except yaml.YAMLError as exc:
        raise SpecError(file, f"YAML syntax error: {exc}") from exc
    lines: dict[PathKey, int] = {}
    data = None if node is None else _convert(node, (), lines, file)
    return LoadedYaml(file=file, data=data, lines=lines)


def validate(doc: LoadedYaml, model: type[ModelT], *, at: PathKey = (),
             context: dict[str, Any] | None = None) -> ModelT:
    """Validate ``doc`` (or the value at path ``at`` in it) as ``model``, with the pydantic
    validation ``context`` the model's validators may read (e.g. the spec registry).

    The first pydantic error becomes a :class:`SpecError` naming the file, the line of the
    offending value and its path; the rest are appended so one run shows every problem.
    """
    value: Any = doc.data
    for part in at:
        value = value[part]
    if value is None:
        raise doc.error(at, "the document is empty")
    try:
        return model.model_validate(value, context=context)
    except ValidationError as exc:
        errors = exc.errors(include_url=False)
        first = errors[0]
        loc = (*at, *_clean_loc(first["loc"]))
        message = _describe(first)
        if len(errors) > 1:
            others = "; ".join(
                f"{format_path((*at, *_clean_loc(e['loc'])))}: {_describe(e)}" for e in errors[1:5]
            )
            message += f" (also: {others})"
        raise doc.error(loc, message) from None


def _clean_loc(loc: tuple[Any, ...]) -> PathKey:
    """Drop pydantic's union-branch markers so the path matches the YAML document."""
    return tuple(part for part in loc if isinstance(part, int) or not _is_marker(str(part)))


def _is_marker(part: str) -> bool:
    return part.startswith(("function-", "tagged-union", "union[")) or "[" in part


def _describe(error: Any) -> str:
    kind = error.get("type", "")
    if kind == "extra_forbidden":
        return "unknown field"
    if kind == "missing":
        return "required field is missing"
    if kind == "value_error" and isinstance(error.get("ctx", {}).get("error"), ValueError):
        return str(error["ctx"]["error"])  # our own validators' messages, without a prefix
    return str(error.get("msg", "invalid value"))
