"""What every ``--plot`` shares: loading matplotlib (with the right install hint) and a title that fits the figure."""

from __future__ import annotations

import textwrap
import tomllib
from pathlib import Path
from typing import Any

from graphtier.errors import OptionError

_MIN_TITLE_FONTSIZE = 6.0
_TITLE_LINE_CHARS = 70  # at 6 pt, 70 characters fit in a 4-inch-wide figure


def install_hint(extra: str, package_dir: Path | None = None, cwd: Path | None = None) -> str:
    """The pip command that installs graphtier's optional ``extra`` the way this graphtier was installed.

    From a source checkout (the package's parent folder holds graphtier's ``pyproject.toml``) it is
    ``pip install -e 'CHECKOUT[extra]'`` (``.[extra]`` when CHECKOUT is the current directory); otherwise
    ``pip install 'graphtier[extra]'``. ``package_dir`` and ``cwd`` default to this package and the
    current directory (parameters for tests).
    """
    package_dir = package_dir if package_dir is not None else Path(__file__).resolve().parents[1]
    root = package_dir.parent
    if _is_graphtier_project(root / "pyproject.toml"):
        here = (cwd if cwd is not None else Path.cwd()).resolve()
        where = "." if root.resolve() == here else str(root)
        return f"pip install -e '{where}[{extra}]'"
    return f"pip install 'graphtier[{extra}]'"


def _is_graphtier_project(pyproject: Path) -> bool:
    try:
        return tomllib.loads(pyproject.read_text()).get("project", {}).get("name") == "graphtier"
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
        return False


def load_pyplot() -> Any:
    """``matplotlib.pyplot`` on the non-interactive Agg backend; OptionError naming ``--plot`` and the install command."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise OptionError(f"--plot: needs matplotlib ({install_hint('plot')})") from None
    return plt


def fit_title(figure: Any, axes: Any, lines: list[str]) -> None:
    """Set ``axes``' title to ``lines`` and lay the figure out so that the whole title lies inside it.

    A line longer than 70 characters (a long dataset name) is wrapped; then ``figure.tight_layout()``
    runs and, while the title is wider than the figure, its font shrinks, down to 6 pt."""
    wrapped = [part for line in lines for part in textwrap.wrap(line, _TITLE_LINE_CHARS, break_on_hyphens=False)]
    title = axes.set_title("\n".join(wrapped))
    renderer = figure.canvas.get_renderer()
    while True:
        figure.tight_layout()
        if title_fits(figure, title, renderer) or title.get_fontsize() <= _MIN_TITLE_FONTSIZE:
            return
        title.set_fontsize(max(_MIN_TITLE_FONTSIZE, title.get_fontsize() - 0.5))


def title_fits(figure: Any, title: Any, renderer: Any | None = None) -> bool:
    """Whether the text ``title`` lies entirely inside ``figure`` (window coordinates, after layout)."""
    box = title.get_window_extent(renderer if renderer is not None else figure.canvas.get_renderer())
    frame = figure.bbox
    return box.x0 >= frame.x0 and box.x1 <= frame.x1 and box.y0 >= frame.y0 and box.y1 <= frame.y1
