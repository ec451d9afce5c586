"""This module contains plot helpers (the ``plot`` extra: ``pip install "oocgbdt[plot]"``)."""
from __future__ import annotations

import numpy as np

__all__ = ["plot_screening", "plot_importance", "plot_metric", "plot_tree"]


def _pyplot(what):
    try:
        import matplotlib.pyplot as plt
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ImportError(f'{what} needs matplotlib: pip install "oocgbdt[plot]"') from exc
    return plt


def _booster(model, what):
    """The Booster of ``model`` (a Booster, or a fitted estimator's ``booster_``)."""
    booster = getattr(model, "booster_", model)
    if not hasattr(booster, "trees") or not hasattr(booster, "feature_importance"):
        raise TypeError(f"{what}: model must be an oocgbdt Booster or a fitted GBDTRegressor/"
                        f"GBDTClassifier, got {type(model).__name__}.")
    return booster


def plot_importance(model, *, importance_type="split", max_num_features=None, ax=None,
                    title="Feature importance"):
    """Horizontal bars of each feature's importance, largest on top (as LightGBM's
    ``plot_importance``); features of importance 0 are left out.

    Parameters
    ----------
    model : Booster or fitted GBDTRegressor/GBDTClassifier
    importance_type : {"split", "gain"}, default "split"
        Number of splits on the feature, or their total gain (:meth:`Booster.feature_importance`).
    max_num_features : int, optional
        Show only this many features.
    ax : matplotlib Axes, optional
        Where to draw; a new figure when omitted.
    title : str

    Returns
    -------
    matplotlib.axes.Axes

    Raises
    ------
    ImportError
        matplotlib is not installed.
    TypeError, ValueError
        Not a model; an unknown ``importance_type``; no feature is used by any split.
    """
    plt = _pyplot("plot_importance")
    booster = _booster(model, "plot_importance")
    values = booster.feature_importance(importance_type)
    order = [i for i in np.argsort(-values, kind="stable") if values[i] > 0]
    if not order:
        raise ValueError("plot_importance: no feature is used by any split of the model.")
    if max_num_features is not None:
        order = order[:int(max_num_features)]
    order = order[::-1]  # largest on top
    if ax is None:
        _, ax = plt.subplots(figsize=(6, 0.3 * len(order) + 1.2))
    ax.barh(range(len(order)), values[order], height=0.2 + 0.5)
    ax.set_yticks(range(len(order)), [booster.feature_names[i] for i in order])
    for y, i in enumerate(order):
        label = f"{values[i]:d}" if importance_type == "split" else f"{values[i]:.4g}"
        ax.text(values[i], y, " " + label, va="center")
    ax.set_xlabel("splits" if importance_type == "split" else "total gain")
    ax.set_ylabel("feature")
    ax.set_title(title)
    return ax


def plot_metric(model, metric=None, *, dataset_names=None, ax=None, title="Metric during training"):
    """One line per eval set of ``metric`` against the boosting round (as LightGBM's
    ``plot_metric``).

    Parameters
    ----------
    model : dict, Booster or fitted estimator
        ``{eval_name: {metric: [score per round]}}``, or what a model recorded
        (``evals_result_`` of an estimator, ``evals_result`` of a Booster).
    metric : str, optional
        Default: the first metric recorded.
    dataset_names : list of str, optional
        Eval sets drawn; default every one.
    ax : matplotlib Axes, optional
    title : str

    Returns
    -------
    matplotlib.axes.Axes

    Raises
    ------
    ImportError
        matplotlib is not installed.
    ValueError
        Nothing was recorded (train with ``eval_set``), or ``metric`` / a dataset name was not.
    """
    plt = _pyplot("plot_metric")
    if isinstance(model, dict):
        results = model
    else:
        results = getattr(model, "evals_result_", None) or getattr(model, "evals_result", None)
    if not results:
        raise ValueError("plot_metric: the model recorded no metric; train it with eval_set "
                         "(and a metric).")
    names = list(results) if dataset_names is None else list(dataset_names)
    for name in names:
        if name not in results:
            raise ValueError(f"plot_metric: no eval set {name!r}; recorded: {list(results)}.")
    if metric is None:
        metric = next(iter(results[names[0]]))
    if ax is None:
        _, ax = plt.subplots(figsize=(6, 4))
    for name in names:
        if metric not in results[name]:
            raise ValueError(f"plot_metric: metric {metric!r} not recorded for {name!r}; "
                             f"recorded: {list(results[name])}.")
        scores = results[name][metric]
        ax.plot(np.arange(1, len(scores) + 1), scores, label=name)
    ax.set_xlabel("iteration")
    ax.set_ylabel(metric)
    ax.set_title(title)
    ax.legend(loc="best")
    ax.grid(True, alpha=0.3)
    return ax


def _node_label(tree, node, names, precision):
    f = int(tree.split_feature[node])
    dt = int(tree.decision_type[node])
    name = names[f] if f < len(names) else f"Column_{f}"
    if dt & 1:
        return f"{name} in category set"
    side = "left" if dt & 2 else "right"
    missing = ("NaN as 0", f"0 and NaN -> {side}", f"NaN -> {side}")[(dt >> 2) & 3]
    return f"{name} <= {tree.threshold[node]:.{precision}g}\n{missing}"


