"""In-memory objects built on NumPy and the kernels: no dask here."""
