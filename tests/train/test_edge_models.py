"""GAT and GINE with edge inputs (edge features, TGAT's time encoding): layers against PyG's per-edge path, the time
encoding against its formula, training on hand-made blocks, GAT without edge inputs unchanged, saved-model round trip,
and the one-line refusals of the options."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch
from torch_geometric.nn import GATConv

from graphtier import Dataset, OptionError
from graphtier.sampling import Block
from graphtier.train import TrainConfig, load_model, predict
from graphtier.train.infer.inference import check_layerwise
from graphtier.train.nn.link_model import build_task_model
from graphtier.train.nn.models import BlockGNN, build_model
from graphtier.train.nn.time_encoding import EdgeInputs, TimeEncoding
from graphtier.train.persist.saved import save_model
from tests.conftest import run_cli_in_one_process


def random_block(num_src: int, num_dst: int, num_edges: int, edge_dim: int, *, seed: int, timed: bool = True) -> Block:
    """A bipartite block with random edges (duplicates allowed), edge features and edge ages."""
    gen = torch.Generator().manual_seed(seed)
    src = torch.randint(0, num_src, (num_edges,), generator=gen)
    dst = torch.randint(0, num_dst, (num_edges,), generator=gen)
    attr = torch.randn(num_edges, edge_dim, generator=gen) if edge_dim else None
    age = 10 ** (3 * torch.rand(num_edges, generator=gen)) if timed else None  # 1 to 1000, spread over the scales
    return Block.from_edge_index(torch.stack([src, dst]), num_src, num_dst, edge_attr=attr, edge_age=age)


def edge_vector(model: BlockGNN, block: Block) -> torch.Tensor:
    """[edge_attr, cos(age * w + b)] computed here from the formula (not by the model's EdgeInputs)."""
    parts = []
    if block.edge_attr is not None and model.edge_dim:
        parts.append(block.edge_attr)
    if model.time_dim:
        time = model.edge_inputs.time
        parts.append(torch.cos(block.edge_age[:, None] * time.weight[None, :] + time.bias[None, :]))
    return torch.cat(parts, dim=1)


def test_time_encoding_equals_the_numpy_formula() -> None:
    dt = np.array([0.0, 1.0, 3.5, 86400.0, 1.3e6, 7.0e8], dtype=np.float32)
    for fixed in (False, True):
        enc = TimeEncoding(7, fixed=fixed)
        w = enc.weight.detach().double().numpy()  # TGAT's frequencies as float32 values
        np.testing.assert_allclose(w, 1.0 / 10 ** np.linspace(0, 9, 7), rtol=1e-7)
        expected = np.cos(dt.astype(np.float64)[:, None] * w[None, :])
        np.testing.assert_allclose(enc(torch.from_numpy(dt)).detach().numpy(), expected, atol=1e-6)
        assert sorted(enc.state_dict()) == ["bias", "weight"]
        assert len(list(enc.parameters())) == (0 if fixed else 2)
    enc = TimeEncoding(3)
    with torch.no_grad():
        enc.weight.copy_(torch.tensor([0.5, -2.0, 3.0]))
        enc.bias.copy_(torch.tensor([0.1, 0.2, -0.3]))
    out = enc(torch.tensor([2.0, -1.0])).detach().numpy()
    np.testing.assert_allclose(out, np.cos(np.array([[2.0], [-1.0]]) * [0.5, -2.0, 3.0] + [0.1, 0.2, -0.3]), atol=1e-6)


def test_edge_inputs_concatenate_and_refuse_missing_attributes() -> None:
    block = random_block(6, 3, 10, 4, seed=1)
    inputs = EdgeInputs(4, 5)
    vec = inputs(block)
    assert vec.shape == (10, 9) and inputs.width == 9
    torch.testing.assert_close(vec[:, :4], block.edge_attr)
    torch.testing.assert_close(vec[:, 4:], inputs.time(block.edge_age))
    with pytest.raises(OptionError, match=r"time_encoding=5: the model encodes Block.edge_age \[10\] .*found a block"):
        inputs(Block(block.rowptr, block.col, 6, edge_attr=block.edge_attr))
    with pytest.raises(OptionError, match=r"edge_dim=4: the model reads Block.edge_attr \[10, 4\] .*found a block"):
        EdgeInputs(4)(Block(block.rowptr, block.col, 6))
    with pytest.raises(OptionError, match=r"edge_dim=3: .*\[10, 3\] .*found shape \(10, 4\)"):
        EdgeInputs(3)(block)


@pytest.mark.parametrize(("edge_dim", "time_dim"), [(4, 0), (0, 3), (4, 3)])
def test_gine_layers_equal_pyg_and_the_formula(edge_dim: int, time_dim: int) -> None:
    torch.manual_seed(3)
    model = BlockGNN("gine", 5, 8, 3, 2, dropout=0.0, edge_dim=edge_dim or None, time_dim=time_dim).eval()
    blocks = [random_block(30, 12, 70, edge_dim, seed=4), random_block(12, 5, 25, edge_dim, seed=5)]
    x = torch.randn(30, 5)
    h = x
    with torch.no_grad():
        for index, block in enumerate(blocks):
            conv = model.convs[index]
            e = edge_vector(model, block)
            # PyG's per-edge path on the block as one graph (all rows, not the bipartite pair): the destination rows
            pyg = conv(h, block.edge_index, e)[: block.num_dst]
            # the formula: nn((1 + eps) x_i + sum_j relu(x_j + lin(e_ji)))
            src, dst = block.edge_index
            messages = torch.relu(h[src] + conv.lin(e))
            agg = torch.zeros(block.num_dst, h.shape[1]).index_add_(0, dst, messages)
            formula = conv.nn((1 + conv.eps) * h[: block.num_dst] + agg)
            out = model.layer(index, h, block)
            last = index == len(blocks) - 1
            torch.testing.assert_close(out, pyg if last else torch.relu(pyg), rtol=1e-5, atol=1e-5)
            torch.testing.assert_close(pyg, formula, rtol=1e-5, atol=1e-5)
            h = out
        torch.testing.assert_close(model(x, blocks), h)


@pytest.mark.parametrize(("edge_dim", "time_dim"), [(4, 0), (0, 3), (4, 3)])
def test_gat_layers_with_edge_inputs_equal_pyg(edge_dim: int, time_dim: int) -> None:
    torch.manual_seed(7)
    model = BlockGNN("gat", 5, 8, 3, 2, dropout=0.0, heads=2, edge_dim=edge_dim or None, time_dim=time_dim).eval()
    assert model.convs[0].lin_edge.in_channels == edge_dim + time_dim  # PyG's GATConv(edge_dim=d_e + t_dim)
    blocks = [random_block(30, 12, 70, edge_dim, seed=8), random_block(12, 5, 25, edge_dim, seed=9)]
    h = torch.randn(30, 5)
    with torch.no_grad():
        for index, block in enumerate(blocks):
            # PyG's layer on the whole graph (self loops of every row, edge_attr filled with their in-edges' mean)
            pyg = model.convs[index](h, block.edge_index, edge_vector(model, block))[: block.num_dst]
            out = model.layer(index, h, block)
            torch.testing.assert_close(out, pyg if index == 1 else torch.relu(pyg), rtol=1e-5, atol=1e-5)
            # the edge inputs matter: other edge features give other outputs
            other = Block(block.rowptr, block.col, block.num_src,
                          edge_attr=None if block.edge_attr is None else block.edge_attr.flip(0),
                          edge_age=block.edge_age.flip(0))  # fmt: skip
            assert not torch.allclose(model.layer(index, h, other), out)
            h = out


def test_gat_without_edge_inputs_is_unchanged() -> None:
    """The keys and shapes of a GAT built before edge inputs existed: saved GAT models and checkpoints still load."""
    model = build_model("gat", 5, 8, 3, 2, heads=2)
    expected = {
        "convs.0.att_src": (1, 2, 4), "convs.0.att_dst": (1, 2, 4), "convs.0.bias": (8,),
        "convs.0.lin_src.weight": (8, 5), "convs.0.lin_dst.weight": (8, 5), "convs.1.att_src": (1, 1, 3),
        "convs.1.att_dst": (1, 1, 3), "convs.1.bias": (3,), "convs.1.lin_src.weight": (3, 8),
        "convs.1.lin_dst.weight": (3, 8),
    }  # fmt: skip
    assert {k: tuple(v.shape) for k, v in model.state_dict().items()} == expected
    assert model.edge_input_dim == 0 and model.edge_inputs is None
    # the same initial weights as before under one seed, and PyG's plain GATConv output on blocks with edge inputs
    torch.manual_seed(11)
    a = build_model("gat", 5, 8, 3, 1, heads=2, dropout=0.0).eval()
    torch.manual_seed(11)
    reference = GATConv((5, 5), 3, heads=1, concat=False, dropout=0.0).eval()
    block = random_block(9, 4, 20, 2, seed=12)
    h = torch.randn(9, 5)
    with torch.no_grad():
        torch.testing.assert_close(a(h, [block]), reference((h, h[:4]), block.edge_index))


def _edge_task_blocks(seed: int) -> tuple[torch.Tensor, list[Block], torch.Tensor]:
    """One-layer batches whose labels need the edge inputs. Target 0: whether the sum of a destination's in-edges'
    first feature is positive. Target 1 (2): the sign of the first feature of the source of its newest edge (of the
    edge with the largest first feature): attention has to pick that edge by its age (its features); destinations
    without in-edges are class 0."""
    gen = torch.Generator().manual_seed(100 + seed)
    block = random_block(64, 32, 256, 3, seed=seed)
    src, dst = block.edge_index
    x = torch.randn(64, 4, generator=gen)
    score = torch.zeros(32).index_add_(0, dst, block.edge_attr[:, 0])
    newest = torch.full((32,), 1e9).scatter_reduce_(0, dst, block.edge_age, reduce="amin")
    young = torch.zeros(32).index_add_(0, dst, x[src, 0] * (block.edge_age == newest[dst]))
    top = torch.full((32,), -1e9).scatter_reduce_(0, dst, block.edge_attr[:, 0], reduce="amax")
    picked = torch.zeros(32).index_add_(0, dst, x[src, 0] * (block.edge_attr[:, 0] == top[dst]))
    labels = torch.stack([(score > 0).long(), (young > 0).long(), (picked > 0).long()])
    return x, [block], labels


def _fit(model: torch.nn.Module, target: int, epochs: int = 100) -> tuple[list[float], float]:
    """Adam on four hand-made batches (:func:`_edge_task_blocks`): the mean training loss of every epoch, and the
    accuracy on ten other batches."""
    optimizer = torch.optim.Adam(model.parameters(), lr=0.02)
    batches = [_edge_task_blocks(seed) for seed in range(4)]
    losses = []
    for _ in range(epochs):
        total = 0.0
        for x, blocks, labels in batches:
            loss = torch.nn.functional.cross_entropy(model(x, blocks), labels[target])
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            total += float(loss.detach())
        losses.append(total / len(batches))
    model.eval()
    with torch.no_grad():
        held_out = [_edge_task_blocks(seed) for seed in range(10, 20)]
        hits = sum(int((model(x, blocks).argmax(1) == labels[target]).sum()) for x, blocks, labels in held_out)
    return losses, hits / sum(int(labels.shape[1]) for _, _, labels in held_out)


@pytest.mark.parametrize(("kind", "edge_dim", "time_dim", "target"), [("gine", 3, 4, 0), ("gat", None, 8, 1),
                                                                       ("gat", 3, 0, 2)])  # fmt: skip
def test_a_tiny_model_learns_from_edge_inputs(kind: str, edge_dim: int | None, time_dim: int, target: int) -> None:
    torch.manual_seed(0)
    model = build_model(kind, 4, 16, 2, 1, dropout=0.0, heads=2, edge_dim=edge_dim, time_encoding=time_dim)
    losses, accuracy = _fit(model, target)
    assert min(losses[-10:]) < 0.5 * losses[0] and accuracy > 0.75, (losses[::10], accuracy)
    if time_dim:  # the time encoding's frequencies learn
        assert model.edge_inputs.time.weight.grad is not None
    if kind == "gat":  # the same GAT without edge inputs cannot tell the edges apart
        torch.manual_seed(0)
        _, plain = _fit(build_model("gat", 4, 16, 2, 1, dropout=0.0, heads=2), target)
        assert accuracy > plain + 0.15, (accuracy, plain)


def test_gine_saved_model_round_trip(tmp_path: Path) -> None:
    dataset = _dataset_with_edge_features(tmp_path, 3)
    config = TrainConfig(model="gine", hidden=8, fanouts=(4, 4)).with_edge_features(dataset)
    assert config.network.edge_dim == 3
    torch.manual_seed(0)
    model = build_task_model("node", "gine", dataset.feature_dim, 8, dataset.num_classes, 2, edge_dim=3)
    path = save_model(tmp_path / "gine.pt", model, config.to_dict(), dataset)
    saved = load_model(path)
    assert saved.config["model"] == "gine" and saved.config["edge_dim"] == 3 and saved.config["time_encoding"] == 0
    assert saved.model.edge_input_dim == 3
    for name, tensor in model.state_dict().items():
        torch.testing.assert_close(tensor, saved.model.state_dict()[name])
    block = random_block(20, 6, 40, 3, seed=2, timed=False)
    x = torch.randn(20, dataset.feature_dim)
    model.eval()
    with torch.no_grad():
        torch.testing.assert_close(saved.model(x, [block, random_block(6, 2, 9, 3, seed=3)]),
                                   model(x, [block, random_block(6, 2, 9, 3, seed=3)]))  # fmt: skip
    # a saved model with edge inputs is refused by exact layer-wise inference, in one line naming the file
    with pytest.raises(OptionError, match=r"--model .*gine\.pt: gine reads edge inputs"):
        predict(saved, dataset)
    # a file whose edge_dim does not fit its weights is refused before the model is built
    state = torch.load(path, weights_only=True)
    state["config"]["edge_dim"] = 5
    torch.save(state, tmp_path / "edited.pt")
    with pytest.raises(OptionError, match=r"parameter 'convs\.0\.lin\.weight' expected shape \(\d+, 5\)"):
        load_model(tmp_path / "edited.pt")


def test_time_encoded_model_saved_with_its_options(tmp_path: Path) -> None:
    dataset = _dataset_with_edge_features(tmp_path, 2)
    model = build_task_model("link", "gat", dataset.feature_dim, 8, 0, 2, heads=2, time_encoding=4,
                             time_encoding_fixed=True)  # fmt: skip
    config = TrainConfig(model="gat", hidden=8, heads=2, fanouts=(3, 3), task="link", temporal="recent",
                         time_encoding=4, time_encoding_fixed=True).to_dict()  # fmt: skip
    saved = load_model(save_model(tmp_path / "gat.pt", model, config, dataset))
    assert saved.config["time_encoding"] == 4 and saved.config["time_encoding_fixed"] is True
    assert saved.model.edge_input_dim == 4  # a link model answers for its encoder
    time = saved.model.encoder.edge_inputs.time
    assert time.fixed and not any(p is time.weight for p in saved.model.parameters())
    np.testing.assert_allclose(time.weight.numpy(), 1.0 / 10 ** np.linspace(0, 9, 4), rtol=1e-6)


def _dataset_with_edge_features(tmp_path: Path, dim: int) -> Dataset:
    """The tiny labelled dataset with ``edge_feat.npy`` [E, dim] and its meta entry (the dataset contract), written
    here as the data layer writes them."""
    from tests.conftest import write_labelled_graph

    root = write_labelled_graph(tmp_path / "edges").path
    meta = json.loads((root / "meta.json").read_text())
    feats = np.random.default_rng(0).standard_normal((int(meta["num_edges"]), dim)).astype(np.float32)
    np.save(root / "edge_feat.npy", feats)
    meta["edge_features"] = {"dim": dim, "dtype": "float32", "columns": [f"f{i}" for i in range(dim)]}
    (root / "meta.json").write_text(json.dumps(meta))
    return Dataset.open(root)


def test_option_refusals(tiny_dataset: Dataset, tmp_path: Path) -> None:
    with pytest.raises(OptionError, match=r"time_encoding=4: an edge input of gat, gine only, found model='sage'"):
        TrainConfig(model="sage", time_encoding=4)
    with pytest.raises(OptionError, match=r"^edge_dim=3 \(edge features\): an edge input of gat, gine, rgat only"):
        TrainConfig(model="mlp", edge_dim=3)
    with pytest.raises(OptionError, match=r"time_encoding=4: encodes the edge ages of a temporal run"):
        TrainConfig(model="gine", time_encoding=4)
    with pytest.raises(OptionError, match="time_encoding_fixed=: keeps the frequencies"):
        TrainConfig(model="gat", time_encoding_fixed=True)
    with pytest.raises(OptionError, match=r"time_encoding= expected a non-negative integer, found -1"):
        TrainConfig(model="gat", time_encoding=-1)
    with pytest.raises(OptionError, match=r"model='gine': needs edge inputs"):
        TrainConfig(model="gine").validate(tiny_dataset)
    with pytest.raises(OptionError, match=r"model='gine': needs edge inputs"):
        build_model("gine", 4, 8, 2, 2)
    with pytest.raises(OptionError, match=r"has no edge features .*model='gine'"):
        TrainConfig(model="gine").with_edge_features(tiny_dataset)
    with pytest.raises(OptionError, match=r"edge_dim=3 expected the width of the dataset's edge features .*found none"):
        TrainConfig(model="gat", edge_dim=3).validate(tiny_dataset)
    edged = _dataset_with_edge_features(tmp_path, 2)
    with pytest.raises(OptionError, match=r"edge_dim=3 expected .*found 2"):
        TrainConfig(model="gat", edge_dim=3).validate(edged)
    with pytest.raises(OptionError, match=r"full_inference=: exact layer-wise inference reads no edge inputs"):
        TrainConfig(model="gine", full_inference=True).with_edge_features(edged).validate(edged)
    TrainConfig(model="gine", fanouts=(3, 3)).with_edge_features(edged).validate(edged)  # accepted
    gine = build_model("gine", 4, 8, 2, 2, edge_dim=2)
    with pytest.raises(OptionError, match="gine reads edge inputs"):
        check_layerwise(gine)
    check_layerwise(build_model("gat", 4, 8, 2, 2))


def test_cli_refuses_in_one_line(tiny_dataset: Dataset) -> None:
    d = str(tiny_dataset.path)
    results = run_cli_in_one_process([
        ["train", d, "--model", "gine", "--epochs", "1"],
        ["train", d, "--model", "sage", "--time-encoding", "8", "--epochs", "1"],
        ["train", d, "--model", "gat", "--time-encoding", "8", "--epochs", "1"],
    ])  # fmt: skip
    expected = [
        "graphtier: error: --model gine: needs edge inputs: the dataset's edge features or --time-encoding DIM with "
        "--temporal",
        "graphtier: error: --time-encoding 8: an edge input of gat, gine only, found --model sage",
        "graphtier: error: --time-encoding 8: encodes the edge ages of a temporal run, found no --temporal",
    ]
    for result, line in zip(results, expected, strict=True):
        assert result.returncode == 2, result
        assert result.stderr.strip().splitlines() == [result.stderr.strip()] and result.stderr.startswith(line), result
