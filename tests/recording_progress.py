"""A :class:`graphtier._progress.Progress` that records the stages library code reports (for tests)."""

from __future__ import annotations

from graphtier._progress import Progress, Stage


class RecordingProgress(Progress):
    """Keeps every stage that finished (``finished_stages``) and the done count of every advance (``advances``)."""

    def __init__(self) -> None:
        super().__init__()
        self.finished_stages: list[Stage] = []
        self.advances: list[tuple[str, int]] = []

    def advanced(self, stage: Stage) -> None:
        self.advances.append((stage.description, stage.done))

    def finished(self, stage: Stage, completed: bool) -> None:
        if completed:
            self.finished_stages.append(stage)

    def descriptions(self) -> list[str]:
        """The descriptions of the finished stages, in the order they finished."""
        return [stage.description for stage in self.finished_stages]
