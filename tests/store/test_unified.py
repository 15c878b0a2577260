"""UnifiedTensor's registration bookkeeping: shared exact ranges, refused overlaps, release on close and GC."""

from __future__ import annotations

import gc

import numpy as np
import pytest
import torch

from graphtier.errors import OptionError
from graphtier.store.unified import PAGE_BYTES, REGISTRY, UnifiedTensor, page_aligned_empty


class FakeRegistrar:
    """Records register/unregister calls the way the CUDA driver would see them."""

    def __init__(self) -> None:
        self.live: dict[int, int] = {}
        self.calls: list[tuple[str, int]] = []

    def register(self, address: int, nbytes: int) -> None:
        assert address not in self.live, "the driver would refuse a second registration"
        self.live[address] = nbytes
        self.calls.append(("register", address))

    def unregister(self, address: int) -> None:
        assert address in self.live
        del self.live[address]
        self.calls.append(("unregister", address))


def test_register_close_is_idempotent() -> None:
    fake = FakeRegistrar()
    tensor = page_aligned_empty(10, 3, torch.float32)
    unified = UnifiedTensor(tensor, registrar=fake)
    assert unified.registered and fake.live == {tensor.data_ptr(): 120}
    assert REGISTRY.is_registered(tensor.data_ptr())
    unified.close()
    unified.close()
    assert not unified.registered and fake.live == {} and len(fake.calls) == 2
    assert unified.tensor.numel() == 0


def test_same_range_is_shared_until_the_last_close() -> None:
    fake = FakeRegistrar()
    tensor = page_aligned_empty(4, 4, torch.float16)
    first = UnifiedTensor(tensor, registrar=fake)
    second = UnifiedTensor(tensor, registrar=fake)
    assert len(fake.calls) == 1
    first.close()
    assert fake.live  # still used by `second`
    second.close()
    assert fake.live == {}


def test_partial_overlap_is_refused() -> None:
    fake = FakeRegistrar()
    tensor = page_aligned_empty(2 * PAGE_BYTES // 4, 1, torch.float32)
    whole = UnifiedTensor(tensor, registrar=fake)
    second_page = tensor[PAGE_BYTES // 4 :]
    with pytest.raises(OptionError, match="overlaps"):
        UnifiedTensor(second_page, registrar=fake)
    same_pages = UnifiedTensor(tensor[1:], registrar=fake)  # inside the registered pages: shared
    assert len(fake.calls) == 1
    whole.close()
    same_pages.close()
    part = UnifiedTensor(second_page, registrar=fake)  # fine once the other range is gone
    part.close()
    assert fake.live == {} and len(fake.calls) == 4


def test_garbage_collection_unregisters_and_memory_outlives_registration() -> None:
    fake = FakeRegistrar()
    unified = UnifiedTensor(page_aligned_empty(8, 2, torch.float32), registrar=fake)
    address = unified.tensor.data_ptr()
    del unified
    gc.collect()
    assert fake.calls == [("register", address), ("unregister", address)]


def test_rejects_non_cpu_or_strided_and_skips_empty() -> None:
    fake = FakeRegistrar()
    with pytest.raises(OptionError, match="contiguous"):
        UnifiedTensor(torch.zeros(4, 4).t(), registrar=fake)
    empty = UnifiedTensor(torch.zeros(0, 4), registrar=fake)
    assert not empty.registered and fake.calls == []


def test_from_rows_copies_memmaps_and_shares_ram(tmp_path: object) -> None:
    fake = FakeRegistrar()
    table = np.arange(60, dtype=np.float32).reshape(20, 3)
    in_ram = UnifiedTensor.from_rows(table, 5, 15, registrar=fake)
    assert in_ram.tensor.data_ptr() == table[5:].ctypes.data  # registered in place
    np.testing.assert_array_equal(in_ram.tensor.numpy(), table[5:15])
    in_ram.close()
    path = f"{tmp_path}/t.npy"
    np.save(path, table)
    mapped = np.load(path, mmap_mode="r")
    copied = UnifiedTensor.from_rows(mapped, 5, 15, registrar=fake, chunk_rows=3)
    assert copied.tensor.data_ptr() % PAGE_BYTES == 0
    np.testing.assert_array_equal(copied.tensor.numpy(), table[5:15])
    copied.close()
    assert fake.live == {}


def test_page_aligned_tensors_never_share_a_page() -> None:
    a = page_aligned_empty(3, 5, torch.float32)
    b = page_aligned_empty(3, 5, torch.float32)
    assert a.shape == (3, 5) and a.data_ptr() % PAGE_BYTES == 0 and b.data_ptr() % PAGE_BYTES == 0
    assert a.data_ptr() // PAGE_BYTES != b.data_ptr() // PAGE_BYTES


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_real_registration_round_trip() -> None:
    tensor = page_aligned_empty(256, 64, torch.float32)  # 16 pages of 4 KiB
    tensor.copy_(torch.randn(256, 64))
    with UnifiedTensor(tensor) as unified:
        assert unified.registered
        with pytest.raises(OptionError, match="overlaps"):
            UnifiedTensor(tensor[tensor.shape[0] // 2 :])
    assert not REGISTRY.is_registered(tensor.data_ptr())
