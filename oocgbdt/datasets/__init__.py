"""Small real datasets shipped with oocgbdt for the quick start and examples.

``california_housing.tsv.gz``: 20,640 rows x 8 numeric features, regression label ``target``
(median house value in USD). Origin, license and attribution are in ``README.md`` in this folder.
"""
from __future__ import annotations

import atexit
import contextlib
import pathlib
from importlib import resources

__all__ = ["QUICKSTART_LABEL", "quickstart_path"]

_QUICKSTART_FILE = "california_housing.tsv.gz"
#: Name of the label column of the quick-start file.
QUICKSTART_LABEL = "target"

_files = contextlib.ExitStack()
atexit.register(_files.close)


def quickstart_path() -> pathlib.Path:
    """Path of the shipped quick-start file ``california_housing.tsv.gz``.

    The file is a gzip-compressed TSV with a header row: 20,640 rows, 8 numeric features
    (median_income, housing_median_age, total_rooms, total_bedrooms, population, households,
    latitude, longitude) and the regression label ``target`` (median house value, USD),
    504,222 bytes. See ``README.md`` beside it for origin, license and attribution
    (PMLB ``537_houses``; Pace & Barry 1997, StatLib).

    Returns
    -------
    pathlib.Path
        A real file on disk. If the package is installed in a zip archive, the file is
        extracted to a temporary location that lives until the interpreter exits.

    Examples
    --------
    >>> from oocgbdt.datasets import quickstart_path
    >>> from oocgbdt.io.convert import convert
    >>> ds = convert(quickstart_path(), "housing.zarr", label="target")   # doctest: +SKIP
    """
    ref = resources.files(__name__).joinpath(_QUICKSTART_FILE)
    if isinstance(ref, pathlib.Path):
        return ref
    return pathlib.Path(_files.enter_context(resources.as_file(ref)))
