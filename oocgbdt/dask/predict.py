"""This module contains lazy prediction: :meth:`oocgbdt.Booster.predict` on a Dask array, a Zarr
array or the path of a Zarr store gives a lazy Dask array (one ``map_blocks`` task per row
chunk; nothing is computed at call time).

Importing it registers :func:`predict` with the one :class:`~oocgbdt.core.booster.Booster`
(:func:`~oocgbdt.core.booster.register_lazy_input`); importing :mod:`oocgbdt.dask` does.
"""
from __future__ import annotations

import dask.array as da
import numpy as np

from oocgbdt.core.booster import Booster, register_lazy_input
from oocgbdt.dask.inputs import as_row_chunked, is_lazy

__all__ = ["predict", "Booster"]


def _uncast_float64(X, Xd):
    """``X`` itself (columns in one chunk) when it is a float64 Dask or Zarr array: rows are
    compared with the thresholds in float64, as LightGBM does, and as NumPy input is; the
    checked ``Xd`` (float32) otherwise."""
    src = da.from_zarr(X) if type(X).__module__.split(".")[0] == "zarr" else X
    if isinstance(src, da.Array) and src.dtype == np.float64 and src.shape == Xd.shape:
        return src.rechunk({1: -1}) if len(src.chunks[1]) > 1 else src
    return Xd


def _predict_block(block, booster, options):
    return booster._predict_numpy(block, **options)


def predict(booster, X, raw_score=False, start_iteration=0, num_iteration=None, pred_leaf=False,
            pred_contrib=False):
    """Lazy predictions of ``booster`` for the rows of ``X``.

    Parameters
    ----------
    booster : Booster
    X : dask.array.Array (NumPy or scipy.sparse chunks), zarr.Array or path of a Zarr store
        (dense or sparse dataset), shape (n_samples, n_features)
    raw_score, start_iteration, num_iteration, pred_leaf, pred_contrib
        As for :meth:`Booster.predict`.

    Returns
    -------
    dask.array.Array, chunked as ``X``'s rows: float64 of shape (n_samples,) for one output
    or (n_samples, num_class) for multiclass; int32 (n_samples, n_trees) with ``pred_leaf``;
    float64 (n_samples, n_outputs * (n_features + 1)) with ``pred_contrib``.

    Raises
    ------
    ValueError
        Not 2-D, or another number of features than the training data.
    TypeError
        Non-numeric input.
    """
    Xd = as_row_chunked(X, "X", allow_empty=True)  # 0 rows: an empty result, as NumPy's
    if Xd.shape[1] != booster.n_features:
        raise ValueError(f"X has {Xd.shape[1]} features, but the model was trained on "
                         f"{booster.n_features} features.")
    Xd = _uncast_float64(X, Xd)
    options = dict(raw_score=raw_score, start_iteration=start_iteration,
                   num_iteration=num_iteration, pred_leaf=pred_leaf, pred_contrib=pred_contrib)
    shape, dtype = booster.output_shape(0, pred_leaf=pred_leaf, pred_contrib=pred_contrib,
                                        start_iteration=start_iteration,
                                        num_iteration=num_iteration)
    kwargs = dict(booster=booster, options=options, dtype=dtype)
    if len(shape) == 2:
        return Xd.map_blocks(_predict_block, chunks=(Xd.chunks[0], (shape[1],)),
                             meta=np.empty((0, 0), dtype=dtype), **kwargs)
    return Xd.map_blocks(_predict_block, drop_axis=1, chunks=(Xd.chunks[0],),
                         meta=np.empty((0,), dtype=dtype), **kwargs)


register_lazy_input(is_lazy, predict)
