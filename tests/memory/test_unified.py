"""UnifiedTensor's registration bookkeeping: shared exact ranges, refused overlaps, release on close and GC."""

from __future__ import annotations

import gc

import numpy as np
import pytest
import torch

from graphtier.errors import OptionError
from graphtier.memory.features.unified import (
    PAGE_BYTES,
    REGISTRY,
    UnifiedTensor,
    page_aligned_empty,
)

CHUNK = 4 * PAGE_BYTES


class FakeRegistrar:
    """Records register/unregister calls the way the CUDA driver would see them."""

    def __init__(self, fail_on_call: int | None = None, shifted_chunk: int | None = None) -> None:
        self.live: dict[int, int] = {}
        self.calls: list[tuple[str, int]] = []
        self.sizes: list[tuple[int, int]] = []
        self.fail_on_call = fail_on_call
        self.shifted_chunk = shifted_chunk  # this registration (1-based) gets a device address != host address

    def register(self, address: int, nbytes: int) -> None:
        assert address not in self.live, "the driver would refuse a second registration"
        for other, size in self.live.items():
            assert address + nbytes <= other or other + size <= address, "the driver would refuse an overlap"
        if self.fail_on_call is not None and len(self.sizes) + 1 == self.fail_on_call:
            raise OptionError(f"cudaHostRegister of {nbytes} bytes at {address:#x} failed (fake)")
        self.sizes.append((address, nbytes))
        self.live[address] = nbytes
        self.calls.append(("register", address))

    def unregister(self, address: int) -> None:
        assert address in self.live
        del self.live[address]
        self.calls.append(("unregister", address))

    def device_pointer(self, address: int) -> int:
        assert address in self.live, "the driver answers only for registered memory"
        shifted = self.shifted_chunk is not None and [a for a, _ in self.sizes].index(address) + 1 == self.shifted_chunk
        return address + PAGE_BYTES if shifted else address

    def is_pinned(self, tensor: torch.Tensor) -> bool:
        """As CUDA answers ``Tensor.is_pinned``: True for any address inside a registered range."""
        address = tensor.data_ptr()
        return any(start <= address < start + size for start, size in self.live.items())


class FakeEvent:
    """A CUDA event that logs record and synchronize into a shared call list."""

    def __init__(self, calls: list[tuple[str, int]]) -> None:
        self.calls = calls

    def record(self, stream: object) -> None:
        self.calls.append(("record", id(self)))

    def synchronize(self) -> None:
        self.calls.append(("synchronize", id(self)))


@pytest.fixture
def cuda_driver(monkeypatch: pytest.MonkeyPatch) -> FakeRegistrar:
    """A fake registrar, with torch answering as on a CUDA machine: is_available, is_pinned, events."""
    fake = FakeRegistrar()
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.Tensor, "is_pinned", lambda tensor, *args: fake.is_pinned(tensor))
    monkeypatch.setattr(torch.cuda, "Event", lambda *args, **kwargs: FakeEvent(fake.calls))  # type: ignore[arg-type]
    return fake


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


def test_from_rows_registers_graphtier_memory_in_place_and_copies_heap_and_memmaps(tmp_path: object) -> None:
    fake = FakeRegistrar()
    table = np.arange(60, dtype=np.float32).reshape(20, 3)
    aligned = page_aligned_empty(20, 3, torch.float32).numpy()
    aligned[:] = table
    in_place = UnifiedTensor.from_rows(aligned, 5, 15, registrar=fake)
    assert in_place.tensor.data_ptr() == aligned[5:].ctypes.data  # graphtier's own memory: registered in place
    in_place.close()
    heap = UnifiedTensor.from_rows(table, 5, 15, registrar=fake)  # a heap array shares its pages: copied
    assert heap.tensor.data_ptr() != table[5:].ctypes.data and heap.tensor.data_ptr() % PAGE_BYTES == 0
    assert list(fake.live) == [heap.tensor.data_ptr()]
    np.testing.assert_array_equal(heap.tensor.numpy(), table[5:15])
    heap.close()
    path = f"{tmp_path}/t.npy"
    np.save(path, table)
    for mode in ("r", "r+"):  # file-backed, even when writeable: copied
        mapped = np.load(path, mmap_mode=mode)
        copied = UnifiedTensor.from_rows(mapped, 5, 15, registrar=fake, chunk_rows=3)
        assert copied.tensor.data_ptr() % PAGE_BYTES == 0 and copied.tensor.data_ptr() != mapped[5:].ctypes.data
        np.testing.assert_array_equal(copied.tensor.numpy(), table[5:15])
        copied.close()
    assert fake.live == {}


