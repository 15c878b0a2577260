"""``graphtier prepare FORMAT SOURCE OUTPUT``: import a public graph format into a dataset directory.

Formats: ``planetoid``, ``edgelist``, ``csr-npz``, ``ogb``, ``mat`` (one subcommand each, with their
own options; ``graphtier prepare FORMAT --help``). The output is written atomically: on any error
nothing is left at OUTPUT.
"""

from __future__ import annotations

import time
from pathlib import Path

import click

from graphtier._progress import Progress
from graphtier.cli.common.prepare_options import common_options, import_options
from graphtier.cli.common.prepare_report import report_import
from graphtier.dataset.importers.assemble.options import (
    EDGE_FORMAT_FIELDS,
    EDGELIST_FIELDS,
    MANIFEST_FIELDS,
    MOVIELENS_FIELDS,
    OGB_FIELDS,
    PLANETOID_FIELDS,
    ImportOptions,
)
from graphtier.dataset.importers.common import textio
from graphtier.dataset.importers.common.mat_variables import ADJACENCY_KEYS, FEATURE_KEYS, LABEL_KEYS


@click.group(name="prepare")
def command() -> None:
    """Import a graph from a public format into a graphtier dataset directory.

    \b
    graphtier prepare planetoid ../shared/data/cora data/cora
    graphtier prepare edgelist soc-Slashdot0902.txt.gz data/slashdot
    graphtier prepare edgelist soc-sign-bitcoinalpha.csv data/btc --time-column timestamp --time-unit s
    graphtier prepare csr-npz cnr-2000.csr.npz data/cnr-2000
    graphtier prepare ogb ogbn_products data/products --undirected
    graphtier prepare mat ACM.mat data/acm --undirected
    graphtier prepare mat Caltech36.mat data/caltech --labels-key local_info --labels-column 1 --unlabelled-value 0
    graphtier prepare movielens ../shared/data/movielens-100k/ml-100k data/ml100k --eval-negatives 100
    graphtier prepare manifest acm.json data/acm --add-reverse
    """


@command.command(name="planetoid")
@common_options
@click.option("--dataset", default=None, help="The <name> in ind.<name>.* (default: detected).")
@import_options(PLANETOID_FIELDS)
def planetoid(
    source: Path,
    output: Path,
    name: str | None,
    overwrite: bool,
    dataset: str | None,
    options: ImportOptions,
    progress: Progress,
) -> None:
    """Planetoid pickles ind.<name>.{x,y,tx,ty,allx,ally,graph,test.index} in SOURCE (a folder)."""
    from graphtier.dataset.importers.formats.planetoid import import_planetoid

    started = time.perf_counter()
    report_import(
        import_planetoid(
            source, output, name=name, overwrite=overwrite, dataset=dataset, options=options, progress=progress
        ),
        started,
    )


@command.command(name="edgelist")
@common_options
@import_options(EDGELIST_FIELDS)
@click.option(
    "--header",
    type=click.Choice(textio.HEADER_MODES),
    default="auto",
    show_default=True,
    help="Whether the first line is a header (auto: if it is not numeric but the next is).",
)
@click.option(
    "--ids",
    type=click.Choice(("auto", "int", "string")),
    default="auto",
    show_default=True,
    help="Node id type (auto: string when the first edge is not two integers).",
)
@click.option(
    "--num-nodes",
    type=int,
    default=None,
    help="Keep integer ids as they are, in [0, N) (nodes without edges are kept).",
)
@click.option(
    "--time-column",
    default=None,
    metavar="K|NAME",
    help="The column of each edge's integer time (0-based index >= 2, or a header name): saved as edge_time.npy; "
    "a merged repeat keeps its earliest time.",
)
@click.option("--time-unit", default=None, help="What the --time-column times count (s, days, ...), for meta.json.")
@click.option(
    "--edge-feature-columns",
    default=None,
    metavar="C1,C2,...",
    help="Columns of numeric edge features (0-based indexes >= 2, or header names): saved as edge_feat.npy "
    "(float32 [E, d]); a reverse edge copies its edge's row, a merged repeat keeps its first line's row.",
)
@click.option(
    "--label-column",
    default=None,
    metavar="K|NAME",
    help="The column of each edge's numeric target: saved as edge_label.npy (float32 [E]); an --edge-split "
    "labels its pairs (link_{split}_label.npy).",
)
def edgelist(
    source: Path,
    output: Path,
    name: str | None,
    overwrite: bool,
    header: str,
    ids: str,
    num_nodes: int | None,
    time_column: str | None,
    time_unit: str | None,
    edge_feature_columns: str | None,
    label_column: str | None,
    options: ImportOptions,
    progress: Progress,
) -> None:
    """A text edge list 'src dst' per line (blank, tab or comma separated; gzip; # and % comments).

    Ids that are not exactly 0..max are renumbered densely and the map is saved as node_ids.npy
    (or node_ids.json for non-integer ids).
    """
    from graphtier.dataset.importers.formats.edgelist import import_edgelist

    started = time.perf_counter()
    dataset = import_edgelist(
        source,
        output,
        name=name,
        overwrite=overwrite,
        options=options,
        header=header,
        ids=ids,
        num_nodes=num_nodes,
        progress=progress,
        time_column=time_column,
        time_unit=time_unit,
        edge_feature_columns=edge_feature_columns,
        label_column=label_column,
    )
    report_import(dataset, started)


