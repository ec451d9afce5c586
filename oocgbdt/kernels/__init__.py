"""Numba and NumPy kernels: the hot loops of oocgbdt. Never imports dask."""
