"""oocgbdt: out-of-core gradient-boosted decision trees on Dask.

Public API: :func:`train` (functional), :class:`Booster` (fitted model), and the scikit-learn
estimators :class:`GBDTRegressor` and :class:`GBDTClassifier`.
"""
from oocgbdt.dask.booster import Booster
from oocgbdt.dask.training import train
from oocgbdt.sklearn import GBDTClassifier, GBDTRegressor

__version__ = "0.1.0"

__all__ = ["train", "Booster", "GBDTRegressor", "GBDTClassifier", "__version__"]