def test_a_tensor_graphtier_did_not_allocate_is_copied_before_registration() -> None:
    fake = FakeRegistrar()
    storage = torch.arange(3000, dtype=torch.float32)
    unaligned = storage[3:2003]  # heap memory, not on a page boundary
    with UnifiedTensor(unaligned, registrar=fake) as unified:
        assert unified.tensor.data_ptr() != unaligned.data_ptr() and list(fake.live) == [unified.tensor.data_ptr()]
        assert torch.equal(unified.tensor, unaligned)
    assert fake.live == {}


def test_part_of_registered_memory_is_pinned_to_cuda_yet_shares_the_registration(cuda_driver: FakeRegistrar) -> None:
    fake = cuda_driver
    tensor = page_aligned_empty(2 * PAGE_BYTES // 4, 1, torch.float32)
    whole = UnifiedTensor(tensor, registrar=fake)
    assert tensor[1:].is_pinned() and tensor[PAGE_BYTES // 4 :].is_pinned()  # as the driver answers
    with pytest.raises(OptionError, match="overlaps"):
        UnifiedTensor(tensor[PAGE_BYTES // 4 :], registrar=fake)
    same_pages = UnifiedTensor(tensor[1:], registrar=fake)
    assert same_pages.registered and same_pages.tensor.data_ptr() == tensor[1:].data_ptr()
    whole.close()
    assert fake.live == {tensor.data_ptr(): tensor.numel() * 4}  # still read through `same_pages`
    same_pages.close()
    assert fake.live == {}


def test_torch_pinned_memory_outside_the_registry_is_used_as_is(
    cuda_driver: FakeRegistrar, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(torch.Tensor, "is_pinned", lambda tensor, *args: True)  # as for torch's pinned allocations
    tensor = torch.arange(100, dtype=torch.float32)
    with UnifiedTensor(tensor, registrar=cuda_driver) as unified:
        assert unified.tensor is tensor and not unified.registered and cuda_driver.calls == []


def test_unregister_waits_for_the_recorded_reads(cuda_driver: FakeRegistrar) -> None:
    fake = cuda_driver
    unified = UnifiedTensor(page_aligned_empty(8, 2, torch.float32), registrar=fake)
    address = unified.tensor.data_ptr()
    unified.record_use("stream-a")
    unified.record_use("stream-b")
    unified.record_use("stream-a")  # replaces the first event of stream-a
    unified.close()
    kinds = [kind for kind, _ in fake.calls]
    assert kinds == ["register", "record", "record", "record", "synchronize", "synchronize", "unregister"]
    synchronized = {token for kind, token in fake.calls if kind == "synchronize"}
    assert synchronized == {fake.calls[2][1], fake.calls[3][1]} and fake.calls[-1] == ("unregister", address)
    fake.calls.clear()
    collected = UnifiedTensor(page_aligned_empty(8, 2, torch.float32), registrar=fake)
    collected.record_use("stream-a")
    del collected
    gc.collect()
    assert [kind for kind, _ in fake.calls] == ["register", "record", "synchronize", "unregister"]


def test_a_chunk_seen_at_another_device_address_is_refused_and_unregistered() -> None:
    fake = FakeRegistrar(shifted_chunk=2)
    tensor = page_aligned_empty(3 * CHUNK // 4, None, torch.float32)
    with pytest.raises(OptionError, match="device address .* expected the host address"):
        UnifiedTensor(tensor, registrar=fake, chunk_bytes=CHUNK)
    assert fake.live == {} and [c for c, _ in fake.calls] == ["register", "register", "unregister", "unregister"]
    assert not REGISTRY.is_registered(tensor.data_ptr())


def test_page_aligned_tensors_never_share_a_page() -> None:
    a = page_aligned_empty(3, 5, torch.float32)
    b = page_aligned_empty(3, 5, torch.float32)
    assert a.shape == (3, 5) and a.data_ptr() % PAGE_BYTES == 0 and b.data_ptr() % PAGE_BYTES == 0
    assert a.data_ptr() // PAGE_BYTES != b.data_ptr() // PAGE_BYTES


def test_large_tensor_is_registered_in_page_aligned_disjoint_covering_chunks() -> None:
    fake = FakeRegistrar()
    tensor = page_aligned_empty(int(3.5 * CHUNK) // 4, None, torch.float32)  # 3.5 chunks
    unified = UnifiedTensor(tensor, registrar=fake, chunk_bytes=CHUNK)
    assert len(fake.sizes) == 4 and unified.num_chunks == 4
    starts = [address for address, _ in fake.sizes]
    assert starts[0] == tensor.data_ptr() and all(a % PAGE_BYTES == 0 for a in starts)
    assert [n for _, n in fake.sizes] == [CHUNK, CHUNK, CHUNK, CHUNK // 2]
    for (address, nbytes), (following, _) in zip(fake.sizes, fake.sizes[1:]):
        assert address + nbytes == following  # disjoint and without gaps
    assert starts[-1] + fake.sizes[-1][1] == tensor.data_ptr() + unified.nbytes
    unified.close()
    assert fake.live == {} and [c for c, _ in fake.calls].count("unregister") == 4 and unified.num_chunks == 0


def test_chunks_of_an_unaligned_tensor_end_on_page_boundaries() -> None:
    fake = FakeRegistrar()
    storage = page_aligned_empty(3 * CHUNK // 4, None, torch.float32)
    view = storage[5 : 5 + (2 * CHUNK) // 4]  # starts 20 bytes into a page
    with UnifiedTensor(view, registrar=fake, chunk_bytes=CHUNK):
        (first, first_bytes), *rest = fake.sizes
        assert first == view.data_ptr() and (first + first_bytes) % PAGE_BYTES == 0
        assert all(address % PAGE_BYTES == 0 for address, _ in rest)
        assert sum(n for _, n in fake.sizes) == view.numel() * 4
    assert fake.live == {}


def test_chunked_registration_is_shared_and_partial_overlaps_refused() -> None:
    fake = FakeRegistrar()
    tensor = page_aligned_empty(3 * CHUNK // 4, None, torch.float32)
    first = UnifiedTensor(tensor, registrar=fake, chunk_bytes=CHUNK)
    second = UnifiedTensor(tensor, registrar=fake, chunk_bytes=CHUNK)
    assert len(fake.sizes) == 3  # the second shares every chunk
    with pytest.raises(OptionError, match="overlaps"):
        UnifiedTensor(tensor[PAGE_BYTES // 4 :], registrar=fake, chunk_bytes=CHUNK)  # chunks shifted by a page
    assert len(fake.sizes) == 3 and len(fake.live) == 3
    first.close()
    assert len(fake.live) == 3
    second.close()
    assert fake.live == {}


def test_a_failing_chunk_unregisters_the_chunks_before_it() -> None:
    fake = FakeRegistrar(fail_on_call=3)
    tensor = page_aligned_empty(4 * CHUNK // 4, None, torch.float32)
    with pytest.raises(OptionError, match="failed"):
        UnifiedTensor(tensor, registrar=fake, chunk_bytes=CHUNK)
    assert fake.live == {} and [c for c, _ in fake.calls] == ["register", "register", "unregister", "unregister"]
    assert not REGISTRY.is_registered(tensor.data_ptr())
    fake.fail_on_call = None
    with UnifiedTensor(tensor, registrar=fake, chunk_bytes=CHUNK) as unified:  # nothing left behind to clash with
        assert unified.num_chunks == 4
    assert fake.live == {}


def test_from_rows_of_a_one_dimensional_memmap(tmp_path: object) -> None:
    fake = FakeRegistrar()
    values = np.arange(5000, dtype=np.int32)
    path = f"{tmp_path}/v.npy"
    np.save(path, values)
    mapped = np.load(path, mmap_mode="r")
    with UnifiedTensor.from_rows(mapped, 100, 4100, registrar=fake, chunk_rows=777, chunk_bytes=PAGE_BYTES) as part:
        assert part.tensor.shape == (4000,) and part.tensor.dtype == torch.int32
        np.testing.assert_array_equal(part.tensor.numpy(), values[100:4100])
        assert part.num_chunks == -(-4000 * 4 // PAGE_BYTES)
    assert fake.live == {}


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


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_real_chunked_registration_is_readable_by_the_device() -> None:
    tensor = page_aligned_empty(10 * PAGE_BYTES // 4 + 7, None, torch.float32)
    tensor.copy_(torch.randn(tensor.shape[0]))
    with UnifiedTensor(tensor, chunk_bytes=3 * PAGE_BYTES) as unified:
        assert unified.num_chunks == 4
        device = torch.device("cuda", torch.cuda.current_device())
        ids = torch.randint(0, tensor.shape[0], (1000,), device=device)
        from graphtier.memory.features import _triton_kernels as compiled

        out = torch.empty((1000, 1), device=device)
        compiled.gather_rows_triton(unified.tensor.view(-1, 1), ids, out)
        assert torch.equal(out.view(-1).cpu(), tensor[ids.cpu()])
    assert not REGISTRY.is_registered(tensor.data_ptr())
