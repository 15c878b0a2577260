"""graphtier predict --task link: pair scores, embeddings, top-K recommendations; bad input in one line."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

from graphtier import Dataset, OptionError
from graphtier.train import train
from graphtier.train.infer.link_predict import read_node_ids, read_node_pairs, top_k
from graphtier.train.infer.predict import predict
from graphtier.train.nn.link_model import LinkModel, build_task_model
from graphtier.train.persist.saved import load_model
from tests.conftest import run_cli_in_one_process
from tests.recording_progress import RecordingProgress

SMALL = dict(task="link", batch_size=128, hidden=16, fanouts=(5, 5), eval_batch_size=256, lr=0.01, quiet=True)


@pytest.fixture
def link_model_file(tiny_link_dataset: Dataset, tmp_path: Path) -> Path:
    path = tmp_path / "link.pt"
    train(tiny_link_dataset, epochs=1, save_model=str(path), **SMALL)
    return path


def _cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "graphtier", *args], capture_output=True, text=True, timeout=300)


def test_pairs_embeddings_and_top_k_from_the_cli(
    tiny_link_dataset: Dataset, link_model_file: Path, tmp_path: Path
) -> None:
    pairs = tmp_path / "pairs.txt"
    pairs.write_text("# src dst\n0 1\n5 7\n")
    nodes = tmp_path / "nodes.txt"
    nodes.write_text("0\n3\n")
    ds = str(tiny_link_dataset.path)
    model = str(link_model_file)
    scores, emb, ids, top_scores = (tmp_path / n for n in ("s.npy", "e.npy", "ids.npy", "ts.npy"))
    result = _cli("predict", ds, "--model", model, "--task", "link", "--pairs", str(pairs), "--output", str(scores),
                  "--embeddings", str(emb))  # fmt: skip
    assert result.returncode == 0, result.stderr
    table = np.load(emb)
    saved = load_model(link_model_file)
    assert isinstance(saved.model, LinkModel)
    expected = saved.model.score(torch.from_numpy(table[[0, 5]]), torch.from_numpy(table[[1, 7]])).detach().numpy()
    np.testing.assert_allclose(np.load(scores), expected, rtol=1e-5, atol=1e-6)
    result = _cli("predict", ds, "--model", model, "--top-k", "4", "--for-nodes", str(nodes), "--output", str(ids),
                  "--scores", str(top_scores))  # fmt: skip
    assert result.returncode == 0, result.stderr
    got = np.load(ids)
    assert got.shape == (2, 4) and got.dtype == np.int64
    indptr, indices = np.asarray(tiny_link_dataset.indptr), np.asarray(tiny_link_dataset.indices)
    for row, node in enumerate([0, 3]):
        assert node not in got[row] and not set(got[row]) & set(indices[indptr[node] : indptr[node + 1]].tolist())
        assert np.all(np.diff(np.load(top_scores)[row]) <= 0)
    inline = tmp_path / "inline.npy"
    result = _cli("predict", ds, "--model", model, "--top-k", "4", "--for-nodes", "0,3", "--output", str(inline))
    assert result.returncode == 0, result.stderr
    np.testing.assert_array_equal(np.load(inline), got)  # the ids given inline are the same query


def test_inline_node_ids_are_checked() -> None:
    assert read_node_ids("4, 0,2", 5).tolist() == [4, 0, 2]
    with pytest.raises(OptionError, match=r"--for-nodes 0,5: expected node ids in \[0, 5\), found 5"):
        read_node_ids("0,5", 5)


@pytest.mark.parametrize("decoder", ["dot", "mlp"])
def test_top_k_in_small_chunks_equals_brute_force(tiny_link_dataset: Dataset, decoder: str, monkeypatch) -> None:
    import graphtier.train.infer.link_predict as link_predict

    torch.manual_seed(0)
    model = build_task_model("link", "sage", tiny_link_dataset.feature_dim, 8, 0, 2, decoder=decoder)
    assert isinstance(model, LinkModel)
    model.eval()
    n = tiny_link_dataset.num_nodes
    table = np.random.default_rng(0).normal(size=(n, 8)).astype(np.float32)
    nodes = np.array([0, 1, 2, 399, 17], np.int64)
    monkeypatch.setattr(link_predict, "SCORE_BUDGET", 8 * 37)  # many query and candidate chunks
    recorder = RecordingProgress()
    ids, scores = top_k(model, table, tiny_link_dataset, nodes, 5, progress=recorder)
    assert recorder.descriptions() == ["predict: top-5"]  # one advance per chunk of query nodes
    assert [done for _, done in recorder.advances] == [1, 2, 3, 4, 5]
    indptr, indices = np.asarray(tiny_link_dataset.indptr), np.asarray(tiny_link_dataset.indices)
    with torch.no_grad():
        for row, node in enumerate(nodes):
            every = model.score(torch.from_numpy(table[[node] * n]), torch.from_numpy(table)).numpy()
            every[indices[indptr[node] : indptr[node + 1]]] = -np.inf
            every[node] = -np.inf
            best = np.argsort(-every, kind="stable")[:5]
            np.testing.assert_allclose(scores[row], every[best], rtol=1e-5, atol=1e-5)
            assert set(ids[row]) == set(best) or np.allclose(np.sort(every[ids[row]]), np.sort(every[best]))


def test_embeddings_are_the_encoder_output(tiny_link_dataset: Dataset, link_model_file: Path) -> None:
    saved = load_model(link_model_file)
    out = predict(saved, tiny_link_dataset).logits
    assert out.shape == (tiny_link_dataset.num_nodes, 16)


def test_bad_link_predict_input_is_one_line(tiny_link_dataset: Dataset, link_model_file: Path, tmp_path: Path) -> None:
    bad = tmp_path / "bad.txt"
    bad.write_text("0 1\n2 x\n")
    with pytest.raises(OptionError, match="--pairs"):
        read_node_pairs(bad, 400)
    far = tmp_path / "far.npy"
    np.save(far, np.array([[0, 400]]))
    with pytest.raises(OptionError, match=r"\[0, 400\)"):
        read_node_pairs(far, 400)
    ds, model = str(tiny_link_dataset.path), str(link_model_file)
    cases = (
        (["--task", "node", "--output", str(tmp_path / "o.npy")], "--task link"),
        (["--top-k", "3", "--output", str(tmp_path / "o.npy")], "--for-nodes"),
        (["--pairs", str(bad), "--output", str(tmp_path / "o.npy")], "--pairs"),
        ([], "nothing to do"),
        (["--probabilities", "--embeddings", str(tmp_path / "o.npy")], "--probabilities: only with a node classifier"),
    )
    runs = run_cli_in_one_process([["predict", ds, "--model", model, *args] for args, _ in cases])
    for (args, fragment), result in zip(cases, runs):
        assert result.returncode == 2 and fragment in result.stderr, (args, result)
        assert len(result.stderr.strip().splitlines()) == 1 and "Traceback" not in result.stderr, (args, result)
    assert not (tmp_path / "o.npy").exists()


def test_top_k_and_for_nodes_mistakes_are_one_line(
    tiny_link_dataset: Dataset, link_model_file: Path, tmp_path: Path
) -> None:
    """Issue 34: a huge --top-k, --for-nodes naming an empty file or ids that are not integers, a uint64 id past
    2^63, an empty --pairs file: one line each (no numpy warning, no traceback); a long inline id list (past the
    255-byte file-name limit) is ids, the same query as a file holding them."""
    (tmp_path / "empty.txt").write_text("")
    np.save(tmp_path / "huge.npy", np.array([1, 2**64 - 1], np.uint64))
    many = ",".join(str(i) for i in range(400))  # 1,489 characters
    (tmp_path / "many.txt").write_text(many.replace(",", "\n") + "\n")
    ds, model, out = str(tiny_link_dataset.path), str(link_model_file), str(tmp_path / "o.npy")
    cases = (
        (["--top-k", str(2**62), "--for-nodes", "0,1"], "--top-k expected at most 400 (the candidate destinations"),
        (["--top-k", "3", "--for-nodes", str(tmp_path / "empty.txt")], "empty.txt: expected at least one of the node"),
        (["--top-k", "3", "--for-nodes", "a,b"], "--for-nodes a,b: expected node ids as integers separated by commas"),
        (["--top-k", "3", "--for-nodes", str(tmp_path / "huge.npy")], "found values in [1, 18446744073709551615]"),
        (["--top-k", "3", "--for-nodes", "0," + "9" * 30], f"expected node ids in [0, 400), found {'9' * 30}"),
        (["--pairs", str(tmp_path / "empty.txt")], "--pairs"),
    )
    good = [["--top-k", "3", "--for-nodes", many, "--output", str(tmp_path / "inline.npy")]]
    good.append(["--top-k", "3", "--for-nodes", str(tmp_path / "many.txt"), "--output", str(tmp_path / "file.npy")])
    runs = run_cli_in_one_process([["predict", ds, "--model", model, *a, "--output", out] for a, _ in cases])
    for (args, fragment), result in zip(cases, runs):
        assert result.returncode == 2, (args, result)
        assert result.stderr.count("\n") == 1 and result.stderr.startswith("graphtier: error: "), (args, result)
        assert fragment in result.stderr, (args, fragment, result.stderr)
    assert not (tmp_path / "o.npy").exists()
    for result in run_cli_in_one_process([["predict", ds, "--model", model, *args] for args in good]):
        assert result.returncode == 0, result.stderr
    inline = np.load(tmp_path / "inline.npy")
    assert inline.shape == (400, 3)
    np.testing.assert_array_equal(inline, np.load(tmp_path / "file.npy"))


def test_top_k_refuses_more_than_the_candidates(tiny_link_dataset: Dataset) -> None:
    model = build_task_model("link", "sage", tiny_link_dataset.feature_dim, 8, 0, 2)
    assert isinstance(model, LinkModel)
    table = np.zeros((tiny_link_dataset.num_nodes, 8), np.float32)
    with pytest.raises(OptionError, match=r"^top_k= expected at most 400 \(the candidate destinations"):
        top_k(model, table, tiny_link_dataset, np.array([0]), 401)
    with pytest.raises(OptionError, match=r"^top_k= expected at most 10 .* ids \[5, 15\)\), found 11"):
        top_k(model, table, tiny_link_dataset, np.array([0]), 11, dst_range=(5, 15))
