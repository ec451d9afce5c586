"""The exported LightGBM model served by other runtimes: onnxmltools' converter run in
onnxruntime, and treelite. Both compare in float32 (ONNX trees) or take the rows as given
(treelite's float64 margins), so the oracle is oocgbdt's prediction on the same float32 rows."""
import numpy as np
import pytest

from tests.core._helpers import fit_in_process

#: ONNX's tree ensemble sums float32 leaf values and applies a float32 sigmoid: a few float32
#: ulps of a probability in [0, 1] (2**-24 each) over a handful of trees.
FLOAT32_TOL = 1e-6


def _data(objective, seed=0, n=1200, f=6):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, f)).astype(np.float32)
    X[rng.random(X.shape) < 0.1] = np.nan
    z = np.nan_to_num(X[:, 0]) + 0.5 * np.nan_to_num(X[:, 1])
    if objective == "binary":
        return X, (z > 0).astype(float)
    if objective == "multiclass":
        return X, np.digitize(z, [-0.5, 0.5]).astype(float)
    return X, z + rng.normal(size=n) * 0.1


@pytest.mark.parametrize("objective,extra", [("binary", {}), ("multiclass", {"num_class": 3}),
                                             ("regression", {})])
def test_onnxruntime_runs_the_exported_model(objective, extra):
    onnxmltools = pytest.importorskip("onnxmltools")
    ort = pytest.importorskip("onnxruntime")
    pytest.importorskip("lightgbm")
    from onnxmltools.convert.common.data_types import FloatTensorType
    X, y = _data(objective)
    booster = fit_in_process(dict(objective=objective, n_estimators=6, num_leaves=8, **extra),
                             X, y)
    onx = onnxmltools.convert_lightgbm(booster.to_lightgbm(), zipmap=False,
                                       initial_types=[("X", FloatTensorType([None, X.shape[1]]))])
    session = ort.InferenceSession(onx.SerializeToString(), providers=["CPUExecutionProvider"])
    outputs = session.run(None, {"X": X})
    ours = booster.predict(X)
    if objective == "regression":
        theirs = outputs[0].reshape(-1)
    else:
        theirs = outputs[1]
        if objective == "binary":
            theirs = theirs[:, 1]
    assert theirs.shape == ours.shape
    assert np.abs(theirs - ours).max() <= FLOAT32_TOL


@pytest.mark.parametrize("objective,extra", [("binary", {}), ("multiclass", {"num_class": 3})])
def test_treelite_reads_the_exported_model(objective, extra, tmp_path):
    treelite = pytest.importorskip("treelite")
    X, y = _data(objective, seed=1)
    booster = fit_in_process(dict(objective=objective, n_estimators=6, num_leaves=8, **extra),
                             X, y)
    path = booster.save_model(tmp_path / "model.txt", format="lightgbm")
    model = treelite.frontend.load_lightgbm_model(str(path))
    margin = treelite.gtil.predict(model, X.astype(np.float64), pred_margin=True)
    raw = booster.predict(X.astype(np.float64), raw_score=True)
    # treelite walks the same float64 thresholds and sums float64 leaf values
    assert np.abs(margin.reshape(raw.shape) - raw).max() <= 1e-12
    # its sigmoid/softmax runs in float32
    prob = treelite.gtil.predict(model, X.astype(np.float64))
    assert np.abs(prob.reshape(booster.predict(X).shape) - booster.predict(X)).max() <= FLOAT32_TOL
