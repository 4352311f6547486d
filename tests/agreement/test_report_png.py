"""The report's PNGs are the bytes matplotlib's own ``savefig(bbox_inches="tight")`` writes.

``agreement.report._png`` measures the tight box itself instead of letting savefig draw the figure
an extra time to measure it; the reference here is matplotlib's own tight path on an identical figure.
"""

from __future__ import annotations

import io

import numpy as np
import pytest

from agreement.documents import Interval
from agreement.report import _png, forest_figure

plt = pytest.importorskip("matplotlib.pyplot", reason="the report's plots need matplotlib")


def _tight(draw) -> bytes:
    fig = draw()
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=110, bbox_inches="tight", metadata={"Software": None})
    plt.close(fig)
    return buffer.getvalue()


def _confusion(labels: list[str], counts: np.ndarray):
    """A confusion figure as the report draws one (long tick labels, a count in every cell, a title)."""
    def draw():
        fig, ax = plt.subplots(figsize=(3.2 + 0.4 * len(labels), 2.8 + 0.4 * len(labels)))
        ax.imshow(counts, cmap="Blues")
        for i, row in enumerate(counts):
            for j, value in enumerate(row):
                ax.text(j, i, str(value), ha="center", va="center")
        ax.set_xticks(range(len(labels)), labels)
        ax.set_yticks(range(len(labels)), labels)
        ax.set_ylabel("human majority")
        ax.set_xlabel("a judge with a long name")
        ax.set_title("response: a judge with a long name", fontsize=9)
        return fig
    return draw


@pytest.mark.parametrize("size", [2, 5, 17])
def test_png_equals_savefigs_tight_bytes(size):
    rng = np.random.default_rng(size)
    labels = [f"Category-{k}-{'x' * (k % 7)}" for k in range(size)]
    counts = rng.integers(0, 5000, size=(size, size))
    draw = _confusion(labels, counts)
    expected = _tight(draw)
    assert _png(draw()) == expected
    assert expected[:8] == b"\x89PNG\r\n\x1a\n"


def test_forest_figure_png_equals_savefigs_tight_bytes():
    rows = [(f"judge {k} vs humans (a rather long label)", Interval(statistic=0.1 * k, ci_low=0.1 * k - 0.2,
                                                                     ci_high=0.1 * k + 0.15)) for k in range(9)]
    figure = forest_figure(rows)
    assert figure is not None

    def draw():
        fig, ax = plt.subplots(figsize=(8, 0.35 * len(rows) + 1.2))
        for y, (_, r) in enumerate(reversed(rows)):
            color = "tab:green"
            ax.plot([r.ci_low, r.ci_high], [y, y], color=color)
            ax.plot([r.statistic], [y], "o", color=color)
        ax.set_yticks(range(len(rows)), [label for label, _ in reversed(rows)], fontsize=8)
        ax.axvline(0, color="black", lw=0.5)
        ax.set_xlabel("agreement (95% CI)")
        ax.set_title("Agreement with CIs (grey: degenerate baselines)")
        return fig

    assert figure.png == _tight(draw)
