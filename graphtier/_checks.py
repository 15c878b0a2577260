"""Field checks shared by the option specs: each raises a one-line :class:`OptionError` naming the option
(rendered as ``name=`` for a Python caller and as ``--name`` on the CLI)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import numpy as np

from graphtier.errors import OptionError


def check_choice(option: str, value: Any, choices: Iterable[str]) -> str:
    """``value`` if it is one of ``choices``, else OptionError."""
    names = tuple(choices)
    if value not in names:
        raise OptionError.invalid(option, f"one of {', '.join(names)}", value)
    return str(value)


def check_int(option: str, value: Any, *, minimum: int = 1) -> int:
    """``value`` as an int if it is an integer >= ``minimum`` (1: positive, 0: non-negative), else OptionError."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)) or value < minimum:
        kind = (
            "a positive integer"
            if minimum == 1
            else ("a non-negative integer" if minimum == 0 else f"an integer >= {minimum}")
        )
        raise OptionError.invalid(option, kind, value)
    return int(value)


def check_optional_int(option: str, value: Any, *, minimum: int = 1) -> int | None:
    """None, or :func:`check_int`."""
    return None if value is None else check_int(option, value, minimum=minimum)
