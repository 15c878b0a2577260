"""User-facing errors.

Every mistake a user can make (a bad path, a bad option, a malformed input file) raises a
subclass of :class:`GraphtierError` whose message is one line naming the file or option, what
was expected and what was found. The CLI prints that line and exits with code 2.

An error about an option names it the way the caller spelled it: one message,
two renderings. Its template marks each option as ``{field}`` or ``{field=value}``; ``str(error)``
(a Python caller) renders ``features_on=`` / ``features_on='gpu'``, and the CLI renders
``--features-on`` / ``--features-on gpu`` (:meth:`GraphtierError.render`).
"""

from __future__ import annotations

import re
from typing import Any

_OPTION_TOKEN = re.compile(r"\{([a-z][a-z0-9_]*)(?:=([^{}]*))?\}")


class GraphtierError(Exception):
    """A user mistake: printed as one line by the CLI, exit code 2.

    ``GraphtierError(message)`` is a finished line. ``GraphtierError(template, options=("features_on",))``
    marks the options it names as ``{features_on}`` or ``{features_on=tiered}`` in ``template``; they are
    rendered as Python arguments by ``str()`` and as CLI flags by ``render(cli=True)``. Every subclass
    (an option, a dataset, a resource error) may name options this way.
    """

    def __init__(self, message: str = "", *, options: tuple[str, ...] = ()) -> None:
        self.template = message
        self.options = tuple(options)
        super().__init__(self.render(cli=False))

    @staticmethod
    def flag(option: str) -> str:
        """The CLI flag of the Python argument ``option``: ``features_on`` -> ``--features-on``."""
        return "--" + option.replace("_", "-")

    def render(self, *, cli: bool) -> str:
        """The message with each marked option named as a CLI flag (``cli``) or a Python argument."""
        if not self.options:
            return self.template

        def name(match: re.Match[str]) -> str:
            option, value = match.group(1), match.group(2)
            if option not in self.options:
                return match.group(0)
            if cli:
                return self.flag(option) if value is None else f"{self.flag(option)} {value}"
            return f"{option}=" if value is None else f"{option}={_python_literal(value)}"

        return _OPTION_TOKEN.sub(name, self.template)


class DatasetError(GraphtierError):
    """A dataset directory or an input file is missing, malformed or inconsistent."""


class OptionError(GraphtierError):
    """A command-line or API option has a value that cannot be used (options marked as in :class:`GraphtierError`)."""

    @classmethod
    def invalid(cls, option: str, expected: str, found: Any, *, show: bool = True) -> OptionError:
        """``{option} expected {expected}, found {found!r}`` (``show=False``: ``found`` as given, not its repr)."""
        shown = repr(found) if show else str(found)
        return cls(f"{{{option}}} expected {expected}, found {shown}", options=(option,))


def _python_literal(text: str) -> str:
    """``text`` as a Python caller would write the value: a number or a placeholder (``DIM``) bare, anything else quoted."""
    if text.isalpha() and text.isupper():
        return text
    try:
        float(text)
    except ValueError:
        return repr(text)
    return text


def render_error(error: GraphtierError, *, cli: bool) -> str:
    """The one-line message of ``error`` for a CLI user (``cli``: flags) or a Python caller (argument names)."""
    return error.render(cli=cli)


def error_line(message: str) -> str:
    """``graphtier: error: message`` on one line: how the CLI (and a rank that ends its process) reports an error."""
    return "graphtier: error: " + " ".join(str(message).split())


class ResourceError(GraphtierError):
    """Not enough memory or disk for what was asked, or the output cannot be written (read-only, busy)."""