@command.command(name="csr-npz")
@common_options
@click.option(
    "--layout",
    type=click.Choice(("auto", "csr", "csc")),
    default="auto",
    show_default=True,
    help="csr: row u lists u's out-neighbours; csc: column v lists v's in-neighbours "
    "(auto: the archive's 'format', else csr).",
)
@import_options(EDGE_FORMAT_FIELDS)
def csr_npz(
    source: Path,
    output: Path,
    name: str | None,
    overwrite: bool,
    layout: str,
    options: ImportOptions,
    progress: Progress,
) -> None:
    """An .npz with 'indptr' and 'indices' of a square sparse adjacency (scipy save_npz works)."""
    from graphtier.dataset.importers.formats.csr_npz import import_csr_npz

    started = time.perf_counter()
    dataset = import_csr_npz(
        source,
        output,
        name=name,
        overwrite=overwrite,
        layout=layout,
        options=options,
        progress=progress,
    )
    report_import(dataset, started)


ADD_REVERSE = click.option(
    "--add-reverse",
    is_flag=True,
    help="Heterogeneous graphs: add the reverse (dst, rev_NAME, src) of every relation, so information flows both "
    "ways.",
)


@command.command(name="ogb")
@common_options
@click.option("--scheme", default=None, help="Split folder under SOURCE/split (default: the only one).")
@ADD_REVERSE
@import_options(OGB_FIELDS)
def ogb(
    source: Path,
    output: Path,
    name: str | None,
    overwrite: bool,
    scheme: str | None,
    add_reverse: bool,
    options: ImportOptions,
    progress: Progress,
) -> None:
    """An OGB node-property dataset folder (raw/edge.csv.gz, raw/num-node-list.csv.gz, ...).

    Pass --undirected for datasets OGB marks add_inverse_edge (ogbn-products, ogbn-proteins). The
    heterogeneous layout (ogbn-mag: raw/num-node-dict.csv.gz, raw/relations/SRC___REL___DST/edge.csv.gz,
    raw/node-feat/TYPE/, raw/node-label/TYPE/, split/SCHEME/TYPE/) is detected; --add-reverse adds the
    reverse of every relation.
    """
    from graphtier.dataset.importers.formats.ogb import import_ogb

    started = time.perf_counter()
    dataset = import_ogb(
        source,
        output,
        name=name,
        overwrite=overwrite,
        scheme=scheme,
        options=options,
        add_reverse=add_reverse,
        progress=progress,
    )
    report_import(dataset, started)


@command.command(name="mat")
@common_options
@click.option(
    "--adjacency-key",
    multiple=True,
    metavar="NAME",
    help=f"Variable holding the square adjacency (default: the first of {', '.join(ADJACENCY_KEYS)}). Repeat it "
    "for several graphs over the same nodes (HAN's PAP and PLP): a typed dataset, one relation per variable.",
)
@click.option(
    "--split-keys",
    default=None,
    metavar="TRAIN,VALID,TEST",
    help="Variables holding the file's own split (node id vectors; 0- or 1-based detected). Default: "
    "train_idx,val_idx,test_idx (or idx_train, ...) when the file has them and no --split is given; "
    "'none' ignores them.",
)
@click.option(
    "--features-key",
    default=None,
    metavar="NAME",
    help=f"Variable holding the [N, D] features (default: the first of {', '.join(FEATURE_KEYS)}; "
    "none found: no features); 'none' skips them.",
)
@click.option(
    "--labels-key",
    default=None,
    metavar="NAME",
    help="Variable holding the labels, a class-id vector or a one-hot [N, K] matrix (default: the first "
    f"of {', '.join(LABEL_KEYS)}; none found: no labels); 'none' skips them.",
)
@import_options(EDGE_FORMAT_FIELDS)
def mat(
    source: Path,
    output: Path,
    name: str | None,
    overwrite: bool,
    adjacency_key: tuple[str, ...],
    split_keys: str | None,
    features_key: str | None,
    labels_key: str | None,
    options: ImportOptions,
    progress: Progress,
) -> None:
    """A MATLAB .mat file (v7.2 or older) with an adjacency matrix, features and labels (scipy.io.loadmat).

    Entry [u, v] != 0 of the adjacency is an edge u -> v; sparse or dense matrices both work. The
    variables not used are listed with their shapes. The file's own split (train_idx, val_idx, test_idx)
    is used unless --split replaces it (said in the output). HAN's ACM3025: --adjacency-key PAP
    --adjacency-key PLP (one node type, one relation per graph). Facebook100: --labels-key local_info
    --labels-column 1 --unlabelled-value 0 (gender; 0 = missing).
    """
    from graphtier.dataset.importers.formats.mat import import_mat

    started = time.perf_counter()
    dataset = import_mat(
        source,
        output,
        name=name,
        overwrite=overwrite,
        adjacency_key=adjacency_key or None,
        features_key=features_key,
        labels_key=labels_key,
        split_keys=split_keys,
        options=options,
        progress=progress,
    )
    chosen = dataset.meta["source"]["options"]

    def origin(key: str, file_option: str) -> str:
        return f"{chosen[file_option]} (--{file_option})" if chosen.get(file_option) else repr(chosen[key])

    adjacency = chosen["adjacency_key"]
    adjacency = ", ".join(map(repr, adjacency)) if isinstance(adjacency, list) else repr(adjacency)
    click.echo(
        f"variables: adjacency {adjacency}, features {origin('features_key', 'features')}, "
        f"labels {origin('labels_key', 'labels')}"
        + (f" column {chosen['labels_column']}" if chosen.get("labels_column") is not None else "")
    )
    unused = dataset.meta["source"].get("unused_variables") or {}
    if unused:
        click.echo(
            "not used: "
            + ", ".join(f"{name} [{shape}]" for name, shape in unused.items())
            + " (--features-key / --labels-key NAME [--labels-column C] / --split-keys use one)"
        )
    report_import(dataset, started)


