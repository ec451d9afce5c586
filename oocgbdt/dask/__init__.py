"""The Dask layer: the only place that imports dask, distributed or zarr."""
