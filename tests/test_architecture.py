"""The package's import graph keeps the layers of docs/architecture.md: no cycle, no upward arrow.

Read from the source with ``ast`` (nothing is imported), so a violation is named by file and line.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "graphtier"

# Lowest first; a module may import from its own layer or a lower one (docs/architecture.md).
LAYERS: dict[str, int] = {
    "graphtier._version": 0,
    "graphtier.errors": 0,
    "graphtier._checks": 0,
    "graphtier._splitmix": 0,
    "graphtier._compile_notice": 0,
    "graphtier._openmp": 0,
    "graphtier._host_memory": 0,
    "graphtier._process": 0,
    "graphtier._signals": 0,
    "graphtier._threads": 0,
    "graphtier._prefetch": 0,
    "graphtier._fanouts": 0,
    "graphtier._choices": 0,
    "graphtier._progress": 0,
    "graphtier.dataset": 1,
    "graphtier.graph": 2,
    "graphtier.sampling": 3,
    "graphtier.memory": 3,
    "graphtier.tiering": 4,
    "graphtier.graphstore": 4,
    "graphtier.train": 5,
    "graphtier.pyg": 5,
    "graphtier.bench": 6,
    "graphtier.cli": 7,
    "graphtier.__main__": 8,
}
# Function-local imports of graphtier modules are allowed only where they keep start-up fast (the CLI
# loads a command's modules when it runs) or load an optional dependency (Triton) on first use.
LOCAL_IMPORTS_ALLOWED = ("graphtier.cli",)
OPTIONAL_DEPENDENCY_IMPORTS = {
    ("graphtier.memory.features.tiered", "graphtier.memory.features._triton_kernels"),
    ("graphtier.bench.gather", "graphtier.memory.features._triton_kernels"),
    ("graphtier.memory.topology.topology", "graphtier.memory.topology._topology_kernels"),
    ("graphtier.sampling.device.device_hops", "graphtier.sampling.device._device_kernels"),
    ("graphtier.sampling.temporal.temporal_device", "graphtier.sampling.temporal._temporal_device_kernels"),
}
# graphtier.train's sub-packages, lowest first: a module imports from its own sub-package or an earlier one
# (``if TYPE_CHECKING:`` imports included), so the imports between them run one way (docs/architecture.md).
TRAIN_ORDER = ("options", "nn", "persist", "infer", "dist", "loop")
# graphtier.memory's sub-packages, lowest first, the same way: where rows go (budgets, tiers, the multi-GPU
# placement), the feature stores, the graph's topology in tiers.
MEMORY_ORDER = ("plan", "features", "topology")
# graphtier.dataset.importers' sub-packages, lowest first, the same way: the shared pieces, node and edge splits,
# the end of an import (options, finish, the typed graph), the formats.
IMPORTERS_ORDER = ("common", "split", "assemble", "formats")
SUBPACKAGE_ORDERS: dict[str, tuple[str, ...]] = {
    "graphtier.train": TRAIN_ORDER,
    "graphtier.memory": MEMORY_ORDER,
    "graphtier.dataset.importers": IMPORTERS_ORDER,
}
# graphtier.sampling's sub-packages, lowest first: a module imports from its own sub-package, an earlier one or the
# base modules at the package's top (batches, seeds, fanouts, buffers, layouts, spec), which import no sub-package.
SAMPLING_ORDER = ("neighbor", "device", "temporal", "link", "shadow")
MAX_LINES = 450
# modules still over MAX_LINES -> why they wait (each must be split; the test fails once one is short enough)
OVER_LIMIT: dict[str, str] = {}
# One concept per module; folders show the architecture: a folder of graphtier/ holds at most MAX_MODULES modules
# (``__init__.py`` not counted), past it it is split into sub-packages.
MAX_MODULES = 15
# folders still over MAX_MODULES -> (their module count, why they wait); a folder may not grow past its count, and
# must leave this list once it is at most MAX_MODULES.
FOLDERS_OVER_LIMIT: dict[str, tuple[int, str]] = {}


def module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def layer_of(module: str) -> int:
    best = ""
    for prefix in LAYERS:
        if (module == prefix or module.startswith(prefix + ".")) and len(prefix) > len(best):
            best = prefix
    if not best:
        raise AssertionError(f"{module}: not in any layer of LAYERS (add it, and to docs/architecture.md)")
    return LAYERS[best]


def resolve(imported: ast.ImportFrom | ast.Import, current: str, is_package: bool) -> list[str]:
    """Absolute graphtier module names an import statement refers to (``from a import b`` may name module a.b)."""
    names: list[str] = []
    if isinstance(imported, ast.Import):
        return [alias.name for alias in imported.names if alias.name.startswith("graphtier")]
    base = imported.module or ""
    if imported.level:
        anchor = current.split(".") if is_package else current.split(".")[:-1]
        anchor = anchor[: len(anchor) - (imported.level - 1)]
        base = ".".join(anchor + ([base] if base else []))
    if not base.startswith("graphtier"):
        return []
    for alias in imported.names:
        candidate = f"{base}.{alias.name}"
        path = PACKAGE.parent / Path(*candidate.split("."))
        names.append(candidate if (path.with_suffix(".py").exists() or path.is_dir()) else base)
    return names


def is_type_checking_block(node: ast.stmt) -> bool:
    """``if TYPE_CHECKING:`` (or ``if typing.TYPE_CHECKING:``) at module level."""
    if not isinstance(node, ast.If):
        return False
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def collect() -> tuple[dict[str, set[str]], dict[str, set[str]], list[str], dict[str, int]]:
    """(module -> modules it imports at module level, module -> modules it imports under ``if TYPE_CHECKING:``,
    function-local import findings, line counts)."""
    graph: dict[str, set[str]] = {}
    typing_only: dict[str, set[str]] = {}
    local: list[str] = []
    lines: dict[str, int] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        name = module_name(path)
        source = path.read_text()
        lines[str(path.relative_to(PACKAGE.parent))] = source.count("\n")
        tree = ast.parse(source)
        is_package = path.name == "__init__.py"
        graph[name] = set()
        typing_only[name] = set()
        for node in tree.body:
            if is_type_checking_block(node):  # not run, but a reader still follows the arrow: a cycle counts
                for sub in ast.walk(node):
                    if isinstance(sub, (ast.Import, ast.ImportFrom)):
                        typing_only[name].update(resolve(sub, name, is_package))
                continue
            for sub in ast.walk(node):
                if isinstance(sub, (ast.Import, ast.ImportFrom)):
                    in_function = any(
                        isinstance(outer, (ast.FunctionDef, ast.AsyncFunctionDef))
                        and any(inner is sub for inner in ast.walk(outer))
                        for outer in ast.walk(node)
                    )
                    for target in resolve(sub, name, is_package):
                        if in_function:
                            if name.startswith(LOCAL_IMPORTS_ALLOWED) or (name, target) in OPTIONAL_DEPENDENCY_IMPORTS:
                                continue
                            local.append(
                                f"{path.relative_to(PACKAGE.parent)}:{sub.lineno} imports {target} inside a function"
                            )
                        else:
                            graph[name].add(target)
    return graph, typing_only, local, lines


GRAPH, TYPING_ONLY, LOCAL, LINES = collect()


def test_every_import_points_down_the_layers() -> None:
    upward = []
    for module, targets in GRAPH.items():
        if module == "graphtier":  # the package re-exports lazily (PEP 562); its eager imports are layer 0
            assert all(layer_of(t) == 0 for t in targets), f"graphtier/__init__.py imports {targets} eagerly"
            continue
        for target in targets:
            if target == "graphtier":
                upward.append(f"{module} imports the package itself (import the defining module instead)")
            elif layer_of(target) > layer_of(module):
                upward.append(f"{module} (layer {layer_of(module)}) imports {target} (layer {layer_of(target)})")
    assert not upward, "\n".join(sorted(upward))


def subpackage_of(module: str, package: str) -> str | None:
    """The sub-package of ``package`` that ``module`` lies in (``""`` for the package itself), None outside."""
    if module == package:
        return ""
    if not module.startswith(package + "."):
        return None
    return module[len(package) + 1 :].split(".")[0]


@pytest.mark.parametrize("package", sorted(SUBPACKAGE_ORDERS))
def test_subpackages_import_one_way(package: str) -> None:
    """Every module of ``package`` (graphtier.train, graphtier.memory, graphtier.dataset.importers) lies in a
    sub-package of its order in SUBPACKAGE_ORDERS and imports only from its own sub-package or an earlier one
    (``if TYPE_CHECKING:`` imports included)."""
    order = SUBPACKAGE_ORDERS[package]
    wrong = []
    for module, targets in GRAPH.items():
        part = subpackage_of(module, package)
        if part is None or part == "":
            continue
        if part not in order:
            wrong.append(f"{module}: not in a sub-package of {package}'s order {order}")
            continue
        for target in targets | TYPING_ONLY.get(module, set()):
            other = subpackage_of(target, package)
            if other == "":
                wrong.append(f"{module} imports the package {package} (import the defining module)")
            elif other is not None and other in order and order.index(other) > order.index(part):
                wrong.append(f"{module} ({part}) imports {target} ({other}, later in the order of {package})")
    assert not wrong, "\n".join(sorted(wrong))


def sampling_part(module: str) -> str | None:
    """The sub-package of graphtier.sampling that ``module`` lies in (``""`` for a base module, ``"."`` for the
    package itself), None outside."""
    parts = module.split(".")
    if parts[:2] != ["graphtier", "sampling"]:
        return None
    if len(parts) == 2:
        return "."
    return parts[2] if parts[2] in SAMPLING_ORDER or (PACKAGE / "sampling" / parts[2]).is_dir() else ""


def test_sampling_subpackages_import_one_way() -> None:
    """Every sub-package of graphtier.sampling is in SAMPLING_ORDER; a module imports only from its own
    sub-package, an earlier one or the base modules, and a base module from no sub-package."""
    wrong = []
    for module, targets in GRAPH.items():
        part = sampling_part(module)
        if part is None or part == ".":
            continue
        if part and part not in SAMPLING_ORDER:
            wrong.append(f"{module}: not in a sub-package of SAMPLING_ORDER {SAMPLING_ORDER}")
            continue
        rank = SAMPLING_ORDER.index(part) if part else -1
        for target in targets | TYPING_ONLY.get(module, set()):
            other = sampling_part(target)
            if other == ".":
                wrong.append(f"{module} imports the package graphtier.sampling (import the defining module)")
            elif other and other in SAMPLING_ORDER and SAMPLING_ORDER.index(other) > rank:
                wrong.append(f"{module} ({part or 'base'}) imports {target} ({other}, later in SAMPLING_ORDER)")
    assert not wrong, "\n".join(sorted(wrong))


def test_no_function_local_import_dodges_a_cycle() -> None:
    assert not LOCAL, "\n".join(LOCAL)


def test_module_import_graph_has_no_cycle() -> None:
    """No cycle among module-level imports, ``if TYPE_CHECKING:`` imports included (a type-only arrow is still
    an arrow a reader follows; the type belongs in a lower module, or the value is passed as an argument)."""
    # a package's __init__ re-exporting its submodules is not a cycle: edges into a package's own
    # submodules from its __init__ are dropped, edges from a submodule to its package point at the module.
    edges = {
        module: {
            t
            for t in targets | TYPING_ONLY.get(module, set())
            if t != module and not (t.startswith(module + ".") and module != "graphtier")
        }
        for module, targets in GRAPH.items()
    }
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> None:
        state[node] = 1
        stack.append(node)
        for target in sorted(edges.get(node, ())):
            if state.get(target) == 1:
                cycle = stack[stack.index(target) :] + [target]
                pytest.fail("import cycle: " + " -> ".join(cycle))
            if target not in state:
                visit(target)
        stack.pop()
        state[node] = 2

    for module in sorted(edges):
        if module not in state:
            visit(module)


def test_every_allowed_name_is_a_real_module() -> None:
    """LAYERS, LOCAL_IMPORTS_ALLOWED and OPTIONAL_DEPENDENCY_IMPORTS name modules that exist."""
    modules = {module_name(path) for path in PACKAGE.rglob("*.py")}
    named = set(LAYERS) | set(LOCAL_IMPORTS_ALLOWED) | {m for pair in OPTIONAL_DEPENDENCY_IMPORTS for m in pair}
    unknown = sorted(name for name in named if name not in modules)
    assert not unknown, f"names in tests/test_architecture.py that are no module of graphtier: {unknown}"


def test_every_module_is_at_most_max_lines() -> None:
    """No module of graphtier/ over MAX_LINES lines (split it along a seam: one concept per module), apart from
    those in OVER_LIMIT, each with the reason it waits; a module of OVER_LIMIT back under the limit must leave it."""
    long = {path: count for path, count in LINES.items() if count > MAX_LINES}
    unexplained = {path: count for path, count in long.items() if path not in OVER_LIMIT}
    assert not unexplained, f"modules over {MAX_LINES} lines (split each along a seam): {unexplained}"
    stale = sorted(path for path in OVER_LIMIT if path not in long)
    assert not stale, f"OVER_LIMIT names modules at most {MAX_LINES} lines long now (remove them): {stale}"


def folder_module_counts() -> dict[str, int]:
    """Folder of graphtier/ (``graphtier/dataset``) -> the modules directly in it, ``__init__.py`` not counted."""
    counts: dict[str, int] = {}
    for path in PACKAGE.rglob("*.py"):
        folder = str(path.parent.relative_to(PACKAGE.parent))
        counts[folder] = counts.get(folder, 0) + (path.name != "__init__.py")
    return counts


def test_every_folder_holds_at_most_max_modules() -> None:
    """No folder of graphtier/ holds more than MAX_MODULES modules (group them into sub-packages a reader
    understands at a glance), apart from those in FOLDERS_OVER_LIMIT, which may not grow past their recorded count;
    a folder of FOLDERS_OVER_LIMIT back under the limit must leave it."""
    counts = folder_module_counts()
    unexplained = {
        folder: count for folder, count in counts.items() if count > MAX_MODULES and folder not in FOLDERS_OVER_LIMIT
    }
    assert not unexplained, f"folders over {MAX_MODULES} modules (split each into sub-packages): {unexplained}"
    grown = {
        folder: f"{counts[folder]} modules, recorded {recorded}"
        for folder, (recorded, _) in FOLDERS_OVER_LIMIT.items()
        if counts.get(folder, 0) > recorded
    }
    assert not grown, f"folders of FOLDERS_OVER_LIMIT grown past their count (split them instead): {grown}"
    stale = sorted(folder for folder in FOLDERS_OVER_LIMIT if counts.get(folder, 0) <= MAX_MODULES)
    assert not stale, f"FOLDERS_OVER_LIMIT names folders of at most {MAX_MODULES} modules now (remove them): {stale}"


def test_public_api_names_resolve() -> None:
    import graphtier

    missing = [name for name in graphtier.__all__ if not hasattr(graphtier, name)]
    assert not missing, f"graphtier.__all__ names that do not resolve: {missing}"


def layer_table() -> str:
    """The markdown table of docs/architecture.md "Layer numbers": per package its layer, modules, lines, and
    the module-level imports it makes into each other package (counted once per importing module and target
    package); the last line counts cycles and upward imports (both 0 while the tests above pass)."""

    def package_of(module: str) -> str:
        parts = module.split(".")
        if len(parts) == 1 or parts[1] == "__main__":
            return module
        if parts[1] in ("train", "memory") and len(parts) > 2:
            return f"{parts[1]}.{parts[2]}"
        if parts[1:3] == ["dataset", "importers"] and len(parts) > 3:
            return f"dataset.importers.{parts[3]}"
        return "(layer 0 modules)" if parts[1] == "errors" or parts[1].startswith("_") else parts[1]

    packages: dict[str, dict[str, int]] = {}
    imports: dict[str, dict[str, int]] = {}
    for module, targets in GRAPH.items():
        package = package_of(module)
        row = packages.setdefault(
            package, {"layer": 0 if module == "graphtier" else layer_of(module), "modules": 0, "lines": 0}
        )
        row["modules"] += 1
        path = module.replace(".", "/")
        row["lines"] += LINES.get(f"{path}.py", LINES.get(f"{path}/__init__.py", 0))
        for other in {package_of(target) for target in targets} - {package}:
            imports.setdefault(package, {}).setdefault(other, 0)
            imports[package][other] += 1
    rows = ["| package | layer | modules | lines | module-level imports into other packages |", "|---|---|---|---|---|"]
    for package, row in sorted(packages.items(), key=lambda item: (item[1]["layer"], item[0])):
        into = ", ".join(f"{other} {count}" for other, count in sorted(imports.get(package, {}).items()))
        rows.append(f"| {package} | {row['layer']} | {row['modules']} | {row['lines']:,} | {into or '-'} |")
    return "\n".join(rows) + "\n"


def test_docs_record_the_layer_numbers() -> None:
    """docs/architecture.md holds the current layer table (regenerate: python tests/test_architecture.py)."""
    doc = (PACKAGE.parent / "docs" / "architecture.md").read_text()
    start, end = "<!-- layer-table: generated by python tests/test_architecture.py -->\n", "<!-- /layer-table -->"
    assert start in doc and end in doc, "docs/architecture.md lacks the layer table markers"
    recorded = doc[doc.index(start) + len(start) : doc.index(end)]
    assert recorded == layer_table(), (
        "docs/architecture.md's layer table is stale: run python tests/test_architecture.py"
    )


if __name__ == "__main__":  # rewrite the table in docs/architecture.md
    doc_path = PACKAGE.parent / "docs" / "architecture.md"
    text = doc_path.read_text()
    begin, finish = "<!-- layer-table: generated by python tests/test_architecture.py -->\n", "<!-- /layer-table -->"
    head, rest = text.split(begin)
    doc_path.write_text(head + begin + layer_table() + finish + rest.split(finish, 1)[1])
    print(layer_table())
