"""MkDocs hooks (mkdocs.yml ``hooks:``): the generated pages of the site.

- ``reference/api.md``: every name of ``graphtier.__all__`` from its docstring (tools/docgen_api.py);
- ``reference/cli.md``: every command and option from the click definitions (tools/docgen_cli.py);
- ``benchmarks/index.md`` and one page per area from ``benchmarks/results/*.json`` (tools/docgen_bench.py).

They are made in memory at every build, never written into docs/, so they cannot go stale. The docstrings
use Sphinx roles (``:class:`~graphtier.x.Name` ``), which Markdown leaves as text: they are shown as the code
name alone (the last part after a ``~``), as Sphinx would.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # the mkdocs script's sys.path does not hold the repository
    sys.path.insert(0, str(ROOT))

from mkdocs.structure.files import File, Files  # noqa: E402

from tools.docgen_api import api_reference  # noqa: E402
from tools.docgen_bench import AREAS, benchmark_pages  # noqa: E402
from tools.docgen_cli import cli_reference  # noqa: E402


def generated_pages() -> dict[str, str]:
    """Every generated page: its path under docs/ -> its markdown."""
    return {"reference/api.md": api_reference(), "reference/cli.md": cli_reference(), **benchmark_pages()}


def on_config(config: Any) -> Any:
    """List the benchmark area pages under the Benchmarks section of the nav (after its index, before the log)."""
    for section in config["nav"] or []:
        if isinstance(section, dict) and "Benchmarks" in section:
            entries = section["Benchmarks"]
            areas = [{title: f"benchmarks/{slug}.md"} for slug, (title, _) in AREAS.items()]
            section["Benchmarks"] = entries[:1] + areas + entries[1:]
    return config


def on_files(files: Files, config: Any) -> Files:
    for path, markdown in generated_pages().items():
        existing = files.get_file_from_path(path)
        if existing is not None:
            files.remove(existing)
        files.append(File.generated(config, path, content=markdown))
    return files


ROLE = re.compile(r":(?:class|func|meth|data|attr|mod|exc|obj):<code>(~?)([\w.]+)(\(\))?</code>")


def _role(match: re.Match[str]) -> str:
    name = match.group(2).rsplit(".", 1)[-1] if match.group(1) else match.group(2)
    return f"<code>{name}{match.group(3) or ''}</code>"


def on_page_content(html: str, page: Any, config: Any, files: Files) -> str:
    """Sphinx roles of the docstrings, ``:class:`~a.b.C` ``, as ``C`` in code type."""
    return ROLE.sub(_role, html)
