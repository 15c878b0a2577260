"""The documentation site (docs/, mkdocs.yml): its code blocks and its build.

- Every code block of every page in the site's nav is checked as the README's are (tests/test_readme.py): each
  ``graphtier`` command of a shell block must resolve through the CLI's own click parser, a ``python SCRIPT``
  must exist and accept its arguments, a ``pip install -e ".[extra]"`` must name a defined extra.
- The pages then run as a reader would, in nav order, in one empty directory (a page may use what an earlier
  page's commands made, such as ``data/cora``): the shell blocks marked ``<!-- readme-test: run -->`` through
  the CLI and every ``python`` block, each page's blocks in a namespace of their own (a page's Python does not
  lean on another page's). Markers as in tests/readme_blocks.py.
- ``mkdocs build --strict`` builds the site with no warning, and the generated references hold every name of
  ``graphtier.__all__`` and every command and option of the command line.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import warnings
from pathlib import Path

import click
import pytest
import yaml

import graphtier
from graphtier.cli import COMMANDS, cli
from tests.readme_blocks import graphtier_arguments, read_blocks, run_block, shell_commands
from tests.test_readme import _provide_what_the_readme_fetches, command_problems

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"


def _nav_paths(entries: object) -> list[str]:
    if isinstance(entries, str):
        return [entries]
    if isinstance(entries, list):
        return [path for entry in entries for path in _nav_paths(entry)]
    if isinstance(entries, dict):
        return [path for value in entries.values() for path in _nav_paths(value)]
    return []


def nav_pages() -> list[Path]:
    """The pages of mkdocs.yml's nav that are files in docs/ (generated pages are made at build time), in order."""
    config = yaml.safe_load((ROOT / "mkdocs.yml").read_text())
    return [DOCS / path for path in _nav_paths(config["nav"]) if (DOCS / path).is_file()]


PAGES = nav_pages()
PAGE_BLOCKS = {page: read_blocks(page.read_text(), str(page.relative_to(ROOT))) for page in PAGES}


def test_every_page_in_docs_is_in_the_nav() -> None:
    pages = set(PAGES)
    assert DOCS / "getting-started.md" in pages and DOCS / "guide" / "import.md" in pages
    stray = sorted(str(p.relative_to(ROOT)) for p in DOCS.rglob("*.md") if p not in pages)
    assert not stray, f"pages missing from mkdocs.yml's nav: {stray}"


def test_the_guides_have_checked_and_executed_blocks() -> None:
    blocks = [block for blocks in PAGE_BLOCKS.values() for block in blocks]
    assert sum(block.lang == "python" and block.action != "skip" for block in blocks) >= 5
    assert any(block.action == "run" for block in blocks)
    for block in blocks:
        if block.action == "run":
            assert block.lang == "bash", f"{block.where()}: 'run' marks shell blocks (python blocks always run)"
            for command in shell_commands(block.text):
                assert graphtier_arguments(command) is not None, f"{block.where()}: a run block holds graphtier only"


def test_a_stale_option_in_a_page_is_found() -> None:
    page = "<!-- readme-test: run -->\n```bash\ngraphtier train data/cora --epochz 3\n```\n"
    (block,) = read_blocks(page, "docs/guide/x.md")
    problems = [problem for command in shell_commands(block.text) for problem in command_problems(block, command)]
    assert problems and problems[0].startswith("docs/guide/x.md:3 (bash block): graphtier train data/cora --epochz 3")


def test_every_shell_command_in_the_docs_exists() -> None:
    problems = [
        problem
        for blocks in PAGE_BLOCKS.values()
        for block in blocks
        if block.lang in ("bash", "sh") and block.action != "skip"
        for command in shell_commands(block.text)
        for problem in command_problems(block, command)
    ]
    assert not problems, "\n".join(problems)


@pytest.mark.slow
def test_the_docs_run_as_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    _provide_what_the_readme_fetches(tmp_path, capsys)
    ran = 0
    with warnings.catch_warnings():
        warnings.filterwarnings("error", message="The given NumPy array is not writable")
        for page, blocks in PAGE_BLOCKS.items():
            namespace: dict[str, object] = {"__name__": f"__docs_{page.stem}__"}
            for block in blocks:
                if block.action != "skip" and (block.lang == "python" or block.action == "run"):
                    run_block(block, namespace, capsys)
                    ran += 1
    assert ran >= 10
    assert (tmp_path / "runs" / "cora-preds.npy").is_file() and (tmp_path / "runs" / "recommended.npy").is_file()


