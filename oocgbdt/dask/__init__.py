"""The Dask layer: building Dask graphs (input normalization, blockwise binning and bundling,
partitions, cache writes, :func:`~oocgbdt.dask.training.train`, lazy prediction).

Importing it registers lazy prediction with :class:`~oocgbdt.core.booster.Booster`.
"""
from oocgbdt.dask import predict as _predict  # noqa: F401  (registers lazy prediction)
