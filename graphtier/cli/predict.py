"""``graphtier predict DATASET --model FILE --output preds.npy``: a saved model's predictions for every node."""

from __future__ import annotations

from pathlib import Path

import click
import numpy as np


@click.command("predict")
@click.argument("dataset", type=click.Path(file_okay=False, path_type=str))
@click.option(
    "--model", "model_path", required=True, type=click.Path(dir_okay=False, path_type=str),
    help="A model written by 'graphtier train --save-model' on this same dataset.",
)  # fmt: skip
@click.option(
    "--output", required=True, type=click.Path(dir_okay=False, path_type=Path),
    help="Predictions .npy: int64 [N] predicted classes, or float32 [N, C] with --probabilities.",
)  # fmt: skip
@click.option(
    "--embeddings", type=click.Path(dir_okay=False, path_type=Path), default=None,
    help="Also write float32 [N, H] node embeddings (the input of the last layer) to this .npy.",
)  # fmt: skip
@click.option("--probabilities", is_flag=True, help="Write class probabilities (softmax) instead of classes.")
@click.option("--device", default="cpu", show_default=True, help="cpu | cuda | cuda:N.")
@click.option("--chunk-size", default=4096, show_default=True, type=int, help="Destination nodes per inference step.")
@click.option("--quiet", is_flag=True, help="Print nothing on success.")
def command(
    dataset: str, model_path: str, output: Path, embeddings: Path | None, probabilities: bool, device: str,
    chunk_size: int, quiet: bool,
) -> None:  # fmt: skip
    """Predict every node of DATASET with a saved model (exact layer-wise inference, all neighbours).

    Rows follow the dataset's node order (node i of DATASET is row i). The model must have been
    trained on this dataset: a model from another graph, node order or feature table is refused.
    """
    import time

    from graphtier.dataset import Dataset
    from graphtier.dataset.outputs import check_outputs, save_npy
    from graphtier.train.evaluation import majority_class_accuracy
    from graphtier.train.predict import predict
    from graphtier.train.saved import load_model

    for option, path in (("--output", output), ("--embeddings", embeddings)):
        if path is not None and path.suffix != ".npy":
            raise click.BadParameter(f"expected a path ending in .npy, found {str(path)!r}", param_hint=option)
    check_outputs(
        [("output", output, "file"), ("embeddings", embeddings, "file")],
        inputs=[("model", model_path)],
        dataset=dataset,
    )
    saved = load_model(model_path)
    data = Dataset.open(dataset)
    start = time.perf_counter()
    result = predict(saved, data, device=device, chunk_size=chunk_size, embeddings=embeddings is not None)
    seconds = time.perf_counter() - start
    save_npy(output, result.probabilities if probabilities else result.classes, "output")
    if embeddings is not None and result.embeddings is not None:
        save_npy(embeddings, result.embeddings.astype(np.float32, copy=False), "embeddings")
    if not quiet:
        what = "class probabilities" if probabilities else "predicted classes"
        click.echo(
            f"predicted {data.num_nodes:,} nodes with {saved.config['model']} ({saved.config['num_layers']} layers) "
            f"in {seconds:.2f}s: {what} written to {output}"
            + (
                f", embeddings [{data.num_nodes:,} x {result.embeddings.shape[1]}] to {embeddings}"
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
                line += f"  majority-class test_acc {baseline:.4f} (class {majority}, the train split's most common)"
            click.echo(line)
