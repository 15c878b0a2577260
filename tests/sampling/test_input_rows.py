"""The input rows of a temporal batch (the last hop's sources numbered by node): both kernels and the device twin equal
the plain-Python reference on random rows, with nodes known at several bounds."""

from __future__ import annotations

import numpy as np
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from graphtier.sampling.device.device_hops import first_seen_inputs
from graphtier.sampling.neighbor._neighbor_kernels import relabel, reset_local_ids
from graphtier.sampling.temporal._input_rows_kernels import (
    first_rows,
    new_row_bounds,
    relabel_inputs_hashed,
    relabel_inputs_py,
)


@settings(max_examples=80, deadline=None)
@given(seed=st.integers(0, 2**31), nodes=st.integers(1, 40), known=st.integers(0, 30), s=st.integers(0, 60))
def test_every_kernel_equals_the_reference(seed: int, nodes: int, known: int, s: int) -> None:
    rng = np.random.default_rng(seed)
    known_node = rng.integers(0, nodes, known).astype(np.int64)  # a node may be known at several bounds
    known_bound = rng.integers(0, 5, known).astype(np.int64)
    node = rng.integers(0, nodes, s).astype(np.int64)
    bound = rng.integers(0, 5, s).astype(np.int64)
    rows, pairs = relabel_inputs_py(node, bound, list(zip(known_node.tolist(), known_bound.tolist())))
    expected_node = np.array([p[0] for p in pairs], np.int64)
    expected_bound = np.array([p[1] for p in pairs], np.int64)

    keys_node, keys_bound = np.empty(known + s, np.int64), np.empty(known + s, np.int64)
    keys_node[:known], keys_bound[:known] = known_node, known_bound
    local_id = np.full(nodes, -1, np.int64)
    sources = node.copy()
    first_rows(local_id, keys_node, np.int64(known))
    count = relabel(sources, local_id, keys_node, np.int64(known))
    new_row_bounds(sources, bound, keys_bound, np.int64(known))
    reset_local_ids(local_id, keys_node, 0, count)
    assert np.all(local_id == -1)  # the scratch is left as found
    np.testing.assert_array_equal(sources, rows)
    np.testing.assert_array_equal(keys_node[:count], expected_node)
    np.testing.assert_array_equal(keys_bound[:count], expected_bound)

    size = 16
    while size < 2 * (known + s):
        size *= 2
    table = np.full((size, 2), 7, np.int64)  # any content: the kernel clears it
    keys_node[known:], keys_bound[known:] = -1, -1
    local = np.empty(s, np.int64)
    count = relabel_inputs_hashed(node, bound, table, keys_node, keys_bound, np.int64(known), local)
    np.testing.assert_array_equal(local, rows)
    np.testing.assert_array_equal(keys_node[:count], expected_node)
    np.testing.assert_array_equal(keys_bound[:count], expected_bound)

    as_tensor = torch.from_numpy
    got_node, got_bound, got_local = first_seen_inputs(
        (as_tensor(known_node), as_tensor(known_bound)), (as_tensor(node), as_tensor(bound))
    )
    np.testing.assert_array_equal(got_local.numpy(), rows)
    np.testing.assert_array_equal(got_node.numpy(), expected_node)
    np.testing.assert_array_equal(got_bound.numpy(), expected_bound)
