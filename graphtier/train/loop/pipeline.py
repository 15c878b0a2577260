"""A background producer that samples and gathers the next mini-batches while the model trains.

The producer thread runs the sampler and the feature gather (both release the GIL) and puts the
prepared batches in a bounded queue; the training loop takes them out. Errors in the producer are
re-raised in the consumer. Leaving the iteration (normal end, an exception, Ctrl-C) asks the thread to
stop; the owner then calls :meth:`BatchProducer.close`, which waits for it a bounded time, after releasing
any wait of the producer that it owns (``ShareSchedule.cancel``).
"""

from __future__ import annotations

import queue
import threading
import time
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Iterator

import numba
import numpy as np
import torch

from graphtier.sampling import MiniBatch
from graphtier.sampling.typed_batch import TypedMiniBatch
from graphtier.train.nn.aggregate import FirstLayerInput, block_csr, prepare_typed_csrs


@dataclass
class PreparedBatch:
    """A sampled mini-batch with its gathered inputs (all on the CPU).

    Attributes:
        batch: the sampled mini-batch (a :class:`TypedMiniBatch` on a typed dataset).
        x: [len(batch.n_id), D] features of ``batch.n_id`` (the feature table's dtype); on a typed dataset
            ``{type: [len(batch.n_id[type]), D_type]}`` for every featured type; a GraphSAGE first layer's
            inputs read straight from the table: a :class:`~graphtier.train.nn.aggregate.FirstLayerInput`.
        feature_bytes: bytes of feature rows gathered (summed over the types).
        y: the batch's targets: int64 [B] labels of the seeds (node task), float32 [M] pair labels (link task).
        sample_seconds, extract_seconds: time the producer spent sampling and gathering.
    """

    batch: MiniBatch | TypedMiniBatch
    x: torch.Tensor | dict[str, torch.Tensor] | FirstLayerInput
    y: torch.Tensor
    sample_seconds: float
    extract_seconds: float
    feature_bytes: int


class _Failure:
    def __init__(self, error: BaseException) -> None:
        self.error = error


_DONE = object()
CLOSE_TIMEOUT = 2.0  # seconds close() waits for the producer thread: an interrupt must end the run in 5 s