@command.command(name="movielens")
@common_options
@click.option("--fold", default="u1", show_default=True, help="FOLD.base trains, FOLD.test tests (u1 ... u5, ua, ub).")
@click.option(
    "--valid-fraction",
    type=float,
    default=0.05,
    show_default=True,
    help="Fraction of FOLD.base held out (seeded) as the validation split.",
)
@click.option("--id-features", is_flag=True, help="Append a one-hot node id to the features: a learned row per "
              "user and item (collaborative filtering; features [N, 45 + N]).")  # fmt: skip
@click.option("--typed", is_flag=True, help="A typed dataset: node types user and item with their own side features, "
              "relations (user, rates, item) and its reverse; train with a typed encoder (rgcn, rgat, hsage).")  # fmt: skip
@click.option("--rating-features", is_flag=True, help="Store each edge's rating as edge features (edge_feat.npy "
              "float32 [E, 5], one-hot of the levels 1-5): messages per rating level, as GC-MC; train with "
              "--edge-features --model gine|gat. Homogeneous, with the fold's split.")  # fmt: skip
@import_options(MOVIELENS_FIELDS)
def movielens(
    source: Path,
    output: Path,
    name: str | None,
    overwrite: bool,
    fold: str,
    valid_fraction: float,
    id_features: bool,
    typed: bool,
    rating_features: bool,
    options: ImportOptions,
    progress: Progress,
) -> None:
    """MovieLens-100k (the ml-100k folder) as a link-prediction dataset: users then items, every rating an
    undirected user-item edge (implicit feedback), user/item side features, the fold's base/test files as the
    edge split."""
    from graphtier.dataset.importers.formats.movielens import import_movielens

    started = time.perf_counter()
    dataset = import_movielens(
        source,
        output,
        name=name,
        overwrite=overwrite,
        fold=fold,
        valid_fraction=valid_fraction,
        id_features=id_features,
        typed=typed,
        rating_features=rating_features,
        options=options,
        progress=progress,
    )
    report_import(dataset, started)


@command.command(name="manifest")
@common_options
@ADD_REVERSE
@import_options(MANIFEST_FIELDS)
def manifest(
    source: Path,
    output: Path,
    name: str | None,
    overwrite: bool,
    add_reverse: bool,
    options: ImportOptions,
    progress: Progress,
) -> None:
    """A heterogeneous graph described by a manifest (JSON, or YAML with a .yaml suffix): node types with
    counts, features and labels, one edge file per relation, the target type and its split files.

    \b
    {"nodes": {"paper": {"count": 4019, "features": "p_feat.npz", "labels": "labels.npy"},
               "author": {"count": 7167}},
     "edges": [{"type": ["paper", "written_by", "author"], "path": "pa.txt"}],
     "target": "paper",
     "split": {"train": "train.npy", "valid": "valid.npy", "test": "test.npy"}}
    """
    from graphtier.dataset.importers.formats.manifest import import_manifest

    started = time.perf_counter()
    dataset = import_manifest(
        source, output, name=name, overwrite=overwrite, add_reverse=add_reverse, options=options, progress=progress
    )
    report_import(dataset, started)
