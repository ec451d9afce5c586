"""The io layer: files to and from an oocgbdt dataset.

An oocgbdt dataset is a Zarr store of row-chunked features ``X``, labels ``y`` and optional
sample weights (:mod:`oocgbdt.io.dataset`: the layout, :func:`open_dataset`,
:func:`write_dataset`, :class:`Dataset`). :func:`convert` (:mod:`oocgbdt.io.convert`) streams
CSV/TSV, Parquet and LibSVM files into one; :mod:`oocgbdt.io.predictions` reads the features
of ``oocgbdt predict`` and writes its predictions (CSV/TSV or Zarr). Every writer works in a
temporary sibling renamed into place when complete, and replaces an existing output only when
asked.

The layer sits beside :mod:`oocgbdt.runtime`, below :mod:`oocgbdt.dask`: it uses Zarr, Dask
arrays and pandas, never a Dask cluster. Importing it loads the dataset module (Dask arrays and
Zarr); pandas and pyarrow are imported when a file is first read.

Note that the name ``convert`` in this package is the function: the module is
``oocgbdt.io.convert`` in ``from oocgbdt.io.convert import ...`` or
``importlib.import_module("oocgbdt.io.convert")``.
"""
from oocgbdt.io.convert import convert
from oocgbdt.io.dataset import Dataset, open_dataset, write_dataset

__all__ = ["convert", "open_dataset", "write_dataset", "Dataset"]
