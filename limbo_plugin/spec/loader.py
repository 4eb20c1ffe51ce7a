"""YAML loading that remembers where every value came from.

Specs are validated once, at the boundary, by pydantic. When validation fails we want the error
to name the file *and line* of the offending value, so the loader converts YAML nodes itself and
keeps a map from each value's path (a tuple of keys and indices) to its line number.
"""

from __future__ import annotations

import bisect
import math
import os
import re
import stat
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, TypeVar

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


MAX_SPEC_BYTES = 2 * 1024 * 1024
"""The largest spec file Limbo reads (the shipped ones are under 10 KiB): a bigger file is a
mistake (a data dump, a log), and parsing one would stall every worker's start."""
MAX_VALUES = 200_000
"""How many values a spec may expand to. Aliases are expanded when a document is converted, so
a few hundred bytes of nested aliases (a "billion laughs" file) could otherwise become gigabytes."""
MAX_DEPTH = 64
"""How deeply values may nest; the shipped specs nest fewer than ten levels."""
MAX_INT = 2**53
"""The largest integer a spec may hold: the largest every JSON reader (an agent's, a harness's)
represents exactly."""
SCALAR_TAGS = frozenset(f"tag:yaml.org,2002:{name}"
                        for name in ("str", "int", "float", "bool", "null", "timestamp"))
"""The scalar types a spec may hold: YAML's core types. Any other tag (``!!python/object``,
``!!binary``, a custom ``!tag``) is refused rather than constructed."""
MAP_TAG, SEQ_TAG = "tag:yaml.org,2002:map", "tag:yaml.org,2002:seq"
TIMESTAMP_TAG = "tag:yaml.org,2002:timestamp"
STR_TAG = "tag:yaml.org,2002:str"


