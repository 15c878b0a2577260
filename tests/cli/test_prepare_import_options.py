"""``graphtier prepare``: one ImportOptions value built once from the shared click options (issue 24, item 1).

Adding a common import option touches :class:`ImportOptions`, its click option in
``prepare_options.IMPORT_OPTION_DECLARATIONS`` and a test: these tests fail when a subcommand grows a click
option that is neither an ImportOptions field it accepts nor a parameter of its importer function.
"""

from __future__ import annotations

import dataclasses
import inspect
import json
from pathlib import Path
from typing import Any

import click
import pytest

from graphtier.cli.common.prepare_options import IMPORT_OPTION_DECLARATIONS
from graphtier.cli.prepare import command as prepare
from graphtier.dataset.importers.assemble.options import (
    EDGE_FORMAT_FIELDS,
    EDGELIST_FIELDS,
    MANIFEST_FIELDS,
    MOVIELENS_FIELDS,
    OGB_FIELDS,
    PLANETOID_FIELDS,
    ImportOptions,
)
from graphtier.dataset.importers.formats import csr_npz, edgelist, manifest, mat, movielens, ogb, planetoid
from graphtier.errors import OptionError
from tests.cli.helpers import defaults_as_received
from tests.dataset.importers.helpers import assert_user_error, run_cli

_FORMATS = {
    "edgelist": (edgelist, "import_edgelist", EDGELIST_FIELDS),
    "csr-npz": (csr_npz, "import_csr_npz", EDGE_FORMAT_FIELDS),
    "mat": (mat, "import_mat", EDGE_FORMAT_FIELDS),
    "ogb": (ogb, "import_ogb", OGB_FIELDS),
    "planetoid": (planetoid, "import_planetoid", PLANETOID_FIELDS),
    "movielens": (movielens, "import_movielens", MOVIELENS_FIELDS),
    "manifest": (manifest, "import_manifest", MANIFEST_FIELDS),
}
_FIELDS = {f.name for f in dataclasses.fields(ImportOptions)}
_OUTPUT_PARAMETERS = {"source", "output", "name", "overwrite"}


def test_every_prepare_subcommand_is_covered() -> None:
    assert set(prepare.commands) == set(_FORMATS)


@pytest.mark.parametrize("subcommand", sorted(_FORMATS))
def test_every_click_option_is_an_import_option_or_a_format_parameter(subcommand: str) -> None:
    module, function, accepted = _FORMATS[subcommand]
    importer = inspect.signature(getattr(module, function)).parameters
    format_parameters = set(importer) - {"options", "option_values"} - _OUTPUT_PARAMETERS
    names = {p.name for p in prepare.commands[subcommand].params if p.expose_value}
    shared = names & _FIELDS
    assert shared == set(accepted), f"{subcommand}: declares {sorted(shared)}, accepts {sorted(accepted)}"
    assert names - _FIELDS - _OUTPUT_PARAMETERS <= format_parameters, (subcommand, sorted(names - _FIELDS))
    assert not (format_parameters & _FIELDS), "a shared option is spelled out again as an importer parameter"
    assert {"options", "option_values"} <= set(importer) and _OUTPUT_PARAMETERS <= set(importer)


def test_every_import_option_has_one_click_declaration_with_its_name() -> None:
    assert set(IMPORT_OPTION_DECLARATIONS) == _FIELDS

    @click.command()
    def probe(**_: Any) -> None:
        """A command that only carries the options."""

    for declare in IMPORT_OPTION_DECLARATIONS.values():
        probe = declare(probe)
    exposed = [p for p in probe.params if p.expose_value]
    assert sorted(p.name for p in exposed) == sorted(_FIELDS)
    defaults = defaults_as_received(probe, [])
    for field in dataclasses.fields(ImportOptions):  # the CLI default is the Python default
        assert defaults[field.name] == field.default, field.name


