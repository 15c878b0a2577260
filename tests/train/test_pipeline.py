"""The background producer: order, error propagation, and clean shutdown without hanging."""

from __future__ import annotations

import signal
import threading
import time
from collections.abc import Iterator

import numpy as np
import pytest
import torch

from graphtier.sampling import MiniBatch
from graphtier.train.dist.comm import ScheduleCancelled, ShareSchedule
from graphtier.train.loop.pipeline import BatchProducer


def _fake_sample(seeds: np.ndarray, batch_id: int) -> MiniBatch:
    ids = torch.from_numpy(np.asarray(seeds, dtype=np.int64))
    return MiniBatch(n_id=ids, blocks=[], seed_index=torch.arange(ids.shape[0]), seeds=ids)


def _labels_of(table: np.ndarray):
    """``targets(seeds, batch)``: the seeds' labels from ``table`` (what the node task gives the producer)."""
    return lambda seeds, batch: torch.from_numpy(table[seeds])


def _gather(ids: torch.Tensor) -> torch.Tensor:
    return ids.float().unsqueeze(1)


def test_batches_arrive_in_order_with_labels() -> None:
    labels = np.arange(100, dtype=np.int64) * 2
    batches = [np.array([i, i + 1]) for i in range(0, 20, 2)]
    got = list(
        BatchProducer(
            batches,
            _fake_sample,
            _gather,
            _labels_of(labels),
            depth=2,
            feature_bytes=lambda n_id: 4 * int(n_id.shape[0]),
        )
    )
    assert [b.batch.seeds.tolist() for b in got] == [b.tolist() for b in batches]
    assert got[3].y.tolist() == [12, 14] and got[0].feature_bytes == 8


def test_producer_error_is_raised_in_consumer() -> None:
    def failing(seeds: np.ndarray, batch_id: int) -> MiniBatch:
        if batch_id == 2:
            raise ValueError("sampler exploded")
        return _fake_sample(seeds, batch_id)

    producer = BatchProducer([np.array([i]) for i in range(5)], failing, _gather, _labels_of(np.zeros(10, np.int64)))
    with pytest.raises(ValueError, match="sampler exploded"):
        list(producer)


def test_consumer_stopping_early_does_not_hang() -> None:
    before = threading.active_count()
    producer = BatchProducer(
        [np.array([i]) for i in range(1000)], _fake_sample, _gather, _labels_of(np.zeros(1000, np.int64)), depth=1
    )
    for index, _ in enumerate(producer):
        if index == 3:
            break
    producer.close()
    deadline = time.time() + 5
    while threading.active_count() > before and time.time() < deadline:
        time.sleep(0.01)
    assert threading.active_count() == before


def test_keyboard_interrupt_in_consumer_stops_producer() -> None:
    producer = BatchProducer(
        [np.array([i]) for i in range(1000)], _fake_sample, _gather, _labels_of(np.zeros(1000, np.int64)), depth=1
    )
    with pytest.raises(KeyboardInterrupt):
        for _ in producer:
            raise KeyboardInterrupt
    assert producer.close(timeout=5)  # leaving the loop asked the thread to stop; close() waits for it
    assert not producer._thread.is_alive()


class _Interrupted(Exception):
    pass


def test_interrupt_while_the_producer_waits_for_shares_does_not_hang() -> None:
    """The distributed epoch's pattern: the producer waits in ShareSchedule.shares_for for a window that
    the training loop never publishes, because an interrupt (here SIGALRM, in the consumer's queue wait)
    stops the loop; its ``finally`` cancels the schedule, then closes the producer. Leaving the iteration
    must not join the producer before that cancel (it waited forever); a second alarm 3 s later ends a hang."""
    schedule = ShareSchedule(np.array([0.5, 0.5]))

    def seed_batches() -> Iterator[np.ndarray]:
        yield np.array([0])
        schedule.shares_for(1)  # never published
        yield np.array([1])

    alarms: list[float] = []

    def on_alarm(signum: int, frame: object) -> None:
        alarms.append(time.monotonic())
        if len(alarms) == 1:
            signal.setitimer(signal.ITIMER_REAL, 3.0)
            raise _Interrupted
        raise TimeoutError("leaving the iteration hangs on a producer blocked in shares_for")

    previous = signal.signal(signal.SIGALRM, on_alarm)
    producer = BatchProducer(seed_batches(), _fake_sample, _gather, _labels_of(np.zeros(4, np.int64)), depth=2)
    try:
        signal.setitimer(signal.ITIMER_REAL, 0.3)
        with pytest.raises(_Interrupted):
            try:
                for _ in producer:
                    pass
            finally:
                schedule.cancel()
                assert producer.close()
        assert time.monotonic() - alarms[0] < 1.0
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
        schedule.cancel()
        producer.close()
    with pytest.raises(ScheduleCancelled):
        schedule.shares_for(1)


def test_depth_zero_prepares_batches_inline() -> None:
    before = threading.active_count()
    labels = np.arange(10, dtype=np.int64)
    producer = BatchProducer([np.array([i]) for i in range(4)], _fake_sample, _gather, _labels_of(labels), depth=0)
    assert threading.active_count() == before  # no background thread
    assert [item.y.tolist() for item in producer] == [[0], [1], [2], [3]]
    producer.close()


@pytest.mark.parametrize("transpose", [False, True])
def test_producer_builds_block_csr_off_the_training_loop(transpose: bool) -> None:
    from graphtier.dataset.csc import edges_to_csc
    from graphtier.sampling import NeighborSampler
    from graphtier.train.nn.aggregate import block_csr

    rng = np.random.default_rng(0)
    indptr, indices = edges_to_csc(rng.integers(0, 50, 300), rng.integers(0, 50, 300), 50, dedup=True)
    sampler = NeighborSampler(indptr, indices, [3, 2], seed=0)
    producer = BatchProducer(
        [np.array([1, 2, 3]), np.array([4, 5])],
        sampler.sample,
        _gather,
        _labels_of(np.zeros(50, np.int64)),
        block_csr=True,
        block_transpose=transpose,
    )
    for item in producer:
        for index, blk in enumerate(item.batch.blocks):
            csr = blk._graphtier_csr  # built by the producer, reused by the model
            assert block_csr(blk) is csr
            assert (csr._transposed is not None) == (transpose and index > 0)
