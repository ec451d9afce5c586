"""oocgbdt: out-of-core gradient-boosted decision trees on Dask.

Public API: :func:`train` (functional), :class:`Booster` (fitted model), the scikit-learn
estimators :class:`GBDTRegressor` and :class:`GBDTClassifier`, and LightGBM's training callbacks
(:func:`early_stopping`, :func:`log_evaluation`, :func:`record_evaluation`,
:func:`reset_parameter`, :class:`EarlyStopException`). They are imported on first use,
so ``oocgbdt.kernels`` and ``oocgbdt.core`` can be used without importing dask.
"""
from importlib import import_module

__version__ = "0.1.0"

_CALLBACKS = ("early_stopping", "log_evaluation", "record_evaluation", "reset_parameter",
              "EarlyStopException", "CallbackEnv")

__all__ = ["train", "Booster", "GBDTRegressor", "GBDTClassifier", *_CALLBACKS, "__version__"]

_LAZY = {"train": "oocgbdt.dask.training", "Booster": "oocgbdt.dask.predict",
         "GBDTRegressor": "oocgbdt.sklearn", "GBDTClassifier": "oocgbdt.sklearn",
         **{name: "oocgbdt.core.callback" for name in _CALLBACKS}}


def __getattr__(name):
    if name in _LAZY:
        value = getattr(import_module(_LAZY[name]), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'oocgbdt' has no attribute {name!r}")


def __dir__():
    return sorted(list(globals()) + list(_LAZY))
