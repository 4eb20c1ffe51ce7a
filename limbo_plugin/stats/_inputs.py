"""Checks and conversions shared by the statistics: binary outcomes, levels, per-episode rows.

Every statistic takes plain Python data (lists of outcomes, one dict per episode) so that callers
never build a data frame themselves; the conversion and its error messages live here, once.
pandas is imported inside :func:`rows_to_frame` so that importing the package stays cheap.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pandas as pd

__all__ = [
    "check_alpha",
    "check_binary",
    "check_confidence",
    "design_error",
    "first_line",
    "formula_outcome",
    "model_frame",
    "rows_to_frame",
]


def check_binary(values: Iterable[Any], what: str) -> list[int]:
    """``values`` as a list of 0/1 ints; bools are accepted, anything else is a ``ValueError``."""
    out = []
    for v in values:
        if isinstance(v, bool) or v in (0, 1):
            out.append(int(v))
        else:
            raise ValueError(f"{what} must be binary (0/1 or bool), got {v!r}")
    return out


def check_alpha(alpha: float) -> float:
    """α of two one-sided tests: it must lie in (0, 0.5) for the (1 − 2α) interval to exist."""
    if not 0.0 < alpha < 0.5:
        raise ValueError(f"alpha must lie in (0, 0.5), got {alpha!r}")
    return float(alpha)


def check_confidence(confidence: float) -> float:
    """A two-sided confidence (or credibility) level, in (0, 1)."""
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must lie in (0, 1), got {confidence!r}")
    return float(confidence)


def rows_to_frame(rows: Sequence[Mapping[str, Any]], fields: Sequence[str]) -> pd.DataFrame:
    """A data frame of ``fields`` from one mapping per episode, refusing missing values.

    A row without one of the fields, or with ``None`` or NaN in it, is an error naming the row and
    the field: model fitting would otherwise drop it silently and report on fewer episodes than the
    caller passed.
    """
    import pandas as pd

    if len(rows) == 0:
        raise ValueError("no rows: the model needs at least one episode")
    columns: dict[str, list[Any]] = {field: [] for field in fields}
    for index, row in enumerate(rows):
        for field in fields:
            value = row.get(field)
            if value is None or (isinstance(value, float) and value != value):
                known = ", ".join(sorted(map(str, row))) or "none"
                raise ValueError(
                    f"row {index} has no value for field {field!r} (its fields: {known})"
                )
            columns[field].append(value)
    return pd.DataFrame(columns)


def first_line(exc: BaseException) -> str:
    """The first line of an exception's message: patsy appends the formula with a caret below."""
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def design_error(formula: str, exc: BaseException, rows: Sequence[Mapping[str, Any]]) -> ValueError:
    """A one-line error for a formula patsy cannot build, listing the fields the rows have."""
    known = ", ".join(sorted({str(key) for row in rows for key in row}))
    return ValueError(
        f"cannot build the design of formula {formula!r}: {first_line(exc)} (fields: {known})"
    )


def _formula_names(formula: str) -> list[str]:
    """Python names used on the right of a patsy ``formula`` (fields, and functions like ``C``)."""
    import ast

    from patsy import ModelDesc, PatsyError

    try:
        desc = ModelDesc.from_formula(formula)
    except PatsyError as exc:
        raise ValueError(f"cannot parse formula {formula!r}: {first_line(exc)}") from exc

    found: list[str] = []
    for term in desc.rhs_termlist:
        for factor in term.factors:
            for node in ast.walk(ast.parse(factor.code, mode="eval")):
                if isinstance(node, ast.Name) and node.id not in found:
                    found.append(node.id)
    return found


def formula_outcome(formula: str) -> str:
    """The one field on the left of ``formula`` (``"duplicate ~ C(model)"`` → ``"duplicate"``)."""
    if "~" not in formula:
        raise ValueError(f"formula must have the form 'outcome ~ terms', got {formula!r}")
    left = formula.split("~", 1)[0].strip()
    if not left.isidentifier():
        raise ValueError(
            f"the left side of formula {formula!r} must be one 0/1 field name, got {left!r}"
        )
    return left


def model_frame(
    rows: Sequence[Mapping[str, Any]],
    formula: str,
    extra_formulas: Iterable[str] = (),
    extra_fields: Iterable[str] = (),
) -> tuple[pd.DataFrame, str]:
    """The data frame a formula model needs, and the name of its binary outcome.

    Only the fields that the formulas use (names that are keys of some row; other names such as
    ``C`` or ``np`` are left to patsy) and ``extra_fields`` are taken, each checked in every row.
    The outcome is checked to be 0/1 and stored as an int: patsy would turn a bool outcome into
    two indicator columns.
    """
    outcome = formula_outcome(formula)
    available = {key for row in rows for key in row}
    wanted = [outcome]
    for text in (formula, *extra_formulas):
        for name in _formula_names(text):
            if name in available and name not in wanted:
                wanted.append(name)
    wanted += [field for field in extra_fields if field not in wanted]
    frame = rows_to_frame(rows, wanted)
    frame[outcome] = check_binary(frame[outcome], f"outcome {outcome!r}")
    return frame, outcome
