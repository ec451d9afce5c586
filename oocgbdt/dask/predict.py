"""This module contains lazy prediction: :meth:`oocgbdt.Booster.predict` on a Dask array, a Zarr
array or the path of a Zarr store gives a lazy Dask array (one ``map_blocks`` task per row
chunk; nothing is computed at call time). A Dask DataFrame gives one task per partition, which
codes the partition by value through the model's category map
(:meth:`~oocgbdt.core.booster.Booster.predict` on a pandas DataFrame); its result is a Dask
array with unknown chunk sizes, as the partition lengths are not counted.

Importing it registers :func:`predict` with the one :class:`~oocgbdt.core.booster.Booster`
(:func:`~oocgbdt.core.booster.register_lazy_input`); importing :mod:`oocgbdt.dask` does.
"""
from __future__ import annotations

import dask.array as da
import numpy as np

from oocgbdt.core.booster import Booster, register_lazy_input
from oocgbdt.core.categories import categorical_columns, check_frame_columns
from oocgbdt.dask.inputs import (CategoryMap, as_row_chunked, dataset_map_of, is_dask_frame,
                                 is_lazy, remap_codes)

__all__ = ["predict", "model_map", "Booster"]


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


def _predict_partition(part, booster, options):
    out = booster._predict_numpy(part, **options)
    return out.reshape(len(part), -1)


def _predict_frame(booster, X, options):
    if X.ndim != 2:
        raise ValueError("X must be 2-D of shape (n_samples, n_features), got a Dask Series; "
                         "pass a Dask DataFrame (series.to_frame()).")
    if len(X.columns) != booster.n_features:
        raise ValueError(f"X has {len(X.columns)} features, but the model was trained on "
                         f"{booster.n_features} features.")
    check_frame_columns(X._meta, booster.feature_names, "X")  # before any task runs
    text = [str(X.columns[j]) for j in categorical_columns(X.dtypes)
            if j not in booster.pandas_categorical_features]
    if text:
        raise ValueError(f"X column(s) {text[:10]} hold text or categories, but the model was "
                         f"trained on numbers in them; pass numbers, as in training.")
    shape, dtype = booster.output_shape(0, **{k: v for k, v in options.items()
                                               if k != "raw_score"})
    width = shape[1] if len(shape) == 2 else 1
    blocks = X.map_partitions(
        _predict_partition, booster, options,
        meta=np.empty((0, width), dtype=dtype), enforce_metadata=False)
    return blocks if len(shape) == 2 else blocks[:, 0]


def model_map(booster) -> CategoryMap:
    """The category map of ``booster`` (empty when it was trained without one)."""
    return CategoryMap(list(booster.feature_names), tuple(booster.pandas_categorical_features),
                       (), list(booster.pandas_categorical or []))


def predict(booster, X, raw_score=False, start_iteration=0, num_iteration=None, pred_leaf=False,
            pred_contrib=False):
    """Lazy predictions of ``booster`` for the rows of ``X``.

    Parameters
    ----------
    booster : Booster
    X : dask.array.Array (NumPy or scipy.sparse chunks), dask.dataframe.DataFrame, zarr.Array,
        path of a Zarr store (dense or sparse dataset) or opened dataset, shape (n_samples,
        n_features). A dataset's category codes are mapped to the model's by value.
    raw_score, start_iteration, num_iteration, pred_leaf, pred_contrib
        As for :meth:`Booster.predict`.

    Returns
    -------
    dask.array.Array, chunked as ``X``'s rows (for a Dask DataFrame, one chunk per partition,
    of unknown size): float64 of shape (n_samples,) for one output or (n_samples, num_class)
    for multiclass; int32 (n_samples, n_trees) with ``pred_leaf``; float64
    (n_samples, n_outputs * (n_features + 1)) with ``pred_contrib``.

    Raises
    ------
    ValueError
        Not 2-D, or another number of features than the training data.
    TypeError
        Non-numeric input.
    """
    options = dict(raw_score=raw_score, start_iteration=start_iteration,
                   num_iteration=num_iteration, pred_leaf=pred_leaf, pred_contrib=pred_contrib)
    if is_dask_frame(X):
        return _predict_frame(booster, X, options)
    Xd = as_row_chunked(X, "X", allow_empty=True)  # 0 rows: an empty result, as NumPy's
    if Xd.shape[1] != booster.n_features:
        raise ValueError(f"X has {Xd.shape[1]} features, but the model was trained on "
                         f"{booster.n_features} features.")
    Xd = _uncast_float64(X, Xd)
    source = dataset_map_of(X)
    if source is not None and (source.coded or booster.pandas_categorical_features):
        # A dataset converted on its own holds its own codes: mapped by value to the model's.
        Xd = remap_codes(Xd, source, model_map(booster))
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
