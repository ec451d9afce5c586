"""This module contains the public :class:`Booster`: the core model plus lazy Dask prediction.

NumPy in gives NumPy out; a Dask array, a Zarr array or a Zarr path in gives a lazy Dask array
out (one ``map_blocks`` task per row chunk; nothing is computed at call time).
"""
from __future__ import annotations

import numpy as np

from oocgbdt.core.booster import Booster as _CoreBooster
from oocgbdt.dask.inputs import as_row_chunked, is_lazy

__all__ = ["Booster"]


def _predict_block(block, booster, raw_score, num_iteration):
    return booster._predict_numpy(block, raw_score=raw_score, num_iteration=num_iteration)


class Booster(_CoreBooster):
    __doc__ = _CoreBooster.__doc__

    def predict(self, X, raw_score=False, num_iteration=None):
        """Predict rows of ``X``: NumPy in, NumPy out; Dask/Zarr in, lazy Dask array out.

        Parameters
        ----------
        X : ndarray, scipy.sparse matrix, dask.array.Array (NumPy or scipy.sparse chunks), zarr.Array
            or path of a Zarr store (dense or sparse dataset), shape (n_samples, n_features)
        raw_score : bool, default False
            Raw scores instead of transformed predictions (probabilities for classification).
        num_iteration : int, optional
            Rounds to use; default the best iteration from early stopping, else all.

        Returns
        -------
        ndarray or dask.array.Array of float64, shape (n_samples,) for one output or
        (n_samples, num_class) for multiclass.

        Raises
        ------
        ValueError
            Not 2-D, or another number of features than the training data.
        TypeError
            Non-numeric input.
        """
        if not is_lazy(X):
            return super().predict(X, raw_score=raw_score, num_iteration=num_iteration)
        Xd = as_row_chunked(X, "X", allow_empty=True)  # 0 rows: an empty result, as NumPy's
        if Xd.shape[1] != self.n_features:
            raise ValueError(f"X has {Xd.shape[1]} features, but the model was trained on "
                             f"{self.n_features} features.")
        multi = self.n_outputs > 1
        kwargs = dict(booster=self, raw_score=raw_score, num_iteration=num_iteration,
                      dtype=np.float64)
        if multi:
            return Xd.map_blocks(_predict_block, chunks=(Xd.chunks[0], (self.n_outputs,)),
                                 meta=np.empty((0, 0), dtype=np.float64), **kwargs)
        return Xd.map_blocks(_predict_block, drop_axis=1, chunks=(Xd.chunks[0],),
                             meta=np.empty((0,), dtype=np.float64), **kwargs)