@dataclass
class _Converter:
    """Turns a composed YAML node tree into plain values, recording the line of each one.

    The node tree is what ``yaml.compose`` builds with the safe loader: nothing is constructed
    yet, so no tag can run code. Converting it here, rather than with ``yaml.safe_load``, lets
    us refuse what a spec never needs (other tags, merge keys, duplicate keys) and bound what
    aliases may expand to, with the file, line and path of the offending value.
    """

    file: Path
    lines: dict[PathKey, int] = field(default_factory=dict)
    values: int = 0
    _open: set[int] = field(default_factory=set)
    line_of_mark: Callable[[Any], int] = field(default=lambda mark: int(mark.line) + 1)

    def error(self, node: yaml.Node, path: PathKey, message: str) -> SpecError:
        return SpecError(self.file, message, line=self.line_of_mark(node.start_mark),
                         path=format_path(path))

    def convert(self, node: yaml.Node, path: PathKey) -> Any:
        self.values += 1
        if self.values > MAX_VALUES:
            raise self.error(node, path, f"the document expands to more than {MAX_VALUES:,} "
                             "values (nested aliases?); a spec is far smaller")
        if len(path) > MAX_DEPTH:
            raise self.error(node, path, f"values nest more than {MAX_DEPTH} levels deep")
        self.lines[path] = self.line_of_mark(node.start_mark)
        if isinstance(node, yaml.ScalarNode):
            return self._scalar(node, path)
        if id(node) in self._open:
            raise self.error(node, path, "an alias refers to a value that contains it "
                             "(a recursive alias)")
        self._open.add(id(node))
        try:
            if isinstance(node, yaml.MappingNode):
                return self._mapping(node, path)
            if isinstance(node, yaml.SequenceNode) and node.tag == SEQ_TAG:
                return [self.convert(item, (*path, i)) for i, item in enumerate(node.value)]
            raise self.error(node, path, f"unsupported YAML tag {_short_tag(node.tag)!r}; a "
                             "spec holds plain mappings, lists, text, numbers and booleans")
        finally:
            self._open.discard(id(node))

    def _mapping(self, node: yaml.MappingNode, path: PathKey) -> dict[Any, Any]:
        if node.tag != MAP_TAG:
            raise self.error(node, path, f"unsupported YAML tag {_short_tag(node.tag)!r}; a "
                             "spec holds plain mappings, lists, text, numbers and booleans")
        result: dict[Any, Any] = {}
        for key_node, value_node in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":
                raise self.error(key_node, path, "YAML merge keys ('<<') are not supported")
            if not isinstance(key_node, yaml.ScalarNode):
                raise self.error(key_node, path, "a mapping key must be plain text, not a "
                                 "list or a mapping")
            key = self._scalar(key_node, path)
            if isinstance(key, float) or key is None:
                key = key_node.value  # keep '.nan' or '~' as written, never a NaN key
            if key in result:
                raise self.error(key_node, path, f"duplicate key {key!r}")
            result[key] = self.convert(value_node, (*path, key))
        return result

    def _scalar(self, node: yaml.ScalarNode, path: PathKey) -> Any:
        if node.tag == STR_TAG:  # most of a spec: what PyYAML's constructor returns for it
            return node.value
        if node.tag not in SCALAR_TAGS:
            raise self.error(node, path, f"unsupported YAML tag {_short_tag(node.tag)!r}; a "
                             "spec holds plain mappings, lists, text, numbers and booleans")
        if node.tag == TIMESTAMP_TAG:
            return str(node.value)  # a date stays the text it is: specs and tool answers are JSON
        if node.tag == INT_TAG and _LEADING_ZERO.match(node.value):
            raise self.error(node, path, f"{node.value} has a leading zero, which YAML 1.1 reads "
                             f"as octal and YAML 1.2 as decimal: quote it ('{node.value}') for "
                             f"text, or write {int(node.value)} for the number")
        if (node.tag == BOOL_TAG and node.value not in _CORE_BOOLS) or (
                node.tag == NULL_TAG and node.value not in _CORE_NULLS):
            raise self.error(node, path, f"{node.value!r} is not a valid {_short_tag(node.tag)} "
                             f"(YAML 1.2: {' or '.join(sorted(_CORE_SPELLING[node.tag]))})")
        try:
            if node.tag == INT_TAG:
                value: Any = _core_int(node.value)
            else:
                value = _SCALAR_LOADER.construct_object(node, deep=True)
        except (yaml.YAMLError, ValueError, OverflowError) as exc:
            raise self.error(node, path, f"cannot read value {node.value!r}: "
                             f"{getattr(exc, 'problem', None) or exc}") from None
        except (KeyError, IndexError, TypeError):  # PyYAML's constructors on a forced tag
            raise self.error(node, path, f"{node.value!r} is not a valid "
                             f"{_short_tag(node.tag)}") from None
        if isinstance(value, float) and not math.isfinite(value):
            raise self.error(node, path, f"{node.value!r} is not a finite number; spec "
                             "numbers must be finite")
        if isinstance(value, int) and not isinstance(value, bool) and abs(value) > MAX_INT:
            raise self.error(node, path, f"{node.value} is too large; spec integers are at "
                             f"most {MAX_INT:,} (2**53) in size")
        return value


_OTHER_BREAKS = ("\u2028", "\u2029", "\x85")
"""Characters YAML 1.1 (the parser's) counts as line breaks and an editor does not."""


def _line_counter(text: str) -> Callable[[Any], int]:
    """How to turn a parser mark into the line an editor shows: the parser's own count, unless
    the text holds a character it counts as a break that an editor does not (U+2028, U+2029,
    NEL), after which its count would run ahead."""
    if not any(ch in text for ch in _OTHER_BREAKS):
        return lambda mark: int(mark.line) + 1
    starts = [i + 1 for i, ch in enumerate(text) if ch == "\n"]
    return lambda mark: bisect.bisect_right(starts, int(mark.index)) + 1


def _too_deep_at(text: str) -> int | None:
    """The line where nesting first exceeds :data:`MAX_DEPTH`, found with the event parser
    (which, unlike the composer, does not recurse)."""
    depth = 0
    for event in yaml.parse(text, Loader=yaml.SafeLoader):
        if isinstance(event, yaml.CollectionStartEvent):
            depth += 1
            if depth > MAX_DEPTH:
                mark = event.start_mark
                return None if mark is None else int(mark.line) + 1
        elif isinstance(event, yaml.CollectionEndEvent):
            depth -= 1
    return None


