"""This module contains plot helpers (the ``plot`` extra: ``pip install "oocgbdt[plot]"``)."""
from __future__ import annotations

import numpy as np

__all__ = ["plot_screening"]


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
