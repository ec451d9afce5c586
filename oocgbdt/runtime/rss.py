"""This module contains the measured side of the memory plan: a thread that samples the resident
set size (RSS) of its process while a fit runs and keeps the largest value.

:func:`start_peak_sampling` and :func:`stop_peak_sampling` run in the caller's process for a fit
in process, and on every worker (``Client.run``) for a fit on a cluster. Several workers of one
process (``LocalCluster(processes=False)``) share one sampler per fit. The RSS is what Dask's
memory monitor compares with ``memory_limit``.
"""
from __future__ import annotations

import threading

__all__ = ["PeakSampler", "start_peak_sampling", "stop_peak_sampling"]

_LOCK = threading.Lock()
_SAMPLERS: dict = {}


def _rss() -> int:
    import psutil
    return int(psutil.Process().memory_info().rss)


class PeakSampler:
    """Samples this process's RSS every ``interval`` seconds on a daemon thread.

    Attributes
    ----------
    start : int
        RSS when sampling began, bytes.
    peak : int
        Largest RSS seen so far, bytes (a peak shorter than ``interval`` may be missed).
    """

    def __init__(self, interval: float = 0.005):
        self.interval = float(interval)
        self.start = self.peak = _rss()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="oocgbdt-rss", daemon=True)
        self._thread.start()

    def _run(self):
        while not self._stop.wait(self.interval):
            rss = _rss()
            if rss > self.peak:
                self.peak = rss

    def stop(self) -> tuple:
        """Stop sampling; ``(start, peak)`` in bytes."""
        self._stop.set()
        self._thread.join()
        self.peak = max(self.peak, _rss())
        return self.start, self.peak


def start_peak_sampling(key: str, interval: float = 0.005) -> int:
    """Start sampling for the fit ``key`` in this process (once per process); the RSS now."""
    with _LOCK:
        entry = _SAMPLERS.get(key)
        if entry is None:
            entry = _SAMPLERS[key] = [PeakSampler(interval), 0]
        entry[1] += 1
        return entry[0].start


def stop_peak_sampling(key: str) -> tuple | None:
    """Stop the fit ``key``'s sampling in this process; ``(start, peak)`` bytes, or None when
    it was not sampling. Every caller of :func:`start_peak_sampling` gets the same values."""
    with _LOCK:
        entry = _SAMPLERS.get(key)
        if entry is None:
            return None
        if len(entry) == 2:  # first stop: freeze the values for the other callers
            entry.append(entry[0].stop())
        entry[1] -= 1
        if entry[1] <= 0:
            del _SAMPLERS[key]
        return entry[2]