def _short_tag(tag: str) -> str:
    return "!!" + tag.removeprefix("tag:yaml.org,2002:") if tag.startswith("tag:yaml.org") \
        else tag


_SCALAR_LOADER = yaml.SafeLoader("")
_PARSER: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
"""libyaml's parser when PyYAML was built with it (about 8× faster on the spec tree, the same
nodes and line marks), else the pure-Python one."""
BOOL_TAG, INT_TAG = "tag:yaml.org,2002:bool", "tag:yaml.org,2002:int"
FLOAT_TAG, NULL_TAG = "tag:yaml.org,2002:float", "tag:yaml.org,2002:null"


class COMPOSER(_PARSER):  # type: ignore[misc,valid-type]
    """The parser with YAML 1.2's core schema for untagged scalars, not PyYAML's YAML 1.1 one.

    Under 1.1 a ticket titled ``no`` is the boolean false, ``on``/``off``/``yes``/``y`` are
    booleans too, ``23:59`` is the integer 1439 (base 60) and ``010`` is 8 (octal): a world
    would silently hold values the author never wrote. Under the core schema only
    ``true``/``false`` are booleans, ``23:59`` is text, and integers are decimal (or ``0o``/``0x``);
    a decimal with a leading zero, which the two versions read differently, is refused.
    """

    yaml_implicit_resolvers: ClassVar[dict[str, list[tuple[str, re.Pattern[str]]]]] = {}


for _first, _resolvers in _PARSER.yaml_implicit_resolvers.items():  # keep null and merge only
    for _tag, _regexp in _resolvers:
        if _tag in (NULL_TAG, "tag:yaml.org,2002:merge"):
            COMPOSER.yaml_implicit_resolvers.setdefault(_first, []).append((_tag, _regexp))
COMPOSER.add_implicit_resolver(BOOL_TAG, re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$"),
                               list("tTfF"))
COMPOSER.add_implicit_resolver(INT_TAG, re.compile(r"^(?:[-+]?[0-9]+|0o[0-7]+|0x[0-9a-fA-F]+)$"),
                               list("-+0123456789"))
COMPOSER.add_implicit_resolver(
    FLOAT_TAG, re.compile(r"^(?:[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?"
                          r"|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$"),
    list("-+0123456789."))
_LEADING_ZERO = re.compile(r"^[-+]?0[0-9]+$")
_CORE_BOOLS = frozenset({"true", "True", "TRUE", "false", "False", "FALSE"})
_CORE_NULLS = frozenset({"", "~", "null", "Null", "NULL"})
_CORE_SPELLING = {BOOL_TAG: {"true", "false"}, NULL_TAG: {"null", "~"}}


def _core_int(text: str) -> int:
    """An integer as YAML 1.2's core schema reads it (decimal, ``0o`` octal, ``0x`` hex)."""
    if text.startswith("0o"):
        return int(text[2:], 8)
    if text.startswith("0x"):
        return int(text[2:], 16)
    return int(text)


def read_bounded(file: Path, limit: int = MAX_SPEC_BYTES) -> bytes:
    """The bytes of ``file``, a regular file of at most ``limit`` bytes, or a
    :class:`SpecError`. The size is checked on the stream, not only with ``stat``: a symlink to
    ``/dev/zero`` or a FIFO (which would block a plain open for ever) is no spec."""
    if file.is_dir():
        raise SpecError(file, "is a directory, not a YAML file")
    if not file.exists():
        if file.is_symlink():
            raise SpecError(file, "cannot read file: a symbolic link that leads nowhere (a "
                            "loop, or its target is gone)")
        raise SpecError(file, "cannot read file: no such file")
    if not stat.S_ISREG(file.stat().st_mode):
        raise SpecError(file, "is not a regular file (a device, a FIFO or a socket); a spec "
                        "is a YAML file")
    descriptor = os.open(file, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    with os.fdopen(descriptor, "rb") as handle:
        if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):  # replaced meanwhile
            raise SpecError(file, "is not a regular file; a spec is a YAML file")
        data = handle.read(limit + 1)
    if len(data) > limit:
        size = file.stat().st_size
        shown = f"{size / 2**20:.1f} MiB" if size > limit else f"more than {limit // 2**20} MiB"
        raise SpecError(file, f"the file is {shown}; a spec is at most "
                        f"{limit // 2**20} MiB")
    return data


