"""This module contains the dtypes shared by every layer of oocgbdt.

One source so that kernels, core objects and the Dask layer agree on memory layout.
"""
import numpy as np

#: Raw feature values are cast to float32 once, on input (LightGBM and XGBoost do the same).
X_DTYPE = np.float32
#: Binned features: uint8 when every feature has at most 256 bins, else uint16.
X_BINNED_DTYPE = np.uint8
X_BINNED_DTYPE_WIDE = np.uint16
#: Gradients and hessians are stored as float32 (LightGBM's ``score_t``): half the memory of
#: float64 per row, and the precision lost is far below the histogram noise.
G_H_DTYPE = np.float32
#: Histogram sums are float64: summing millions of float32 values in float32 loses digits,
#: and a parent-minus-child subtraction would amplify that error.
HIST_DTYPE = np.float64
#: Histogram layout: array of shape (n_hist_bins, 2); columns are these fields. Row 0 is the
#: count row: field 0 holds the leaf's row count (see :mod:`oocgbdt.kernels.histogram`).
HIST_GRAD, HIST_HESS = 0, 1
#: Labels and sample weights are stored as float32, as LightGBM stores them (bit-parity of
#: gradients with LightGBM needs the same rounding of labels).
LABEL_DTYPE = np.float32
#: Raw scores (sum of tree outputs) are float64, as in LightGBM.
Y_DTYPE = np.float64
#: Per-row leaf index inside the tree being grown.
LEAF_DTYPE = np.int32

#: Missing-value types of a feature (LightGBM's MissingType; bits 2-3 of decision_type).
MISSING_NONE, MISSING_ZERO, MISSING_NAN = 0, 1, 2

#: LightGBM's kZeroThreshold: the float literal 1e-35f read as double.
K_ZERO_THRESHOLD = float(np.float32(1e-35))
#: LightGBM's kEpsilon.
K_EPSILON = 1e-15


def as_float_if_frame(X):
    """A pandas DataFrame with extension dtypes (nullable ``Float64``/``Int64``/``boolean``)
    as a float64 ndarray, ``pd.NA`` as NaN; anything else through ``np.asarray``.

    ``np.asarray`` turns such a frame into an object array holding ``pd.NA``, which no numeric
    cast accepts. A frame that does not convert (text columns) is returned as ``np.asarray``
    gives it, for the caller's dtype check to name.
    """
    dtypes = getattr(X, "dtypes", None)
    if (hasattr(X, "columns") and dtypes is not None
            and any(not isinstance(d, np.dtype) for d in dtypes)):
        try:
            return X.to_numpy(dtype=np.float64, na_value=np.nan)
        except (TypeError, ValueError):
            pass
    return np.asarray(X)