class BatchProducer:
    """Iterate over prepared batches produced by a background thread.

    Args:
        seed_batches: the seed node ids of each mini-batch, in order.
        sample: ``sample(seeds, batch_id) -> MiniBatch`` (or :class:`TypedMiniBatch`).
        gather: ``gather(n_id) -> features`` [len(n_id), D] CPU tensor (typed: a dict per node type).
        targets: ``targets(seeds, batch) -> tensor``: the batch's targets (the task's,
            :meth:`graphtier.train.loop.task.Task.targets`: the seeds' labels, or a link batch's pair labels).
        first_batch_id: batch id of ``seed_batches[0]`` (batch ids make sampling reproducible).
        depth: queue bound: how many prepared batches may wait; 0 prepares each batch in the consumer's
            thread when it is needed (no background thread, no overlap).
        feature_bytes: ``feature_bytes(n_id) -> int``, the bytes ``gather`` reads (for the byte counter;
            :meth:`GraphStore.feature_bytes`); None counts nothing.
        num_threads: numba threads of the producer thread (numba's setting is per thread).
        block_csr: also build each block's CSR in the producer, off the training loop
            (:mod:`graphtier.train.nn.aggregate`; for models that run on the CPU); the time counts as sampling.
        block_transpose: with ``block_csr``, also the transposed CSR of the blocks whose input needs
            a gradient (every block but the input layer's): for training, not for evaluation.
        inputs: ``inputs(batch) -> model input or None``: the batch's model input other than its gathered rows
            (the first layer's :class:`~graphtier.train.nn.aggregate.FirstLayerInput`); None from it, or no
            ``inputs``, gathers ``batch.n_id``. Its time counts as gathering.
    """

    def __init__(
        self,
        seed_batches: Iterable[np.ndarray],
        sample: Callable[[np.ndarray, int], Any],
        gather: Callable[[Any], Any],
        targets: Callable[[np.ndarray, Any], torch.Tensor],
        *,
        first_batch_id: int = 0,
        depth: int = 4,
        feature_bytes: Callable[[Any], int] | None = None,
        num_threads: int | None = None,
        block_csr: bool = False,
        block_transpose: bool = False,
        inputs: Callable[[Any], Any] | None = None,
    ) -> None:
        self._inputs = inputs
        self._seed_batches = seed_batches
        self._targets = targets
        self._block_csr = block_csr
        self._block_transpose = block_transpose
        self._sample = sample
        self._gather = gather
        self._first_batch_id = first_batch_id
        self._feature_bytes = feature_bytes
        self._num_threads = num_threads
        self._queue: queue.Queue[object] = queue.Queue(maxsize=max(1, depth))
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        if depth > 0:
            self._thread = threading.Thread(target=self._run, name="graphtier-producer", daemon=True)
            self._thread.start()

    def _put(self, item: object) -> bool:
        while not self._stop.is_set():
            try:
                self._queue.put(item, timeout=0.1)
                return True
            except queue.Full:
                continue
        return False

    def _prepare(self, offset: int, seeds: np.ndarray) -> PreparedBatch:
        start = time.perf_counter()
        batch = self._sample(seeds, self._first_batch_id + offset)
        if self._block_csr and isinstance(batch, TypedMiniBatch):
            prepare_typed_csrs(batch, transpose=self._block_transpose)
        elif self._block_csr:
            for index, blk in enumerate(batch.blocks):
                csr = block_csr(blk)
                if self._block_transpose and index > 0:  # the input features need no gradient
                    csr.transposed()
        sampled = time.perf_counter()
        x = self._inputs(batch) if self._inputs is not None else None
        if x is None:
            x = self._gather(batch.n_id)
        y = self._targets(np.asarray(seeds), batch)
        done = time.perf_counter()
        return PreparedBatch(
            batch=batch,
            x=x,
            y=y,
            sample_seconds=sampled - start,
            extract_seconds=done - sampled,
            feature_bytes=self._feature_bytes(batch.n_id) if self._feature_bytes is not None else 0,
        )

    def _run(self) -> None:
        try:
            if self._num_threads is not None:
                numba.set_num_threads(min(self._num_threads, numba.config.NUMBA_NUM_THREADS))
            for offset, seeds in enumerate(self._seed_batches):
                if self._stop.is_set():
                    return
                if not self._put(self._prepare(offset, seeds)):
                    return
            self._put(_DONE)
        except BaseException as error:  # forwarded to the consumer, which re-raises it
            self._put(_Failure(error))

    def __iter__(self) -> Iterator[PreparedBatch]:
        if self._thread is None:  # depth 0: prepare each batch in the consumer's thread, no overlap
            for offset, seeds in enumerate(self._seed_batches):
                yield self._prepare(offset, seeds)
            return
        try:
            while True:
                item = self._queue.get()
                if item is _DONE:
                    return
                if isinstance(item, _Failure):
                    raise item.error
                assert isinstance(item, PreparedBatch)
                yield item
        finally:
            # only ask the thread to stop: it may wait for something that the owner releases after this
            # (the next window's shares), so the owner's close() joins it, after releasing that wait
            self._stop.set()
            self._drain()

    def _drain(self) -> None:
        try:
            while True:
                self._queue.get_nowait()
        except queue.Empty:
            pass

    def close(self, timeout: float = CLOSE_TIMEOUT) -> bool:
        """Stop the producer thread and wait for it at most ``timeout`` seconds (idempotent, never hangs).

        Release first whatever the producer may wait for outside this class (``ShareSchedule.cancel``).
        Returns True when the thread has ended; a thread still busy in a kernel after ``timeout`` is left
        to finish on its own (a daemon thread: it does not keep the process alive).
        """
        self._stop.set()
        deadline = time.monotonic() + timeout
        while self._thread is not None and self._thread.is_alive() and time.monotonic() < deadline:
            self._drain()
            self._thread.join(timeout=0.05)
        return self._thread is None or not self._thread.is_alive()
