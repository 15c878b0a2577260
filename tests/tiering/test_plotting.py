"""``--plot`` figures: the title lies inside the figure (issue 23: the ``plan --plot`` title was cut off) and the
matplotlib install hint matches how graphtier was installed."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from graphtier.dataset.format import Dataset
from graphtier.tiering.access import analyze_access, plot_access
from graphtier.tiering.plan.capacity import describe_device, plan_capacity
from graphtier.tiering.plan.report import plot_plan
from graphtier.tiering.plotting import install_hint
from graphtier.tiering.replay import Replay
from tests.conftest import write_labelled_graph

plt = pytest.importorskip("matplotlib.pyplot")
FigureCanvasAgg = pytest.importorskip("matplotlib.backends.backend_agg").FigureCanvasAgg

NAMES = ("ogbn-products-reordered", "papers100M-" + "x" * 140)


@pytest.fixture
def closed_figures(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """The figures the plotting code closes after saving them (pyplot.close wrapped by the test)."""
    figures: list[Any] = []
    close = plt.close

    def keep(figure: Any = None) -> None:
        figures.append(figure)
        close(figure)

    monkeypatch.setattr(plt, "close", keep)
    return figures


def _assert_title_inside(figure: Any) -> None:
    FigureCanvasAgg(figure)  # the closed figure's canvas is detached: render it again with Agg
    figure.canvas.draw()
    renderer = figure.canvas.get_renderer()
    title = figure.axes[0].title
    box, frame = title.get_window_extent(renderer), figure.bbox
    assert title.get_text()
    assert frame.x0 <= box.x0 and box.x1 <= frame.x1 and frame.y0 <= box.y0 and box.y1 <= frame.y1, (box, frame)


@pytest.mark.parametrize("name", NAMES)
def test_plan_plot_title_lies_inside_the_figure(name: str, tmp_path: Path, closed_figures: list[Any]) -> None:
    root = tmp_path / name
    write_labelled_graph(root, num_nodes=300, feature_dim=4, avg_degree=4, seed=3)
    plan = plan_capacity(
        Dataset.open(root),
        describe_device("80GiB", host_memory="64GiB"),
        budgets=["0%", "100%"],
        replay=Replay(fanouts=(3, 2), batch_size=64),
    )
    plot_plan(plan, tmp_path / "plan.png")
    assert (tmp_path / "plan.png").read_bytes()[:4] == b"\x89PNG"
    assert len(closed_figures) == 1
    _assert_title_inside(closed_figures[0])
    assert "fanouts 3,2, batch 64" in closed_figures[0].axes[0].title.get_text()


def test_access_plot_title_lies_inside_the_figure(tmp_path: Path, closed_figures: list[Any]) -> None:
    root = tmp_path / NAMES[1]
    write_labelled_graph(root, num_nodes=300, feature_dim=4, avg_degree=4, seed=3)
    analysis = analyze_access(
        Dataset.open(root), methods=["degree"], replay=Replay(fanouts=[3, 2], batch_size=64, epochs=1, seed=3)
    )
    plot_access(analysis, tmp_path / "access.png")
    _assert_title_inside(closed_figures[0])


def _checkout(root: Path, name: str = "graphtier") -> Path:
    (root / "graphtier").mkdir(parents=True)
    (root / "pyproject.toml").write_text(f'[project]\nname = "{name}"\n')
    return root / "graphtier"


def test_install_hint_from_a_checkout_is_editable(tmp_path: Path) -> None:
    package = _checkout(tmp_path / "clone")
    assert install_hint("plot", package, cwd=tmp_path / "clone") == "pip install -e '.[plot]'"
    assert install_hint("plot", package, cwd=tmp_path) == f"pip install -e '{tmp_path / 'clone'}[plot]'"


def test_install_hint_from_site_packages_names_the_distribution(tmp_path: Path) -> None:
    site = tmp_path / "site-packages" / "graphtier"
    site.mkdir(parents=True)
    assert install_hint("plot", site, cwd=tmp_path) == "pip install 'graphtier[plot]'"
    other = _checkout(tmp_path / "other", name="someone-else")  # a pyproject.toml, but not graphtier's
    assert install_hint("plot", other, cwd=tmp_path / "other") == "pip install 'graphtier[plot]'"
