"""User-facing errors.

Every mistake a user can make (a bad path, a bad option, a malformed input file) raises a
subclass of :class:`GraphtierError` whose message is one line naming the file or option, what
was expected and what was found. The CLI prints that line and exits with code 2.
"""

from __future__ import annotations


class GraphtierError(Exception):
    """A user mistake: printed as one line by the CLI, exit code 2."""


class DatasetError(GraphtierError):
    """A dataset directory or an input file is missing, malformed or inconsistent."""


class OptionError(GraphtierError):
    """A command-line or API option has a value that cannot be used."""


class ResourceError(GraphtierError):
    """Not enough memory or disk for what was asked, or the output cannot be written (read-only, busy)."""
