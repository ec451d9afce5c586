"""The plot helpers draw what the model holds: importance bars equal LightGBM's importances of
the exported model, metric lines the recorded scores, tree boxes one per node and leaf. Each
figure is rendered to PNG (Agg backend)."""
import numpy as np
import pytest

matplotlib = pytest.importorskip("matplotlib")
matplotlib.use("Agg")

import oocgbdt  # noqa: E402
from oocgbdt.plot import plot_importance, plot_metric, plot_tree  # noqa: E402


@pytest.fixture(scope="module")
def model():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(1200, 5))
    X[rng.random(X.shape) < 0.1] = np.nan
    y = (np.nan_to_num(X[:, 0]) + 0.3 * X[:, 2] + rng.normal(size=1200) * 0.5 > 0).astype(int)
    return oocgbdt.GBDTClassifier(n_estimators=6, num_leaves=6).fit(
        X, y, eval_set=[(X[:300], y[:300])], eval_names=["holdout"])


@pytest.mark.parametrize("importance_type", ["split", "gain"])
def test_plot_importance_draws_lightgbm_importances(model, importance_type, tmp_path):
    lgb = pytest.importorskip("lightgbm")
    ax = plot_importance(model, importance_type=importance_type)
    theirs = lgb.Booster(model_str=model.booster_.model_to_string(format="lightgbm"))
    expected = theirs.feature_importance(importance_type)
    widths = [p.get_width() for p in ax.patches]
    labels = [t.get_text() for t in ax.get_yticklabels()]
    names = theirs.feature_name()
    drawn = dict(zip(labels, widths))
    assert drawn == pytest.approx({n: v for n, v in zip(names, expected) if v > 0}, rel=1e-6)
    assert widths == sorted(widths)  # largest on top
    ax.figure.savefig(tmp_path / "importance.png")
    assert (tmp_path / "importance.png").stat().st_size > 0


def test_plot_metric_draws_the_recorded_scores(model, tmp_path):
    ax = plot_metric(model)
    (line,) = ax.get_lines()
    assert np.array_equal(line.get_ydata(), model.evals_result_["holdout"]["binary_logloss"])
    ax.figure.savefig(tmp_path / "metric.png")
    with pytest.raises(ValueError, match="metric 'auc' not recorded"):
        plot_metric(model, "auc")


def test_plot_tree_draws_every_node_and_leaf(model, tmp_path):
    tree = model.booster_.trees[1]
    ax = plot_tree(model, tree_index=1)
    boxes = [t for t in ax.texts if t.get_text() not in ("yes", "no")]  # not edge labels
    assert len(ax.texts) - len(boxes) == 2 * (tree.n_leaves - 1)
    assert len(boxes) == 2 * tree.n_leaves - 1
    leaf_texts = sorted(t.get_text().split("\n")[0] for t in boxes if t.get_text().startswith("leaf"))
    assert leaf_texts == sorted(f"leaf {i}: {v:.3g}" for i, v in enumerate(tree.leaf_value))
    ax.figure.savefig(tmp_path / "tree.png")
    with pytest.raises(IndexError, match="out of range"):
        plot_tree(model, tree_index=99)
