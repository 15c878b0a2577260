"""A clone of the repository in the current directory shadows an editable install (issue 23, item 8).

From the folder that holds the clone (``./graphtier/`` with ``pyproject.toml`` and the package
``./graphtier/graphtier/``), ``import graphtier`` finds the clone first and makes it an empty namespace
package, because setuptools' editable install finds the package with an import hook that runs after
the search of ``sys.path``. No graphtier code runs for ``import graphtier`` then; the command line,
whose submodules the hook still finds, says so in one line.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import graphtier

REPO = Path(graphtier.__file__).resolve().parents[1]

# setuptools' editable finder in miniature: the package and its direct submodules, after the path search
_EDITABLE_HOOK = f"""
import sys
from importlib.machinery import PathFinder

class EditableFinder:
    @classmethod
    def find_spec(cls, fullname, path=None, target=None):
        if fullname == "graphtier":
            return PathFinder.find_spec(fullname, [{str(REPO)!r}])
        if fullname.rpartition(".")[0] == "graphtier":
            return PathFinder.find_spec(fullname, [{str(REPO / "graphtier")!r}])
        return None

sys.meta_path.insert(sys.meta_path.index(PathFinder) + 1, EditableFinder)
"""


def _parent_of_a_clone(tmp_path: Path) -> Path:
    clone = tmp_path / "graphtier"
    (clone / "graphtier").mkdir(parents=True)  # the package folder of the clone (its content does not matter)
    (clone / "pyproject.toml").write_text('[project]\nname = "graphtier"\n')
    (clone / "README.md").write_text("# graphtier\n")
    return tmp_path


def _python(cwd: Path, code: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    return subprocess.run(
        [sys.executable, "-c", _EDITABLE_HOOK + code],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_a_clone_in_the_current_directory_shadows_the_package(tmp_path: Path) -> None:
    parent = _parent_of_a_clone(tmp_path)
    result = _python(
        parent,
        "import graphtier\nprint(graphtier.__file__, list(graphtier.__path__))\nprint(hasattr(graphtier, 'predict'))",
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.split("\n")[:2] == [f"None {[str(parent / 'graphtier')]}", "False"]  # the trap


def test_the_command_line_names_the_shadowing_folder_in_one_line(tmp_path: Path) -> None:
    parent = _parent_of_a_clone(tmp_path)
    result = _python(
        parent,
        "import runpy, sys\nsys.argv = ['graphtier', '--version']\nrunpy.run_module('graphtier', run_name='__main__')",
    )
    assert result.returncode == 0, result.stderr
    assert "version" in result.stdout  # the command itself still runs
    notes = [line for line in result.stderr.splitlines() if line.startswith("graphtier: note:")]
    assert len(notes) == 1 and result.stderr.count("\n") == 1, result.stderr
    assert f"the folder {parent / 'graphtier'} shadows the graphtier package" in notes[0]
    assert "no attribute 'predict'" in notes[0]


def test_no_note_when_the_package_is_imported_normally(tmp_path: Path) -> None:
    result = _python(
        tmp_path,
        "import runpy, sys\nsys.argv = ['graphtier', '--version']\nrunpy.run_module('graphtier', run_name='__main__')",
    )
    assert result.returncode == 0, result.stderr
    assert result.stderr == "" and "version" in result.stdout
