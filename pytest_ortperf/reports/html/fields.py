"""The page's small parts: a report's fields read defensively, and the HTML bits every section uses.

A report read from a file (another version's, or edited by hand) may hold anything anywhere: these
readers give a usable value or nothing, and :func:`guarded` turns a part that still cannot be drawn
into a line saying so, so that one damaged record costs only its own part of the page.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from html import escape
from typing import Any

from pytest_ortperf.checks.record import report_number

MAX_BARS = 14  # op types, nodes or providers a bar chart shows; the rest are summed up in words
DRAWN = "drawing_html"  # a registered kind's drawing, rendered by its run into the JSON record


def listed(value: object) -> list[Any]:
    return value if isinstance(value, list) else []


def objects(value: object) -> list[Mapping[str, Any]]:
    """The objects of a list in a report (one read from a file may hold anything there)."""
    return [item for item in listed(value) if isinstance(item, Mapping)]


def checks_of(document: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    return [check for check in listed(document.get("checks")) if is_check(check)]


def is_check(check: object) -> bool:
    return isinstance(check, dict) and all(isinstance(check.get(k), str) for k in ("test", "kind", "verdict"))


as_number = report_number  # a figure of a report (NaN and infinities are written as strings there), or None


def floats(values: object) -> list[float]:
    if not isinstance(values, list):
        return []
    numbers = (as_number(v) for v in values)
    return [v for v in numbers if v is not None and math.isfinite(v)]


def counts(value: object) -> dict[str, int]:
    if not isinstance(value, Mapping):
        return {}
    return {
        str(k): int(v) for k, v in value.items() if isinstance(v, (int, float)) and not isinstance(v, bool)
    }


def figure(chart: str, caption: str) -> str:
    return f"<figure>{chart}<figcaption>{escape(caption)}</figcaption></figure>"


def short_number(value: object) -> str:
    number = as_number(value)
    return "-" if number is None else f"{number:.3g}"


DAMAGE = (KeyError, TypeError, ValueError, AttributeError, ArithmeticError)


def guarded(draw: Callable[[], str], what: str) -> str:
    """``draw()``, or a line saying ``what`` could not be drawn: a report from a file (another
    version's, or edited by hand) may hold anything, and one damaged record costs only its own part."""
    try:
        return draw()
    except DAMAGE as exc:
        return damaged(what, exc)


def damaged(what: str, exc: Exception) -> str:
    return f"<p class='runerr'>{escape(what)} could not be drawn from this report ({escape(repr(exc))})</p>"
