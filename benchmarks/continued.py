"""Check continued training: ``n`` rounds, then ``n`` more from that model (``init_model``), give
the model of one ``2 n`` round fit, bit for bit, in process and on a 2-worker LocalCluster.

Data: lightgbm_binary (``../shared/data`` or ``$OOCGBDT_DATA``), with bagging and EMA feature
screening on, so that the random streams keyed by round and the screening state must continue
too. Prints, per place, whether every tree is equal and the largest raw-score difference.

Run: ``python -m benchmarks.continued [n]`` (default 50).
"""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

PARAMS = dict(objective="binary", num_leaves=31, learning_rate=0.1, bagging_fraction=0.7,
              bagging_freq=1, feature_screening="ema", chunk_rows=2000, verbose=False)


def _data():
    import os

    import pandas as pd
    root = Path(os.environ.get("OOCGBDT_DATA", Path(__file__).resolve().parents[2] / "shared"
                               / "data"))
    a = pd.read_csv(root / "lightgbm_binary" / "binary.train", sep="\t",
                    header=None).to_numpy(np.float64)
    return a[:, 1:].astype(np.float32), a[:, 0]


def check(n, client=None):
    import oocgbdt
    X, y = _data()
    whole = oocgbdt.train(dict(PARAMS, n_estimators=2 * n), X, y, client=client)
    first = oocgbdt.train(dict(PARAMS, n_estimators=n), X, y, client=client)
    both = oocgbdt.train(dict(PARAMS, n_estimators=n), X, y, client=client, init_model=first)
    same = len(both.trees) == len(whole.trees) and all(
        a == b for a, b in zip(both.trees, whole.trees))
    diff = float(np.abs(both.predict(X, raw_score=True) - whole.predict(X, raw_score=True)).max())
    return same, diff, len(whole.trees)


def main(n=50):
    from distributed import Client, LocalCluster
    print(f"{'where':<22}{'trees':>7}{'every tree equal':>18}{'max|raw diff|':>15}")
    rows = [("in process",) + check(n)]
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=False,
                      dashboard_address=":0") as cluster, \
            Client(cluster, set_as_default=False) as client:
        rows.append(("2 workers",) + check(n, client))
    for where, same, diff, trees in rows:
        print(f"{where:<22}{trees:>7}{str(same):>18}{diff:>15.3g}")
    ok = all(same and diff == 0 for _, same, diff, _ in rows)
    print(f"{n} + {n} rounds == {2 * n} rounds: {'yes' if ok else 'NO'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(int(sys.argv[1]) if len(sys.argv) > 1 else 50))