def test_the_cli_builds_one_value_and_passes_it_unchanged(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    seen: dict[str, Any] = {}

    def fake_import(source: Path, output: Path, **kwargs: Any) -> Any:
        seen.update(kwargs)
        raise OptionError("stop here")

    monkeypatch.setattr(edgelist, "import_edgelist", fake_import)
    result = run_cli(
        "prepare",
        "edgelist",
        str(tmp_path / "e.txt"),
        str(tmp_path / "o"),
        "--undirected",
        "--synthetic-features",
        "4",
        "--synthetic-labels",
        "3",
        "--split",
        "0.6,0.2,0.2",
        "--seed",
        "5",
    )
    assert_user_error(result, "stop here")
    assert seen["options"] == ImportOptions(
        undirected=True, synthetic_features=4, synthetic_labels=3, split=(0.6, 0.2, 0.2), seed=5
    )
    assert not (set(seen) & _FIELDS), "shared options travel inside ImportOptions only"


def test_parsed_and_validated_in_one_place() -> None:
    options = ImportOptions(split="0.6,0.2,0.2", labels="y.txt")
    assert options.split == (0.6, 0.2, 0.2) and options.labels == Path("y.txt")
    assert ImportOptions(split=[0.5, 0.25, 0.25]).split == (0.5, 0.25, 0.25)
    with pytest.raises(dataclasses.FrozenInstanceError):
        options.seed = 1  # type: ignore[misc]
    with pytest.raises(OptionError) as error:
        ImportOptions(features="x.npy", synthetic_features=4)
    assert str(error.value) == "features= and synthetic_features=: expected at most one, found both"
    assert error.value.render(cli=True) == "--features and --synthetic-features: expected at most one, found both"
    with pytest.raises(OptionError, match=r"^split=: expected three fractions in \[0, 1\]"):
        ImportOptions(split=(0.8, 0.3, 0.1))
    with pytest.raises(OptionError, match="^non_finite= expected one of error, replace"):
        ImportOptions(non_finite="drop")


def test_to_meta_keeps_the_meta_json_keys(tmp_path: Path) -> None:
    edges = tmp_path / "e.txt"
    edges.write_text("0 1\n1 2\n")
    ds = edgelist.import_edgelist(
        edges, tmp_path / "o", options=ImportOptions(split="0.5,0.25,0.25"), synthetic_labels=2
    )
    meta_options = json.loads((ds.path / "meta.json").read_text())["source"]["options"]
    assert meta_options == {
        "undirected": False,
        "drop_self_loops": False,
        "keep_duplicates": False,
        "labels": None,
        "features": None,
        "synthetic_features": 0,
        "synthetic_feature_signal": 0.0,
        "synthetic_labels": 2,
        "labels_layout": "auto",
        "labels_column": None,
        "unlabelled_value": None,
        "split": [0.5, 0.25, 0.25],
        "seed": 0,
        "header": "auto",
        "ids": "int",
        "num_nodes": None,
        "non_finite": "error",
        "edge_split": None,
        "edge_split_files": None,
        "eval_negatives": 0,
    }
    assert set(ImportOptions().to_meta(OGB_FIELDS)) == set(OGB_FIELDS)


def test_an_option_the_format_ignores_is_refused(tmp_path: Path) -> None:
    with pytest.raises(OptionError, match=r"^undirected=: expected no value for the planetoid importer"):
        planetoid.import_planetoid(tmp_path, tmp_path / "o", options=ImportOptions(undirected=True))
    with pytest.raises(OptionError, match=r"^labels=: expected no value for the ogb importer"):
        ogb.import_ogb(tmp_path, tmp_path / "o", labels=tmp_path / "y.txt")
    (tmp_path / "e.txt").write_text("0 1\n")
    with pytest.raises(TypeError, match="no_such_option"):
        edgelist.import_edgelist(tmp_path / "e.txt", tmp_path / "o", no_such_option=1)
