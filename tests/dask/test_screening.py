"""Feature screening through ``train``: the screening history a fit records, drawn by
:func:`oocgbdt.plot.plot_screening`. The screener itself and the trees it allows are tested on
the core in tests/core/test_screening.py."""
import numpy as np
import pytest


def test_plot_screening_draws_selection_map(tmp_path):
    pytest.importorskip("matplotlib")
    import matplotlib
    matplotlib.use("Agg")
    import oocgbdt
    from oocgbdt.plot import plot_screening
    rng = np.random.default_rng(2)
    X = rng.normal(size=(1000, 8)).astype(np.float32)
    y = (X[:, 0] > 0).astype(float)
    b = oocgbdt.train(dict(objective="binary", n_estimators=6, feature_screening="ema",
                           screening_warmup=2), X, y)
    fig = plot_screening(b, top=5)
    image = fig.axes[0].images[0].get_array()
    assert image.shape == (5, 6)
    assert image[:, :2].all()  # warm-up rounds select every feature
    fig.savefig(tmp_path / "s.png")
    with pytest.raises(ValueError, match="no screening history"):
        plot_screening(oocgbdt.train(dict(objective="binary", n_estimators=2), X, y))