def load_yaml(file: str | Path) -> LoadedYaml:
    """Parse one YAML file; every problem (unreadable, too large, not UTF-8, syntax) becomes a
    :class:`SpecError` with the file and, where there is one, the line."""
    file = Path(file)
    try:
        data = read_bounded(file)
    except OSError as exc:
        raise SpecError(file, f"cannot read file: {exc.strerror or exc}") from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise SpecError(file, f"the file is not UTF-8 text (byte 0x{data[exc.start]:02x} at "
                        f"offset {exc.start})", line=line) from None
    return load_yaml_text(text, file)


def load_yaml_text(text: str, file: str | Path = "<string>") -> LoadedYaml:
    file = Path(file)
    if len(text) > MAX_SPEC_BYTES:
        raise SpecError(file, f"the text is {len(text):,} characters; a spec is at most "
                        f"{MAX_SPEC_BYTES:,}")
    line_of_mark = _line_counter(text)
    try:
        node = yaml.compose(text, Loader=COMPOSER)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = line_of_mark(mark) if mark is not None else None
        problem = exc.problem or exc.context or "invalid YAML"
        raise SpecError(file, f"YAML syntax error: {problem}", line=line) from None
    except yaml.reader.ReaderError as exc:  # a control character: no mark, a position
        line = text.count("\n", 0, exc.position) + 1
        raise SpecError(file, f"YAML syntax error: unacceptable character "
                        f"#x{exc.character:04x} (control characters are not allowed)",
                        line=line) from None
    except yaml.YAMLError as exc:
        problem = " ".join(str(exc).split())
        raise SpecError(file, f"YAML syntax error: {problem}") from None
    except RecursionError:
        raise SpecError(file, f"values nest more than {MAX_DEPTH} levels deep",
                        line=_too_deep_at(text)) from None
    converter = _Converter(file, line_of_mark=line_of_mark)
    data = None if node is None else converter.convert(node, ())
    return LoadedYaml(file=file, data=data, lines=converter.lines)


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
    if value is None:  # an empty file has no line of its own: point at its first
        error = doc.error(at, "the document is empty")
        if error.line is None:
            error = SpecError(doc.file, error.message, line=1, path=error.path)
        raise error
    try:
        validated = model.model_validate(value, context=context)
    except ValidationError as exc:
        errors = _relevant(exc.errors(include_url=False), value)
        first = errors[0]
        loc = (*at, *_clean_loc(first["loc"]))
        message = _typed(_at(value, _clean_loc(first["loc"])), first) or _describe(first)
        if len(errors) > 1:
            others = "; ".join(
                f"{format_path((*at, *_clean_loc(e['loc'])))}: {_describe(e)}" for e in errors[1:5]
            )
            message += f" (also: {others})"
        raise doc.error(loc, message) from None
    coerced = _first_coercion(value, validated, at)
    if coerced is not None:
        raise doc.error(*coerced)
    return validated


def _relevant(errors: list[Any], value: Any) -> list[Any]:
    """The errors worth saying first: where a field takes a word or a list (``modes: all`` or
    ``modes: [...]``) and a list was given, what is wrong with the list, not that it is not
    the word."""
    def beside_the_point(error: Any) -> bool:
        raw = _at(value, _clean_loc(error["loc"]))
        return error.get("type") == "literal_error" and isinstance(raw, list | dict)

    kept = [e for e in errors if not beside_the_point(e)]
    return kept or errors


