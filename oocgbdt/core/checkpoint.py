"""This module contains a fit's progress as the caller receives it, round by round
(:class:`FitProgress`), and its checkpoint file (:func:`write_checkpoint`,
:func:`read_checkpoint`).

The boosting loop (:func:`oocgbdt.core.boosting.boost`) reports each completed round as a
:func:`~oocgbdt.core.boosting.round_state` dict: its trees, evaluations, early-stopping and
feature-screening state. :class:`FitProgress` keeps them in order; from them a fit continues
(``continuation`` of :func:`~oocgbdt.core.boosting.boost`: the trees so far as the model whose
raw scores the partitions start from, the history as the fit's own) to the model one
uninterrupted fit gives, bit for bit, because every random stream of a round is keyed by the
round's number. A checkpoint file is that state as strict JSON, with the model so far in
oocgbdt's model format (:meth:`~oocgbdt.core.booster.Booster.to_dict`), written atomically.
"""
from __future__ import annotations

import json
import os
import threading
import uuid
from pathlib import Path

import numpy as np

from oocgbdt.core.booster import Booster, _decode_floats, _encode, file_has_format

__all__ = ["CHECKPOINT_FORMAT", "FitProgress", "check_checkpoint_path", "read_checkpoint",
           "write_checkpoint"]

CHECKPOINT_FORMAT = "oocgbdt-checkpoint"
CHECKPOINT_VERSION = 1


class FitProgress:
    """The completed rounds of one fit that reached the caller, in order.

    Parameters
    ----------
    begin : int
        The fit's first round in the whole model (the rounds of its ``init_model``).
    n_outputs : int
        Trees per round.

    Attributes
    ----------
    trees, tree_stats : list
        The fit's trees so far (``n_outputs`` per round) and their statistics.
    init_score : ndarray of float64 or None
        The fit's initial score (None before the first round, or for a continued model).
    evals_result : dict
        ``{set: {metric: [value per round]}}`` of the fit's rounds.
    best : list
        Early-stopping state: ``[set, metric, best score, its round of the fit]`` per pair.
    screening_scores : ndarray or None; screening_rows : list of ndarray
        Feature screening state after the last round, and each round's features.
    stop : int or None
        Early stopping ended the fit after its last round, at this 1-based round of the fit.
    position_biases : ndarray of float32 or None
        Unbiased LambdaRank's position bias factors after the last round.
    """

    def __init__(self, begin, n_outputs):
        self.begin, self.n_outputs = int(begin), int(n_outputs)
        self.trees, self.tree_stats = [], []
        self.init_score = None
        self.evals_result = {}
        self.best = []
        self.screening_scores, self.screening_rows = None, []
        self.stop = None
        self.position_biases = None
        #: ``on_rounds(progress)``, run by :meth:`poll` on the caller's thread when rounds were
        #: added since the last poll (the periodic checkpoint).
        self.on_rounds = None
        self._polled = 0
        self._closed = False
        self._lock = threading.Lock()

    def poll(self) -> None:
        """Run ``on_rounds`` if rounds were added since the last call."""
        if self.on_rounds is not None and self.rounds != self._polled:
            self._polled = self.rounds
            self.on_rounds(self)

    @property
    def rounds(self) -> int:
        """Completed rounds of the fit."""
        return len(self.trees) // self.n_outputs

    @property
    def end(self) -> int:
        """The next round to train, counted in the whole model."""
        return self.begin + self.rounds

    def add(self, state) -> bool:
        """Keep one round's :func:`~oocgbdt.core.boosting.round_state` (or its pickle, as a loop
        on workers sends it) if it is the next round; returns whether it was kept (a round
        already kept, sent again by a fit continued after a lost worker, is not)."""
        if isinstance(state, (bytes, bytearray, memoryview)):
            from pickle import loads
            state = loads(state)
        with self._lock:
            if self._closed or int(state["round"]) != self.end:
                return False
            if not self.trees:  # a continued part of the fit reports zeros: the scores
                # it starts from hold the fit's initial score already
                self.init_score = np.asarray(state["init_score"], dtype=np.float64)
            self.trees.extend(state["trees"])
            self.tree_stats.extend(state["tree_stats"])
            for name, by_metric in state["evals"].items():
                for m, v in by_metric.items():
                    self.evals_result.setdefault(name, {}).setdefault(m, []).append(float(v))
            self.best = [list(b) for b in state["best"]]
            if state["screening_scores"] is not None:
                self.screening_scores = np.asarray(state["screening_scores"], dtype=np.float64)
                self.screening_rows.append(np.asarray(state["screening_row"], dtype=np.int64))
            self.stop = state["stop"]
            if state.get("position_biases") is not None:
                self.position_biases = np.asarray(state["position_biases"], dtype=np.float32)
            return True

    def close(self) -> None:
        """Keep no more rounds (the fit gave up: its checkpoint and error say what it had)."""
        with self._lock:
            self._closed = True

    def truncate(self, rounds) -> None:
        """Keep the first ``rounds`` rounds only (a callback stopped the fit there)."""
        with self._lock:
            if rounds >= self.rounds:
                return
            self.trees = self.trees[:rounds * self.n_outputs]
            self.tree_stats = self.tree_stats[:rounds * self.n_outputs]
            self.evals_result = {n: {m: v[:rounds] for m, v in bm.items()}
                                 for n, bm in self.evals_result.items()}
            self.screening_rows = self.screening_rows[:rounds]

    def history(self) -> dict:
        """The ``history`` of :func:`~oocgbdt.core.boosting.boost`'s ``continuation``."""
        with self._lock:
            return dict(rounds=self.rounds, best=[list(b) for b in self.best],
                        evals_result={n: {m: list(v) for m, v in bm.items()}
                                      for n, bm in self.evals_result.items()})

    def model(self, init_booster, make_booster) -> Booster | None:
        """The model so far: ``init_booster``'s trees (the fit's ``init_model``, or None) then
        the fit's; ``make_booster(trees, init_score, screening_history, screening_scores)``
        builds it. None before the first round."""
        with self._lock:
            if not self.trees:
                return None
            trees = list(self.trees)
            init = self.init_score
            history = scores = None
            if self.screening_scores is not None:
                prior = (getattr(init_booster, "screening_history_", None) or []) \
                    if init_booster is not None else []
                history = list(prior) + list(self.screening_rows)
                scores = self.screening_scores
        if init_booster is not None:
            trees, init = list(init_booster.trees) + trees, init_booster.init_score
        return make_booster(trees, init, history, scores)

    def to_dict(self) -> dict:
        with self._lock:
            return dict(begin=self.begin, n_outputs=self.n_outputs, rounds=self.rounds,
                        init_score=self.init_score, evals_result=self.evals_result,
                        best=self.best, tree_stats=self.tree_stats, stop=self.stop,
                        screening_rows=self.screening_rows,
                        position_biases=self.position_biases)

    @classmethod
    def from_dict(cls, d, trees, screening_scores) -> "FitProgress":
        """The progress of a checkpoint's ``fit`` section, with the fit's ``trees`` (the
        checkpoint model's last ``rounds`` rounds) and screening scores."""
        p = cls(d["begin"], d["n_outputs"])
        p.trees = list(trees)
        if len(p.trees) != int(d["rounds"]) * p.n_outputs:
            raise ValueError(f"checkpoint: {len(p.trees)} trees for {d['rounds']} rounds of "
                             f"{p.n_outputs} tree(s)")
        p.tree_stats = list(d["tree_stats"])
        p.init_score = (None if d["init_score"] is None
                        else np.asarray(_decode_floats(d["init_score"]), dtype=np.float64))
        p.evals_result = {n: {m: _decode_floats(v) for m, v in bm.items()}
                          for n, bm in d["evals_result"].items()}
        p.best = [[s, m, float(score), int(r)] for s, m, score, r in d["best"]]
        p.stop = d["stop"]
        biases = d.get("position_biases")
        p.position_biases = (None if biases is None
                             else np.asarray(_decode_floats(biases), dtype=np.float32))
        p.screening_rows = [np.asarray(r, dtype=np.int64) for r in d["screening_rows"]]
        p.screening_scores = (None if screening_scores is None
                              else np.asarray(screening_scores, dtype=np.float64))
        return p


