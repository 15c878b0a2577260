"""``graphtier predict DATASET --model FILE --output preds.npy``: a saved model's predictions for every node;
with ``--task link``: scores of node pairs, node embeddings, or each node's top-K recommendations."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click
import numpy as np

from graphtier.cli.common.progress import cli_progress
from graphtier.errors import OptionError


@click.command("predict")
@click.argument("dataset", type=click.Path(file_okay=False, path_type=str))
@click.option(
    "--model", "model_path", required=True, type=click.Path(dir_okay=False, path_type=str),
    help="A model written by 'graphtier train --save-model' on this same dataset.",
)  # fmt: skip
@click.option(
    "--output", default=None, type=click.Path(dir_okay=False, path_type=Path),
    help="Predictions .npy: int64 [N] predicted classes, or float32 [N, C] with --probabilities; --task link: "
    "float32 [P] logits of --pairs (a --link-target model: predicted values, or probabilities for binary), or "
    "int64 [n, K] node ids of --top-k; a .csv with --top-k: the "
    "recommendations in the input's ids, the popularity top-K beside them.",
)  # fmt: skip
@click.option(
    "--task", type=click.Choice(("node", "link")), default=None,
    help="What the model predicts (default: what it was trained for; a mismatch is refused).",
)  # fmt: skip
@click.option(
    "--pairs", type=click.Path(dir_okay=False, path_type=str), default=None,
    help="--task link: node pairs to score, a text file of 'src dst' lines or a .npy int [P, 2].",
)  # fmt: skip
@click.option("--top-k", type=int, default=None, help="--task link: each --for-nodes node's K best new destinations.")
@click.option(
    "--for-nodes", type=click.Path(dir_okay=False, path_type=str), default=None,
    help="--top-k: the query nodes: a file (one id per line, or a .npy int [n]) or ids like 0,1,2.",
)  # fmt: skip
@click.option(
    "--scores", "scores_path", type=click.Path(dir_okay=False, path_type=Path), default=None,
    help="--top-k: also write float32 [n, K] logits of the recommended nodes to this .npy.",
)  # fmt: skip
@click.option(
    "--embeddings", type=click.Path(dir_okay=False, path_type=Path), default=None,
    help="Also write float32 [N, H] node embeddings to this .npy (the input of the last layer; --task link: "
    "the encoder's output, the embeddings the decoder scores).",
)  # fmt: skip
@click.option("--probabilities", is_flag=True, help="Write class probabilities (softmax) instead of classes.")
@click.option("--device", default="cpu", show_default=True, help="cpu | cuda | cuda:N.")
@click.option("--chunk-size", default=4096, show_default=True, type=int, help="Destination nodes per inference step.")
@click.option("--quiet", is_flag=True, help="Print nothing on success.")
def command(
    dataset: str, model_path: str, output: Path | None, task: str | None, pairs: str | None, top_k: int | None,
    for_nodes: str | None, scores_path: Path | None, embeddings: Path | None, probabilities: bool, device: str,
    chunk_size: int, quiet: bool,
) -> None:  # fmt: skip
    """Predict every node of DATASET with a saved model (exact layer-wise inference, all neighbours).

    Rows follow the dataset's node order (node i of DATASET is row i); a typed model (rgcn, rgat, hsage, or any
    model trained on a typed dataset) predicts the target type's nodes, row i its node of local id i (the ids of
    labels.npy and the splits). The model must have been
    trained on this dataset: a model from another graph, node order or feature table is refused.
    A link model (--task link) scores --pairs, writes --embeddings, or recommends with --top-k K
    --for-nodes IDS: each node's K best-scoring destinations that are not itself or already its neighbours
    (--output FILE.csv: in the input's own ids, the K most popular candidates beside them).
    """
    import time

    from graphtier.dataset import Dataset
    from graphtier.dataset.outputs import OutputSet, check_outputs
    from graphtier.train.persist.torch_file import model_file

    for option, path in (("--output", output), ("--embeddings", embeddings), ("--scores", scores_path)):
        if path is not None and path.suffix != ".npy" and not (option == "--output" and path.suffix == ".csv"):
            expected = (
                "a path ending in .npy (or .csv for --top-k)" if option == "--output" else "a path ending in .npy"
            )
            raise click.BadParameter(f"expected {expected}, found {str(path)!r}", param_hint=option)
        if option == "--output" and path is not None and path.suffix == ".csv" and top_k is None:
            raise click.BadParameter(
                f"a .csv output holds --top-k recommendations; expected a path ending in .npy, found {str(path)!r}",
                param_hint=option,
            )
    check_outputs(
        [("output", output, "file"), ("embeddings", embeddings, "file"), ("scores", scores_path, "file")],
        inputs=[("model", model_path)] + [(name, p) for name, p in (("pairs", pairs), ("for_nodes", for_nodes)) if p],
        dataset=dataset,
    )
    data = Dataset.open(dataset)
    model_file(model_path)  # a missing --model is reported before the models and PyG are imported
    from graphtier.train.infer.predict import predict
    from graphtier.train.loop.evaluation import majority_class_accuracy
    from graphtier.train.persist.saved import load_model

    # every layer's outputs [N, H] and the learnable tables go to unlinked scratch files next to --output (or the
    # first existing folder above it), not to RAM (N x H and a MAG-scale author table may exceed it)
    near = (output if output is not None else Path("predictions")).parent.absolute()
    scratch = next(folder for folder in (near, *near.parents) if folder.is_dir())
    saved = load_model(model_path, tables_dir=scratch)
    if task is not None and task != saved.task:
        raise OptionError(f"--task {task}: --model {model_path} was trained with --task {saved.task}")
    if saved.task == "link":
        if probabilities:
            raise OptionError(
                f"--probabilities: only with a node classifier; --model {model_path} is a link model (--task link), "
                "whose --pairs scores are logits (sigmoid gives a probability)"
            )
        link_command(saved, data, output, pairs, top_k, for_nodes, scores_path, embeddings, device, chunk_size, quiet)
        return
    for option, given in (
        ("--pairs", pairs),
        ("--top-k", top_k),
        ("--for-nodes", for_nodes),
        ("--scores", scores_path),
    ):
        if given is not None:
            raise OptionError(f"{option}: only with a link model (--task link); --model {model_path} classifies nodes")
    if output is None:
        raise OptionError("--output: required (the .npy the predictions are written to)")
    start = time.perf_counter()
    result = predict(
        saved,
        data,
        device=device,
        chunk_size=chunk_size,
        embeddings=embeddings is not None,
        progress=cli_progress(quiet),
        scratch_dir=scratch,
    )
    seconds = time.perf_counter() - start
    with OutputSet() as outputs:  # --output and --embeddings replaced together (all new or all old)
        outputs.save_npy(output, result.probabilities if probabilities else result.classes, "output")
        if embeddings is not None and result.embeddings is not None:
            outputs.save_npy(embeddings, result.embeddings.astype(np.float32, copy=False), "embeddings")
        outputs.commit()
    if not quiet:
        what = "class probabilities" if probabilities else "predicted classes"
        nodes = f"{data.schema.target} nodes" if saved.schema is not None else "nodes"
        click.echo(
            f"predicted {result.logits.shape[0]:,} {nodes} with {saved.config['model']} "
            f"({saved.config['num_layers']} layers) "
            f"in {seconds:.2f}s: {what} written to {output}"
            + (
                f", embeddings [{result.logits.shape[0]:,} x {result.embeddings.shape[1]}] to {embeddings}"
                if embeddings is not None and result.embeddings is not None
                else ""
            )
        )
        if data.test_idx is not None and data.labels is not None and len(data.test_idx):
            test = np.asarray(data.test_idx)
            labels = np.asarray(data.labels)
            accuracy = float((result.classes[test] == labels[test]).mean())
            line = f"test_acc {accuracy:.4f} on {len(test):,} test nodes (exact layer-wise inference, all neighbours)"
            majority, baseline = majority_class_accuracy(labels[np.asarray(data.train_idx)], labels[test]) if (
                data.train_idx is not None) else (None, None)  # fmt: skip
            if baseline is not None:
                names = data.class_names
                named = (
                    f" {names[majority]}"
                    if names is not None and majority is not None and 0 <= majority < len(names)
                    else ""
                )
                line += (
                    f"  majority-class test_acc {baseline:.4f} (class {majority}{named}, the train split's most common)"
                )
            click.echo(line)


def link_command(
    saved: Any, data: Any, output: Path | None, pairs: str | None, top_k: int | None, for_nodes: str | None,
    scores_path: Path | None, embeddings: Path | None, device: str, chunk_size: int, quiet: bool,
) -> None:  # fmt: skip
    """``predict --task link``: --pairs scores, --top-k recommendations, --embeddings (all checked before work)."""
    import time

    from graphtier.dataset.outputs import OutputSet
    from graphtier.train.infer.link_predict import (
        candidate_range,
        check_top_k,
        link_model_of,
        pair_scores,
        read_node_ids,
        read_node_pairs,
        top_k_with_popular,
        write_recommendations,
    )
    from graphtier.train.infer.link_predict import top_k as recommend
    from graphtier.train.infer.pair_space import pair_space
    from graphtier.train.infer.predict import predict

    model = link_model_of(saved)
    if pairs is not None and top_k is not None:
        raise OptionError("--pairs and --top-k: give one of them (each writes --output)")
    if (top_k is None) != (for_nodes is None):
        raise OptionError("--top-k and --for-nodes: give both (K, and the nodes to recommend for)")
    if scores_path is not None and top_k is None:
        raise OptionError("--scores: only with --top-k (--pairs writes its scores to --output)")
    if output is None and (pairs is not None or top_k is not None):
        raise OptionError("--output: required with --pairs or --top-k (the .npy the result is written to)")
    if output is not None and pairs is None and top_k is None:
        raise OptionError("--output: a link model writes --pairs scores or --top-k ids there; give one of them")
    if output is None and embeddings is None:
        raise OptionError("--task link: nothing to do; give --pairs, --top-k with --for-nodes, or --embeddings")
    space = pair_space(data)  # typed: the split relation's local ids
    node_pairs = read_node_pairs(pairs, data.num_nodes, space=space) if pairs is not None else None
    nodes = read_node_ids(for_nodes, space.num_src) if for_nodes is not None else None
    if nodes is not None and top_k is not None:
        check_top_k(top_k, int(nodes.shape[0]), *candidate_range(data))
    start = time.perf_counter()
    progress = cli_progress(quiet)
    table = predict(saved, data, device=device, chunk_size=chunk_size, progress=progress).logits  # [N, H] embeddings
    lines = [f"embedded {table.shape[0]:,} nodes with {saved.config['model']} + {saved.config['decoder']} decoder"]
    with OutputSet() as outputs:  # --output, --scores and --embeddings replaced together (all new or all old)
        if node_pairs is not None and output is not None:
            target = saved.config.get("link_target")
            outputs.save_npy(output, pair_scores(model, table, node_pairs, space, target), "output")
            what = {"regression": "predicted values", "binary": "probabilities (label > threshold)"}.get(target)
            lines.append(f"{what or 'scores (logits)'} of {node_pairs.shape[0]:,} pairs written to {output}")
        if nodes is not None and output is not None and top_k is not None:
            if output.suffix == ".csv":  # the popularity top-K beside the model's, from the same pass
                ids, scores, *popular = top_k_with_popular(model, table, data, nodes, top_k, progress=progress)
                write_recommendations(output, data, nodes, ids, scores, *popular, write_file=outputs.stage)
            else:
                ids, scores = recommend(model, table, data, nodes, top_k, progress=progress)
                outputs.save_npy(output, ids, "output")
            if scores_path is not None:
                outputs.save_npy(scores_path, scores, "scores")
            what = " (input ids, popularity top-K beside them)" if output.suffix == ".csv" else ""
            lines.append(f"top-{top_k} new destinations of {nodes.shape[0]:,} nodes written to {output}{what}")
        if embeddings is not None:
            outputs.save_npy(embeddings, table.astype(np.float32, copy=False), "embeddings")
            lines.append(f"embeddings [{table.shape[0]:,} x {table.shape[1]}] written to {embeddings}")
        outputs.commit()
    if not quiet:
        click.echo("; ".join(lines) + f" ({time.perf_counter() - start:.2f}s, exact layer-wise inference)")