_NUMERIC_CHECKS = frozenset({"greater_than", "greater_than_equal", "less_than", "less_than_equal",
                             "multiple_of", "finite_number"})
_PARSING = {"float_parsing": "a number", "int_parsing": "an integer",
            "int_from_float": "an integer", "bool_parsing": "true or false"}
_MISSING = object()


def _at(data: Any, path: PathKey) -> Any:
    """The raw value at ``path`` in the YAML data, if the path leads anywhere."""
    for part in path:
        try:
            data = data[part]
        except (KeyError, IndexError, TypeError):
            return _MISSING
    return data


def _typed(raw: Any, error: Any) -> str | None:
    """A clearer message when pydantic's comes from a value of the wrong kind: ``alpha: true``
    fails "less than 1" because it was read as 1, ``late_delay_s: 1:30`` cannot be parsed
    because YAML 1.2 keeps it text."""
    kind = error.get("type", "")
    if isinstance(raw, bool) and kind in _NUMERIC_CHECKS:
        return f"{str(raw).lower()} is a boolean; this field takes a number"
    if isinstance(raw, str) and kind in _PARSING:
        hint = " (YAML 1.2 reads a value with ':' as text, not base 60)" if ":" in raw else ""
        return f"{raw!r} is text; this field takes {_PARSING[kind]}{hint}"
    return None


def _first_coercion(raw: Any, value: Any, path: PathKey) -> tuple[PathKey, str] | None:
    """Where pydantic's lax mode turned a boolean, a number or a text into another of the
    three (``cost_s: true`` read as 1.0, ``k: true`` as 1, a gate's ``max: true`` as 100 %,
    ``enabled: "yes"`` as true), with what to write instead; ``None`` if nowhere.

    Strict mode would refuse these, but also a list for a tuple and a text for a path, which
    specs rightly write; so the validated model is compared with the YAML it came from."""
    if isinstance(value, BaseModel):
        if not isinstance(raw, dict):
            return None
        for name, info in type(value).model_fields.items():
            for key in (info.alias, name):
                if key is not None and key in raw:
                    found = _first_coercion(raw[key], getattr(value, name), (*path, key))
                    if found is not None:
                        return found
                    break
        return None
    if isinstance(raw, list) and isinstance(value, list | tuple) and len(raw) == len(value):
        for index, (item, validated) in enumerate(zip(raw, value, strict=True)):
            found = _first_coercion(item, validated, (*path, index))
            if found is not None:
                return found
        return None
    if isinstance(raw, dict) and isinstance(value, dict):
        for key, item in raw.items():
            if key in value:
                found = _first_coercion(item, value[key], (*path, key))
                if found is not None:
                    return found
        return None
    return _scalar_coercion(raw, value, path)


def _scalar_coercion(raw: Any, value: Any, path: PathKey) -> tuple[PathKey, str] | None:
    number = (int, float)
    if isinstance(raw, bool) and not isinstance(value, bool):
        wanted = "a number" if isinstance(value, number) else "text"
        return path, f"{str(raw).lower()} is a boolean; this field takes {wanted}"
    if isinstance(raw, number) and not isinstance(raw, bool):
        if isinstance(value, bool):
            return path, f"{raw} is a number; this field takes true or false"
        if isinstance(value, str):
            return path, f"{raw} is a number; this field takes text: quote it ('{raw}')"
    if isinstance(raw, str) and isinstance(value, bool | int | float) and not isinstance(
            value, str):
        wanted = "true or false" if isinstance(value, bool) else "a number"
        return path, f"{raw!r} is text; this field takes {wanted} (write it unquoted)"
    return None


def load_model(file: str | Path, model: type[ModelT], *, empty: ModelT | None = None) -> ModelT:
    """One YAML (or JSON) file validated as ``model``: :func:`load_yaml` then :func:`validate`,
    every problem a :class:`SpecError` at ``file:line`` and the path inside. An empty file is
    ``empty`` when one is given (a configuration whose every field has a default)."""
    doc = load_yaml(file)
    if doc.data is None and empty is not None:
        return empty
    return validate(doc, model)


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