def check_checkpoint_path(path, resume=False):
    """Check ``checkpoint_path`` before any work: its folder exists, and a file already there
    is an oocgbdt checkpoint (never overwritten otherwise); with ``resume``, that file exists.

    Raises
    ------
    ValueError
        ``path`` is a directory, its folder does not exist, or it holds a file that is not an
        oocgbdt checkpoint.
    FileNotFoundError
        ``resume`` and no checkpoint at ``path``.
    """
    if path is None:
        if resume:
            raise ValueError("resume=True needs params['checkpoint_path'], the checkpoint to "
                             "continue from; got None")
        return
    p = Path(path)
    if p.is_dir():
        raise ValueError(f"checkpoint_path {str(p)!r} is a directory; expected a file path")
    if not p.parent.is_dir():
        raise ValueError(f"checkpoint_path {str(p)!r}: its folder {str(p.parent)!r} does not "
                         f"exist")
    if p.exists() and not file_has_format(p, CHECKPOINT_FORMAT):
        raise ValueError(f"checkpoint_path {str(p)!r} exists and is not an oocgbdt checkpoint; "
                         f"it is never overwritten: choose another path or remove the file")
    if resume and not p.exists():
        raise FileNotFoundError(f"resume=True: no checkpoint at {str(p)!r}")


def write_checkpoint(path, model: Booster, progress: FitProgress, fit: dict) -> None:
    """Write ``model`` (the model so far), ``progress`` and ``fit`` (what a resumed fit must
    match: ``params``, ``n_rows``, ``n_features``, ``n_estimators``) to ``path`` atomically
    (a temporary file in the same folder, then ``os.replace``)."""
    text = json.dumps(_encode({"format": CHECKPOINT_FORMAT, "version": CHECKPOINT_VERSION,
                               "fit": dict(fit, progress=progress.to_dict()),
                               "model": model.to_dict()}), allow_nan=False)
    path = Path(path)
    tmp = path.with_name(f".{path.name}.{uuid.uuid4().hex[:12]}.tmp")
    try:
        with open(tmp, "x") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        if tmp.exists():
            tmp.unlink()
        raise


def read_checkpoint(path):
    """``(model, progress, fit)`` of a checkpoint file (see :func:`write_checkpoint`).

    Raises
    ------
    ValueError
        Not an oocgbdt checkpoint, or of another version.
    """
    with open(path) as fh:
        d = json.load(fh)
    if not isinstance(d, dict) or d.get("format") != CHECKPOINT_FORMAT:
        raise ValueError(f"{str(path)!r} is not an oocgbdt checkpoint")
    if d.get("version") != CHECKPOINT_VERSION:
        raise ValueError(f"unsupported oocgbdt checkpoint version {d.get('version')!r}; this "
                         f"version of oocgbdt reads version {CHECKPOINT_VERSION}")
    model = Booster.from_dict(d["model"])
    fit = d["fit"]
    p = fit["progress"]
    n = int(p["rounds"]) * int(p["n_outputs"])
    progress = FitProgress.from_dict(p, model.trees[len(model.trees) - n:],
                                     model.screening_scores_)
    return model, progress, fit
