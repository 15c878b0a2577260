"""Fused ReLU + dropout: the counter-based mask, forward/backward against references, reproducibility."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from graphtier.train.nn import _dropout_kernels as kernels
from graphtier.train.nn.dropout import ReLUDropout, dropout_threshold, relu_dropout, relu_dropout_, relu_dropout_gated


@settings(max_examples=40, deadline=None)
@given(
    key=st.integers(0, 2**62),
    p=st.floats(0.0, 0.95),
    size=st.integers(0, 300),
    cut=st.integers(0, 300),
)
def test_kernel_equals_reference_for_any_split(key: int, p: float, size: int, cut: int) -> None:
    rng = np.random.default_rng(key % 1000)
    x = rng.standard_normal(size).astype(np.float32)
    threshold = dropout_threshold(p)
    scale = 1.0 / (1.0 - p)
    out = np.full(size, np.nan, dtype=np.float32)
    cut = min(cut, size)
    kernels.relu_dropout_rows(x, out, np.uint64(key), threshold, scale, cut, size)  # any chunking
    kernels.relu_dropout_rows(x, out, np.uint64(key), threshold, scale, 0, cut)
    np.testing.assert_allclose(out, kernels.relu_dropout_reference(x, key, threshold, scale), rtol=1e-6)


def test_forward_backward_equal_relu_times_mask() -> None:
    torch.manual_seed(0)
    x = torch.randn(300, 70, requires_grad=True)
    p, key = 0.3, 12345
    out = relu_dropout(x, p, True, key=key)
    keep = torch.from_numpy(kernels.keep_mask_reference(key, dropout_threshold(p), x.numel()).reshape(x.shape))
    x_ref = x.detach().clone().requires_grad_(True)
    ref = torch.relu(x_ref) * keep / (1 - p)
    torch.testing.assert_close(out, ref)
    grad = torch.randn_like(out)
    out.backward(grad)
    ref.backward(grad)
    torch.testing.assert_close(x.grad, x_ref.grad)


@pytest.mark.parametrize("p", [0.1, 0.5, 0.8])
def test_drop_rate_is_p(p: float) -> None:
    x = torch.ones(400_000)
    kept = float((relu_dropout(x, p, True, key=7) > 0).double().mean())
    # binomial standard deviation ~ 0.0008; the 16-bit threshold is within 1 / 65536 of p
    assert abs(kept - (1 - p)) < 0.005
    torch.testing.assert_close(relu_dropout(x, p, True, key=7).max(), torch.tensor(1.0 / (1 - p)))


def test_reproducible_by_torch_seed_and_eval_is_relu() -> None:
    layer = ReLUDropout(0.5)
    x = torch.randn(64, 33)
    torch.manual_seed(3)
    a = layer(x)
    torch.manual_seed(3)
    b = layer(x)
    c = layer(x)
    torch.testing.assert_close(a, b)
    assert not torch.equal(b, c)
    layer.eval()
    torch.testing.assert_close(layer(x), torch.relu(x))
    assert torch.equal(ReLUDropout(0.0).train()(x), torch.relu(x))


def test_same_mask_for_any_thread_count() -> None:
    x = torch.randn(1000, 300)
    before = torch.get_num_threads()
    try:
        torch.set_num_threads(1)
        one = relu_dropout(x, 0.5, True, key=99)
        torch.set_num_threads(2)
        two = relu_dropout(x, 0.5, True, key=99)
    finally:
        torch.set_num_threads(before)
    assert torch.equal(one, two)


@pytest.mark.parametrize("p", [0.0, 0.4])
@pytest.mark.parametrize("layout", ["contiguous", "transposed"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.float16])
def test_in_place_equals_out_of_place_with_the_same_key_drawn(p: float, layout: str, dtype: torch.dtype) -> None:
    base = torch.randn(257, 65).to(dtype)
    x = base if layout == "contiguous" else base.t()
    torch.manual_seed(5)
    expected = relu_dropout(x, p, True)
    written = x.clone()
    torch.manual_seed(5)
    result = relu_dropout_(written, p, True)
    assert result is written  # written in place
    assert torch.equal(written, expected)
    after_in_place = torch.rand(3)  # both drew the same number of values from torch's generator
    torch.manual_seed(5)
    relu_dropout(x, p, True)
    assert torch.equal(after_in_place, torch.rand(3))


def test_gated_activation_writes_its_input_and_autograd_checks_readers() -> None:
    torch.manual_seed(0)
    weight = torch.randn(16, 8, requires_grad=True)
    x = torch.randn(40, 8)
    out = x @ weight.t()  # mm saves its inputs, not its output: the output may be overwritten
    activated, scale = relu_dropout_gated(out, 0.0, True)
    assert activated.data_ptr() == out.data_ptr() and scale == 1.0
    assert torch.equal(activated, torch.relu(x @ weight.detach().t()))
    activated.sum().backward()  # the gate's backward is the identity: d(sum)/d(weight) = ones^T x
    torch.testing.assert_close(weight.grad, torch.ones(40, 16).t() @ x)
    # an output that its producer's backward reads cannot be overwritten unnoticed
    source = torch.randn(40, 8, requires_grad=True)
    exp = source.exp()  # exp saves its output for its backward
    activated, _ = relu_dropout_gated(exp, 0.0, True)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        activated.sum().backward()
