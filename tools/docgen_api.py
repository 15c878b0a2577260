"""The Python API reference page, generated from ``graphtier.__all__`` (tools/mkdocs_hooks.py).

``graphtier`` exports its names lazily (PEP 562), which a static reader (griffe, under mkdocstrings) cannot
follow, so each name is pointed at the module that defines it: the object's ``__module__``, found by importing
it (the package named in ``graphtier._EXPORTS`` for a value without one, such as ``__version__``). One
``::: module.Name`` directive per public name, grouped by area, after a table of every name of ``__all__``.
"""

from __future__ import annotations

import importlib

import graphtier

# names of __all__ defined outside _EXPORTS (imported eagerly by graphtier/__init__.py)
EAGER: dict[str, str] = {
    "GraphtierError": "graphtier.errors",
    "DatasetError": "graphtier.errors",
    "OptionError": "graphtier.errors",
    "configure_threads": "graphtier._process",
    "configure_process": "graphtier._process",
    "__version__": "graphtier._version",
}

# section title -> the modules (as in graphtier._EXPORTS / EAGER) whose names it holds, in this order
SECTIONS: dict[str, tuple[str, ...]] = {
    "Datasets": (
        "graphtier.dataset",
        "graphtier.dataset.synthetic.generate",
        "graphtier.dataset.synthetic.synthetic_mag",
        "graphtier.dataset.edges.edgebank",
    ),
    "Samplers": ("graphtier.sampling",),
    "Feature and topology stores": ("graphtier.memory",),
    "The global store": ("graphtier.graphstore",),
    "Tiering": (
        "graphtier.tiering.hotness",
        "graphtier.tiering.seeds",
        "graphtier.tiering.replay",
        "graphtier.graph.reorder",
        "graphtier.tiering.cache.simulate",
    ),
    "Training, saved models and prediction": ("graphtier.train",),
    "PyG adapters": ("graphtier.pyg",),
    "Errors and process settings": ("graphtier.errors", "graphtier._process", "graphtier._version"),
}


def defining_modules() -> dict[str, str]:
    """Every name of ``graphtier.__all__`` -> the module that defines it (ValueError if one is unknown)."""
    modules = {**graphtier._EXPORTS, **EAGER}
    missing = sorted(set(graphtier.__all__) - set(modules))
    if missing:
        raise ValueError(f"tools/docgen_api.py: no defining module for graphtier.{', graphtier.'.join(missing)}")
    unplaced = sorted({module for module in modules.values()} - {m for ms in SECTIONS.values() for m in ms})
    if unplaced:
        raise ValueError(f"tools/docgen_api.py: module(s) {unplaced} are in no section of SECTIONS")
    return {name: modules[name] for name in graphtier.__all__}


def definition(name: str, package: str) -> str:
    """The dotted path of the definition of ``graphtier.<name>`` (``package`` is where ``__all__`` says it lives)."""
    module = getattr(getattr(graphtier, name), "__module__", None)
    if module is None or getattr(importlib.import_module(module), name, None) is not getattr(graphtier, name):
        module = package  # a value without a module, or an alias (``FeatureStore = FeatureSource``)
    return f"{module}.{name}"


def api_reference() -> str:
    """The markdown of the API reference: a table of every public name, then each one from its docstring."""
    modules = defining_modules()
    lines = [
        "# Python API reference",
        "",
        "Every public name of `graphtier` (`graphtier.__all__`), generated from the docstrings when the site is",
        "built. Import them from the package (`import graphtier as gt; gt.Dataset.open(...)`); names are loaded on",
        "first use, so `import graphtier` alone does not import torch. Everything not listed here is private.",
        "The [Python API guide](../guide/python-api.md) shows them at work.",
        "",
        "| name | defined in | section |",
        "|---|---|---|",
    ]
    section_of = {module: title for title, ms in SECTIONS.items() for module in ms}
    for name in sorted(modules, key=str.lower):
        anchor = definition(name, modules[name])
        lines.append(f"| [`graphtier.{name}`](#{anchor}) | `{modules[name]}` | {section_of[modules[name]]} |")
    lines.append("")
    for title, section_modules in SECTIONS.items():
        lines += [f"## {title}", ""]
        for name, module in modules.items():
            if module in section_modules:
                lines += [f"::: {definition(name, module)}", ""]
    return "\n".join(lines) + "\n"