def _all_options(command: click.Command, ctx: click.Context) -> list[tuple[str, str]]:
    """(command path, option) for every option of ``command`` and its subcommands (hidden ones aside)."""
    found = [
        (ctx.command_path, opt)
        for param in command.get_params(ctx)
        if not getattr(param, "hidden", False)
        for opt in param.opts
        if opt.startswith("-")
    ]
    if isinstance(command, click.Group):
        for name in command.list_commands(ctx):
            sub = command.get_command(ctx, name)
            assert sub is not None
            found += _all_options(sub, click.Context(sub, info_name=name, parent=ctx))
    return found


@pytest.mark.slow
def test_the_site_builds_strict_with_every_name_and_option(tmp_path: Path) -> None:
    site = tmp_path / "site"
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1", "PYTHONPATH": os.pathsep.join([str(ROOT), *sys.path])}
    proc = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(site)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "WARNING" not in proc.stderr, proc.stderr
    api = (site / "reference" / "api" / "index.html").read_text()
    anchors = set(re.findall(r'id="(graphtier\.[\w.]+)"', api))
    missing = [name for name in graphtier.__all__ if not any(a.rsplit(".", 1)[-1] == name for a in anchors)]
    assert not missing, f"names of graphtier.__all__ missing from the API reference: {missing}"
    cli_page = (site / "reference" / "cli" / "index.html").read_text()
    root = click.Context(cli, info_name="graphtier", **cli.context_settings)
    for name in COMMANDS:
        command = cli.get_command(root, name)
        assert command is not None
        assert f'id="graphtier-{name}"' in cli_page, name
        for path, option in _all_options(command, click.Context(command, info_name=name, parent=root)):
            assert f"<code>{option}</code>" in cli_page, f"{path} {option} is not in the CLI reference"
    bench_index = (site / "benchmarks" / "index.html").read_text()
    assert "Epoch time" in bench_index and "dated log" in bench_index
    assert (site / "benchmarks" / "epoch" / "index.html").read_text().count("date:") >= 1


def test_benchmark_pages_show_the_current_result_with_date_machine_and_command(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import json

    from tools import docgen_bench

    old = {"date": "2026-01-02", "machine": "m1", "command": "python b.py", "rows": [{"x": 1, "seconds": 9.5}]}
    new = {"date": "2026-02-03", "machine": "m2", "command": "python b.py --n 2", "rows": [{"x": 2, "seconds": 1.25}]}
    (tmp_path / "thing-old.json").write_text(json.dumps(old))
    (tmp_path / "thing.json").write_text(json.dumps(new))
    monkeypatch.setattr(docgen_bench, "RESULTS", tmp_path)
    monkeypatch.setattr(docgen_bench, "AREAS", {"a": ("Area", (docgen_bench.Series("S", "thing*.json", "b.py"),))})
    page = docgen_bench.benchmark_pages()["benchmarks/a.md"]
    current = page[: page.index("Earlier results")]
    assert "thing.json" in current and "date: 2026-02-03" in current and "machine: m2" in current
    assert "`python b.py --n 2`" in current and "| 2 | 1.25 |" in current and "9.5" not in current
    assert "- `thing-old.json`: 2026-01-02" in page


def test_the_api_reference_refuses_a_public_name_it_cannot_place(monkeypatch: pytest.MonkeyPatch) -> None:
    from tools import docgen_api

    assert set(docgen_api.defining_modules()) == set(graphtier.__all__)
    monkeypatch.setattr(graphtier, "__all__", [*graphtier.__all__, "Nowhere"])
    with pytest.raises(ValueError, match="graphtier.Nowhere"):
        docgen_api.defining_modules()


def test_sphinx_roles_of_the_docstrings_become_code_names() -> None:
    from tools.mkdocs_hooks import on_page_content

    html = "a :class:<code>~graphtier.x.Name</code>, :func:<code>graphtier.f()</code>, :data:<code>K</code>"
    assert on_page_content(html, None, None, None) == "a <code>Name</code>, <code>graphtier.f()</code>, <code>K</code>"  # type: ignore[arg-type]
