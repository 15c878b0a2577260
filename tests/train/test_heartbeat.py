"""The torchrun heartbeat (graphtier.train.dist.heartbeat): a rank that stops beating is named and ends its peers, a
rank that finished its training or still beats is not lost."""

from __future__ import annotations

import threading
import time

import pytest
import torch.distributed as dist

from graphtier.train.dist.heartbeat import Heartbeat


class _Exit:
    def __init__(self) -> None:
        self.codes: list[int] = []
        self.called = threading.Event()

    def __call__(self, code: int) -> None:
        self.codes.append(code)
        self.called.set()


def _pair(monkeypatch: pytest.MonkeyPatch) -> tuple[Heartbeat, Heartbeat, _Exit]:
    monkeypatch.setenv("GRAPHTIER_LOST_RANK_SECONDS", "2")
    store, exit_0 = dist.HashStore(), _Exit()
    watcher = Heartbeat(0, 2, [0], lambda: "during epoch 4", exit_process=exit_0)
    peer = Heartbeat(1, 2, [0], lambda: "during epoch 4", exit_process=_Exit())
    watcher.start(store)
    peer.start(store)
    return watcher, peer, exit_0


def test_a_silent_rank_is_named_in_one_line_and_ends_the_others(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    watcher, peer, exit_0 = _pair(monkeypatch)
    time.sleep(1.5)
    assert not exit_0.called.is_set()  # both beat
    peer.stop()  # rank 1 freezes: no word, no more beats
    assert exit_0.called.wait(timeout=6)
    watcher.stop()
    assert exit_0.codes == [2]
    lines = capsys.readouterr().err.splitlines()
    assert lines == [
        "graphtier: error: rank 1 was lost (its process or machine stopped) during epoch 4; every rank stops "
        "(no heartbeat for 2 s; GRAPHTIER_LOST_RANK_SECONDS sets this limit)"
    ]


@pytest.mark.slow
def test_a_live_or_finished_rank_is_not_lost(monkeypatch: pytest.MonkeyPatch) -> None:
    watcher, peer, exit_0 = _pair(monkeypatch)
    time.sleep(1.2)
    assert watcher.lost_ranks(confirm_seconds=1.5) == []  # after a failed collective: a live peer beats meanwhile
    peer.finish()  # rank 1 is done; rank 0 still evaluates and writes its outputs
    assert not exit_0.called.wait(timeout=3)  # longer than the 2 s limit
    assert watcher.lost_ranks(confirm_seconds=1.5) == []
    watcher.stop()
