"""Which torchrun ranks are still alive: a heartbeat per rank in the rendezvous store, watched by every rank.

Under ``torchrun`` a rank on another machine can vanish at any moment (its process killed, its machine
powered off, its network gone). A collective with a peer whose process died fails at once (the peer's
sockets were closed), but a machine that drops off the network leaves the collective waiting for the
process group's timeout. So every rank runs a :class:`Heartbeat`: a daemon thread that adds 1 to the rank's
counter in the rendezvous store (``MASTER_ADDR:MASTER_PORT``, through a connection of its own) every
:data:`BEAT_SECONDS` and reads every other rank's counter. A rank whose counter has not moved for
``GRAPHTIER_LOST_RANK_SECONDS`` (default :data:`LOST_RANK_SECONDS`), or every rank when the store itself
stops answering that long (the store lives on the machine of rank 0), is lost: the thread prints one
``graphtier: error:`` line and ends the process (the main thread may be blocked in a collective that
nothing can interrupt). The heartbeat does not depend on what the main thread does, so rank 0 writing a
checkpoint or evaluating while the others wait is no silence. A rank that finished its training says so
in the store, and its silence afterwards is no loss.

When a collective fails in the main thread, :meth:`Heartbeat.lost_ranks` tells which ranks stopped
beating (it waits :data:`CONFIRM_SECONDS` for a sign of life first).
"""

from __future__ import annotations

import os
import sys
import threading
import time
from collections.abc import Callable
from datetime import timedelta

import torch.distributed as dist

from graphtier.errors import error_line
from graphtier.train.dist.torchrun import rendezvous_store

BEAT_SECONDS = 1.0
LOST_RANK_SECONDS = 20.0  # silence after which a rank is lost: with the exit, a machine's loss ends a run within 30 s
CONFIRM_SECONDS = 3.0  # after a failed collective: a rank that beats within this is alive
STORE_TIMEOUT_SECONDS = 2.0  # one store operation; a store that stays silent longer counts as silence
EXIT_LOST_RANK = 2  # a lost rank ends every other rank like a user error: one line, exit code 2


def lost_rank_seconds() -> float:
    """``GRAPHTIER_LOST_RANK_SECONDS`` (seconds of silence after which a rank is lost), default 20."""
    return float(os.environ.get("GRAPHTIER_LOST_RANK_SECONDS", LOST_RANK_SECONDS))


def lost_message(lost: list[int], when: str) -> str:
    """One line naming the ``lost`` ranks and ``when`` they were lost (``during epoch 3``)."""
    names = f"rank {lost[0]} was" if len(lost) == 1 else f"ranks {', '.join(map(str, lost))} were"
    return f"{names} lost (its process or machine stopped) {when}; every rank stops"


class Heartbeat:
    """This rank's heartbeat in the store and its watch over the other ranks (see the module's docstring).

    Args:
        rank: this process's global rank.
        world: the number of ranks.
        store_ranks: the ranks on the machine that holds the store (lost when the store stops answering).
        when: returns where the run is (``during epoch 3``), for the message.
        exit_process: ends the process after the message (``os._exit``; tests replace it).
    """

    def __init__(
        self,
        rank: int,
        world: int,
        store_ranks: list[int],
        when: Callable[[], str],
        exit_process: Callable[[int], object] = os._exit,
    ) -> None:
        self.rank, self.world = rank, world
        self.store_ranks = [r for r in store_ranks if r != rank]
        self.when = when
        self.exit_process = exit_process
        self.silence = lost_rank_seconds()
        self._peers = [r for r in range(world) if r != rank]
        now = time.monotonic()
        self._beats: dict[int, int] = dict.fromkeys(self._peers, 0)  # a rank that never beat is never heard
        self._heard: dict[int, float] = dict.fromkeys(self._peers, now)
        self._finished: set[int] = set()
        self._store_heard = now
        self._stop = threading.Event()
        self._reported = threading.Lock()
        self._store: dist.Store | None = None
        self._thread = threading.Thread(target=self._run, name="graphtier-heartbeat", daemon=True)

    def start(self, store: dist.Store | None = None) -> None:
        """Start beating and watching in ``store`` (default: a connection to torchrun's, ``MASTER_ADDR:MASTER_PORT``)."""
        self._store = store if store is not None else rendezvous_store(timedelta(seconds=STORE_TIMEOUT_SECONDS))
        self._thread.start()

    def finish(self) -> None:
        """Tell the other ranks that this rank's training ended (its silence from now on is no loss) and stop."""
        self._stop.set()
        self._thread.join(timeout=STORE_TIMEOUT_SECONDS + BEAT_SECONDS)
        if self._store is not None:
            try:
                self._store.add(f"finished/{self.rank}", 1)
            except RuntimeError:  # the store's machine is gone: nobody is left to tell
                pass

    def stop(self) -> None:
        """Stop the thread without a word (the process ends with an error of its own)."""
        self._stop.set()

    def claim_report(self) -> bool:
        """True the first time: the caller reports the loss (one line, however many threads notice it)."""
        return self._reported.acquire(blocking=False)

    def lost_ranks(self, confirm_seconds: float = CONFIRM_SECONDS) -> list[int]:
        """The ranks that stopped beating: those silent for ``confirm_seconds`` from now (and not finished).

        Called by the main thread after a collective failed; the thread keeps beating meanwhile.
        """
        start = time.monotonic()
        self._stop.wait(confirm_seconds)
        if self._store_heard < start:  # the store answered nothing meanwhile: its machine is gone
            return self.store_ranks or [0]
        return [r for r in self._peers if self._heard[r] < start and r not in self._finished]

    def _run(self) -> None:
        while not self._stop.wait(BEAT_SECONDS):
            self._beat()
            lost = self._silent_ranks()
            if lost and not self._stop.is_set() and self.claim_report():
                message = lost_message(lost, self.when())
                message += f" (no heartbeat for {self.silence:g} s; GRAPHTIER_LOST_RANK_SECONDS sets this limit)"
                print(error_line(message), file=sys.stderr, flush=True)
                sys.stdout.flush()
                self.exit_process(EXIT_LOST_RANK)
                return

    def _beat(self) -> None:
        store = self._store
        assert store is not None
        try:
            store.add(f"beat/{self.rank}", 1)
            for peer in self._peers:
                beats = store.add(f"beat/{peer}", 0)  # add(key, 0) reads without waiting for the key
                if beats != self._beats[peer]:
                    self._beats[peer] = beats
                    self._heard[peer] = time.monotonic()
                if peer not in self._finished and store.add(f"finished/{peer}", 0):
                    self._finished.add(peer)
            self._store_heard = time.monotonic()
        except RuntimeError:  # the store did not answer (DistStoreError, DistNetworkError): silence
            pass

    def _silent_ranks(self) -> list[int]:
        now = time.monotonic()
        if now - self._store_heard > self.silence:
            return self.store_ranks or [0]
        return [r for r in self._peers if now - self._heard[r] > self.silence and r not in self._finished]