def plot_tree(model, tree_index=0, *, ax=None, precision=3, show_info=("leaf_count",),
              figsize=None):
    """Draw one tree with matplotlib: a box per split (feature, threshold, where missing
    values go) and per leaf (its value), the left child below-left ("yes": x <= threshold).

    Parameters
    ----------
    model : Booster or fitted GBDTRegressor/GBDTClassifier
    tree_index : int, default 0
        In training order (round-major, class-minor for multiclass).
    ax : matplotlib Axes, optional
    precision : int, default 3
        Significant digits of thresholds and values.
    show_info : sequence of {"leaf_count", "internal_count", "split_gain"}
        Extra lines in the boxes.
    figsize : tuple, optional

    Returns
    -------
    matplotlib.axes.Axes

    Raises
    ------
    ImportError
        matplotlib is not installed.
    IndexError
        ``tree_index`` out of range.
    """
    plt = _pyplot("plot_tree")
    booster = _booster(model, "plot_tree")
    if not -len(booster.trees) <= tree_index < len(booster.trees):
        raise IndexError(f"plot_tree: tree_index {tree_index} out of range; the model has "
                         f"{len(booster.trees)} trees.")
    tree = booster.trees[tree_index]
    names = booster.feature_names
    # layout: leaves left to right in walk order, parents centred over their children
    pos, depth_of = {}, {}
    next_x = [0]

    def place(child, depth):  # child >= 0 internal node, < 0 leaf ~child
        key = ("n", child) if child >= 0 else ("l", ~child)
        if child < 0 or tree.n_leaves == 1:
            pos[key] = (next_x[0], -depth)
            next_x[0] += 1
            return pos[key][0]
        xl = place(int(tree.left_child[child]), depth + 1)
        xr = place(int(tree.right_child[child]), depth + 1)
        pos[key] = ((xl + xr) / 2, -depth)
        return pos[key][0]

    place(0 if tree.n_leaves > 1 else -1, 0)
    width = max(next_x[0], 1)
    depth = -min(y for _, y in pos.values()) + 1
    if ax is None:
        _, ax = plt.subplots(figsize=figsize or (max(6, 1.6 * width), max(3, 1.3 * depth)))
    box = dict(boxstyle="round", fc="white", ec="0.3")
    for (kind, i), (x, y) in pos.items():
        if kind == "n":
            text = _node_label(tree, i, names, precision)
            if "split_gain" in show_info:
                text += f"\ngain {tree.split_gain[i]:.{precision}g}"
            if "internal_count" in show_info:
                text += f"\ncount {int(tree.internal_count[i])}"
            for child, label in ((int(tree.left_child[i]), "yes"), (int(tree.right_child[i]), "no")):
                cx, cy = pos[("n", child) if child >= 0 else ("l", ~child)]
                ax.plot([x, cx], [y, cy], color="0.5", zorder=1)
                ax.text((x + cx) / 2, (y + cy) / 2, label, fontsize=7, color="0.3",
                        ha="center", va="center", backgroundcolor="white")
        else:
            text = f"leaf {i}: {tree.leaf_value[i]:.{precision}g}"
            if "leaf_count" in show_info:
                text += f"\ncount {int(tree.leaf_count[i])}"
        ax.text(x, y, text, ha="center", va="center", fontsize=7, bbox=box, zorder=2)
    ax.set_xlim(-0.8, width - 0.2)
    ax.set_ylim(-depth + 0.4, 0.6)
    ax.axis("off")
    ax.set_title(f"tree {tree_index} (class {tree.class_idx})")
    return ax


def plot_screening(booster, *, top=30, ax=None):
    """Show which features feature screening kept in each round, and their final EMA scores.

    Parameters
    ----------
    booster : Booster
        Trained with ``feature_screening`` or ``feature_fraction``.
    top : int, default 30
        Features shown: the ``top`` highest final scores.
    ax : sequence of two matplotlib Axes, optional
        Where to draw (selection map, scores); new figure when omitted.

    Returns
    -------
    matplotlib.figure.Figure

    Raises
    ------
    ImportError
        matplotlib is not installed.
    ValueError
        The booster has no screening history.
    """
    try:
        import matplotlib.pyplot as plt
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ImportError('plot_screening needs matplotlib: pip install "oocgbdt[plot]"') from exc
    history = getattr(booster, "screening_history_", None)
    if not history:
        raise ValueError("booster has no screening history: train it with feature_screening="
                         "'ema' or 'stochastic', or with feature_fraction < 1.")
    scores = booster.screening_scores_
    order = np.argsort(-np.nan_to_num(scores, nan=-np.inf), kind="stable")[:top]
    selected = np.zeros((len(order), len(history)), dtype=bool)
    for r, chosen in enumerate(history):
        selected[:, r] = np.isin(order, chosen)
    if ax is None:
        fig, ax = plt.subplots(1, 2, figsize=(10, 0.25 * len(order) + 1.5),
                               gridspec_kw={"width_ratios": [3, 1]}, sharey=True)
    fig = ax[0].figure
    ax[0].imshow(selected, aspect="auto", interpolation="nearest", cmap="Greys")
    ax[0].set_xlabel("boosting round")
    ax[0].set_ylabel("feature")
    ax[0].set_yticks(range(len(order)), [booster.feature_names[i] for i in order])
    ax[0].set_title("selected features per round")
    ax[1].barh(range(len(order)), np.nan_to_num(scores[order]))
    ax[1].set_xlabel("EMA of best split gain")
    return fig
