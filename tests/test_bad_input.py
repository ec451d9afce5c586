"""Bad input fails fast and clearly: through ``oocgbdt.train`` and the estimators, NumPy and
Dask, every error names the argument, what was expected and what was found, and is raised
before any training work (bin fitting, chunk loading, boosting) starts; on a client's cluster
the labels, weights and init scores are checked after the memory plan (which needs the bin
sample), still before the disk cache, chunk loading and boosting."""
import dask.array as da
import numpy as np
import pytest

import oocgbdt
import oocgbdt.dask.training as training
from oocgbdt import GBDTClassifier, GBDTRegressor

N, F = 100, 4


@pytest.fixture(autouse=True)
def no_training(request, monkeypatch):
    """Any step of training proper fails the test. In process and on the embedded cluster
    the fit's stages (``_fit``: bin fitting, the first pass over X, onwards) never start; on
    a client's cluster, where ``_fit`` checks the labels, weights and init scores after the
    memory plan (``check_inputs``), the bin sample may run but not the disk cache, chunk
    loading or the boosting loop (also when it runs as a task on a worker: same module
    global).

    Tests that must train request the ``allow_training`` fixture.
    """
    if "allow_training" in request.fixturenames:
        return

    def forbidden(*args, **kwargs):
        raise AssertionError("training started before the input was rejected")
    real_fit = training._fit

    def fit(*args, check_inputs=None, **kwargs):
        if check_inputs is None:  # the inputs were checked before: bad ones never get here
            forbidden()
        return real_fit(*args, check_inputs=check_inputs, **kwargs)
    monkeypatch.setattr(training, "_fit", fit)
    for name in ("open_disk_cache", "partition_tasks", "cached_partition_tasks",
                 "run_boosting"):
        monkeypatch.setattr(training, name, forbidden)


@pytest.fixture(scope="module")
def cluster():
    """Explicit (non-default) client for Dask input, so no embedded cluster starts per test."""
    from distributed import Client, LocalCluster
    with LocalCluster(n_workers=1, threads_per_worker=2, processes=False,
                      dashboard_address=":0") as lc, Client(lc, set_as_default=False) as c:
        yield c


@pytest.fixture
def allow_training():
    """Marker fixture: this test trains models (see ``no_training``)."""


def _data(seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(N, F)).astype(np.float32)
    y = (X[:, 0] > 0).astype(np.float64)
    return X, y


def _dask(a, rows=25):
    return da.from_array(a, chunks=(rows,) + a.shape[1:])


def _poison(block):
    raise AssertionError("data was read: validation should have used metadata only")


def _poisoned(a, rows=25):
    """A Dask array with a's metadata whose values cannot be computed."""
    d = _dask(a, rows)
    return d.map_blocks(_poison, dtype=d.dtype)


BINARY = dict(objective="binary", n_estimators=2)


# ---------------------------------------------------------------------------------------------
# X shape, rows, chunks, dtype
# ---------------------------------------------------------------------------------------------


def test_X_not_2d(cluster):
    X, y = _data()
    msg = (r"X must be 2-D of shape \(n_samples, n_features\), got 1 dimension\(s\) with "
           r"shape \(100,\)")
    with pytest.raises(ValueError, match=msg):
        oocgbdt.train(BINARY, X[:, 0], y)
    with pytest.raises(ValueError, match=msg):
        GBDTRegressor().fit(X[:, 0], y)
    with pytest.raises(ValueError, match=msg):
        GBDTClassifier().fit(_dask(X[:, 0]), _poisoned(y), client=cluster)
    msg3 = r"X must be 2-D .*got 3 dimension\(s\) with shape \(100, 4, 1\)"
    with pytest.raises(ValueError, match=msg3):
        oocgbdt.train(BINARY, _dask(X[:, :, None]), _poisoned(y), client=cluster)
    with pytest.raises(ValueError, match=msg3):
        GBDTRegressor().fit(X[:, :, None], y)


def test_y_length_differs_from_X_rows(cluster):
    X, y = _data()
    msg = r"y has 99 rows but X has 100 rows; they must match"
    with pytest.raises(ValueError, match=msg):
        oocgbdt.train(BINARY, X, y[:-1])
    with pytest.raises(ValueError, match=msg):
        oocgbdt.train(BINARY, _dask(X), _poisoned(y[:-1]), client=cluster)
    with pytest.raises(ValueError, match=msg):
        GBDTRegressor().fit(X, y[:-1])
    with pytest.raises(ValueError, match=msg):
        GBDTClassifier().fit(_dask(X), _poisoned(y[:-1]), client=cluster)
    msg_w = r"sample_weight has 101 rows but X has 100 rows; they must match"
    with pytest.raises(ValueError, match=msg_w):
        oocgbdt.train(BINARY, X, y, sample_weight=np.ones(N + 1))
    with pytest.raises(ValueError, match=msg_w):
        GBDTRegressor().fit(_dask(X), _dask(y), sample_weight=_poisoned(np.ones(N + 1)),
                            client=cluster)


def test_unknown_chunk_sizes(cluster):
    X, y = _data()
    Xd, yd = _dask(X), _dask(y)
    keep = yd > 0  # boolean indexing: chunk sizes become NaN
    msg = (r"X has unknown chunk sizes along rows \(for example after boolean indexing\); "
           r"call X = X.compute_chunk_sizes\(\) first")
    with pytest.raises(ValueError, match=msg):
        oocgbdt.train(BINARY, Xd[keep], yd[keep], client=cluster)
    with pytest.raises(ValueError, match=msg):
        GBDTClassifier().fit(Xd[keep], yd[keep], client=cluster)
    with pytest.raises(ValueError, match=r"y has unknown chunk sizes along rows"):
        oocgbdt.train(BINARY, Xd, yd[yd > -1], client=cluster)
    with pytest.raises(ValueError, match=r"y has unknown chunk sizes along rows"):
        GBDTRegressor().fit(Xd, yd[yd > -1], client=cluster)


def test_zero_rows(cluster):
    X, y = _data()
    msg = r"X has 0 rows; at least 1 row is required"
    with pytest.raises(ValueError, match=msg):
        oocgbdt.train(BINARY, X[:0], y[:0])
    with pytest.raises(ValueError, match=msg):
        oocgbdt.train(BINARY, _dask(X)[:0], _dask(y)[:0], client=cluster)
    with pytest.raises(ValueError, match=msg):
        GBDTClassifier().fit(_dask(X)[:0], _dask(y)[:0], client=cluster)
    # scikit-learn's own message for in-memory input
    with pytest.raises(ValueError, match=r"Found array with 0 sample\(s\) \(shape=\(0, 4\)\) "
                                         r"while a minimum of 1 is required by GBDTRegressor"):
        GBDTRegressor().fit(X[:0], y[:0])


@pytest.mark.parametrize("kind", ["str", "object-str", "dask-str"])
def test_non_numeric_X(kind, cluster):
    X, y = _data()
    if kind == "str":
        Xs = X.astype(str)  # numeric strings are still strings: not parsed silently
        exc, msg = TypeError, r"X must have a numeric dtype, got dtype <U\d+\. Encode strings"
    elif kind == "object-str":
        Xs = X.astype(object)
        Xs[3, 2] = "red"
        exc, msg = TypeError, (r"X must be numeric; it is an object array holding a value "
                               r"that is not a number")
    else:
        Xs = _dask(X.astype(str))
        exc, msg = TypeError, r"X must have a numeric dtype, got dtype <U\d+\. Encode strings"
    with pytest.raises(exc, match=msg):
        oocgbdt.train(BINARY, Xs, y, client=cluster if kind == "dask-str" else None)
    if kind == "object-str":  # scikit-learn converts object arrays itself
        exc, msg = ValueError, r"X must be numeric: could not convert string to float: 'red'"
    with pytest.raises(exc, match=msg):
        GBDTClassifier().fit(Xs, y, client=cluster if kind == "dask-str" else None)


def test_X_chunked_along_columns_is_rechunked(allow_training, cluster):
    """Column chunks are merged automatically; the model is the one of whole-row chunks."""
    X, y = _data()
    whole = oocgbdt.train(dict(BINARY, chunk_rows=25), _dask(X), _dask(y), client=cluster)
    split = da.from_array(X, chunks=(25, 1))
    assert len(split.chunks[1]) == F
    by_cols = oocgbdt.train(dict(BINARY, chunk_rows=25), split, _dask(y), client=cluster)
    assert by_cols == whole
    np.testing.assert_array_equal(by_cols.predict(X), whole.predict(X))
    est = GBDTClassifier(n_estimators=2).fit(split, _dask(y), client=cluster)
    ref = GBDTClassifier(n_estimators=2).fit(_dask(X), _dask(y), client=cluster)
    np.testing.assert_array_equal(est.predict_proba(X), ref.predict_proba(X))
    np.testing.assert_array_equal(est.predict(split).compute(), ref.predict(X))
    # Object arrays of numbers are numbers (what scikit-learn does with them, too).
    np.testing.assert_array_equal(
        oocgbdt.train(BINARY, X.astype(object), y).predict(X),
        oocgbdt.train(BINARY, X, y).predict(X))


# ---------------------------------------------------------------------------------------------
# labels and weights
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("bad", [np.nan, np.inf])
def test_nan_or_inf_in_y(bad, cluster):
    X, y = _data()
    yb = y.copy()
    yb[[5, 50]] = bad
    msg = r"y must be finite; found 2 NaN or infinite value\(s\)"
    with pytest.raises(ValueError, match=msg):
        oocgbdt.train(BINARY, X, yb)
    with pytest.raises(ValueError, match=msg):
        oocgbdt.train(dict(objective="regression"), _dask(X), _dask(yb), client=cluster)
    with pytest.raises(ValueError, match=msg):
        GBDTRegressor().fit(_dask(X), _dask(yb), client=cluster)
    with pytest.raises(ValueError, match=r"y must be finite; found the label\(s\) \[(nan|inf)\]"):
        GBDTClassifier().fit(_dask(X), _dask(yb), client=cluster)
    # scikit-learn's own message for in-memory input
    sk = r"Input y contains NaN" if np.isnan(bad) else r"Input y contains infinity"
    for Est in (GBDTRegressor, GBDTClassifier):
        with pytest.raises(ValueError, match=sk):
            Est().fit(X, yb)
    # eval sets too
    with pytest.raises(ValueError, match=r"eval_set 'valid_0' y must be finite; found 2"):
        oocgbdt.train(BINARY, X, y, eval_set=[(X, yb)])


@pytest.mark.parametrize("bad", [np.nan, -np.inf])
def test_nan_or_inf_in_sample_weight(bad, cluster):
    X, y = _data()
    w = np.ones(N)
    w[[1, 2, 3]] = bad
    msg = r"sample_weight must be finite; found 3 NaN or infinite value\(s\)"
    with pytest.raises(ValueError, match=msg):
        oocgbdt.train(BINARY, X, y, sample_weight=w)
    with pytest.raises(ValueError, match=msg):
        oocgbdt.train(BINARY, _dask(X), _dask(y), sample_weight=_dask(w), client=cluster)
    for Est in (GBDTRegressor, GBDTClassifier):
        with pytest.raises(ValueError, match=msg):
            Est().fit(X, y, sample_weight=w)
        with pytest.raises(ValueError, match=msg):
            Est().fit(_dask(X), _dask(y), sample_weight=_dask(w), client=cluster)


def test_negative_or_all_zero_sample_weight(cluster):
    X, y = _data()
    w = np.ones(N)
    w[7] = -0.5
    msg = r"sample_weight must be >= 0; found 1 negative value\(s\)"
    with pytest.raises(ValueError, match=msg):
        oocgbdt.train(BINARY, X, y, sample_weight=w)
    with pytest.raises(ValueError, match=msg):
        oocgbdt.train(BINARY, _dask(X), _dask(y), sample_weight=_dask(w), client=cluster)
    with pytest.raises(ValueError, match=msg):
        GBDTRegressor().fit(X, y, sample_weight=w)
    with pytest.raises(ValueError, match=msg):
        GBDTClassifier().fit(_dask(X), _dask(y), sample_weight=_dask(w), client=cluster)
    zero = (r"sample_weight must have at least one weight > 0; found all 100 weight\(s\) "
            r"equal to zero")
    with pytest.raises(ValueError, match=zero):
        oocgbdt.train(BINARY, X, y, sample_weight=np.zeros(N))
    with pytest.raises(ValueError, match=zero):
        GBDTClassifier().fit(X, y, sample_weight=np.zeros(N))


def test_cross_entropy_lambda_refuses_a_zero_weight(cluster):
    """As LightGBM (``[cross_entropy_lambda]: at least one weight is non-positive``), before
    any work."""
    lgb = pytest.importorskip("lightgbm")
    X, y = _data()
    w = np.ones(N)
    w[[3, 9]] = 0.0
    with pytest.raises(lgb.basic.LightGBMError, match="at least one weight is non-positive"):
        lgb.train({"objective": "xentlambda", "verbose": -1}, lgb.Dataset(X, y, weight=w), 1)
    msg = (r"sample_weight must be > 0 for objective 'cross_entropy_lambda' \(LightGBM refuses "
           r"a non-positive weight\); found 2 weight\(s\) equal to zero")
    params = {"objective": "xentlambda", "n_estimators": 2}
    with pytest.raises(ValueError, match=msg):
        oocgbdt.train(params, X, y, sample_weight=w)
    with pytest.raises(ValueError, match=msg):
        oocgbdt.train(params, _dask(X), _dask(y), sample_weight=_dask(w), client=cluster)


def test_classifier_given_one_class(cluster):
    X, _ = _data()
    msg = r"GBDTClassifier needs at least 2 classes in y; found 1 class: \['a'\]"
    with pytest.raises(ValueError, match=msg):
        GBDTClassifier().fit(X, np.full(N, "a"))
    with pytest.raises(ValueError, match=msg):
        GBDTClassifier().fit(_dask(X), _dask(np.full(N, "a")), client=cluster)
    with pytest.raises(ValueError, match=r"found 1 class: \[1\.0\]"):
        GBDTClassifier().fit(_dask(X), _dask(np.ones(N)), client=cluster)


def test_binary_labels_not_0_or_1(cluster):
    X, y = _data()
    yb = y.copy()
    yb[:3] = [2, -1, 0.5]
    msg = (r"y must contain only the labels 0 and 1 for objective 'binary', found 3 other "
           r"value\(s\)")
    with pytest.raises(ValueError, match=msg):
        oocgbdt.train(BINARY, X, yb)
    with pytest.raises(ValueError, match=msg):
        oocgbdt.train(BINARY, _dask(X), _dask(yb), client=cluster)


def test_multiclass_labels_outside_num_class(cluster):
    X, y = _data()
    ym = y.copy()
    ym[:2] = [3, 4]
    params = dict(objective="multiclass", num_class=3, n_estimators=2)
    msg = (r"y must contain integer class labels in \[0, num_class\) = \[0, 3\) for objective "
           r"'multiclass', found 2 other value\(s\)")
    with pytest.raises(ValueError, match=msg):
        oocgbdt.train(params, X, ym)
    with pytest.raises(ValueError, match=msg):
        oocgbdt.train(params, _dask(X), _dask(ym), client=cluster)
    ym[:2] = [1.5, 0]  # not an integer
    with pytest.raises(ValueError, match=r"y must contain integer class labels.*found 1 other"):
        oocgbdt.train(params, X, ym)


# ---------------------------------------------------------------------------------------------
# eval sets
# ---------------------------------------------------------------------------------------------


def test_eval_set_with_another_feature_count(cluster):
    X, y = _data()
    msg = r"eval_set\[0\] X has 3 features but X has 4; they must match"
    with pytest.raises(ValueError, match=msg):
        oocgbdt.train(BINARY, X, y, eval_set=[(X[:, :3], y)])
    with pytest.raises(ValueError, match=msg):
        oocgbdt.train(BINARY, _dask(X), _poisoned(y), eval_set=[(_dask(X[:, :3]), _poisoned(y))],
                      client=cluster)
    with pytest.raises(ValueError, match=msg):
        GBDTRegressor().fit(X, y, eval_set=[(X[:, :3], y)])
    with pytest.raises(ValueError, match=r"eval_set\[1\] X has 5 features but X has 4"):
        GBDTRegressor().fit(_dask(X), _poisoned(y), client=cluster,
                            eval_set=[(X, y), (_dask(np.ones((N, 5))), _poisoned(y))])


def test_eval_set_dataframe_with_other_columns_than_fit():
    """Scored by position, a reordered eval frame gave wrong metrics and early stopping."""
    import pandas as pd
    X, y = _data()
    df = pd.DataFrame(X, columns=["a", "b", "c", "d"])
    for cols in (["d", "b", "c", "a"], ["w", "x", "y", "z"]):
        other = pd.DataFrame(X, columns=cols)
        with pytest.raises(ValueError, match=r"eval_set\[0\] X: The feature names should match"):
            GBDTRegressor().fit(df, y, eval_set=[(other, y)])


def test_eval_names_and_eval_sample_weight_must_fit_the_eval_sets(cluster):
    X, y = _data()
    ev = [(X, y), (X[:50], y[:50])]
    with pytest.raises(ValueError, match="eval_names must be distinct.*'a' is given more"):
        oocgbdt.train(BINARY, X, y, eval_set=ev, eval_names=["a", "a"])
    with pytest.raises(TypeError, match="eval_names must be a list of str"):
        oocgbdt.train(BINARY, X, y, eval_set=ev[:1], eval_names="a")
    for weights in ([np.ones(N)], [np.ones(N), None, np.ones(N)]):
        with pytest.raises(ValueError, match=f"eval_sample_weight has {len(weights)} entries "
                                             f"for 2 eval sets"):
            oocgbdt.train(BINARY, X, y, eval_set=ev, eval_sample_weight=weights)
    with pytest.raises(TypeError, match="eval_sample_weight must be a list.*got ndarray"):
        oocgbdt.train(BINARY, X, y, eval_set=ev[:1], eval_sample_weight=np.ones(N))
    with pytest.raises(ValueError, match="eval_names must be distinct"):
        GBDTRegressor().fit(_dask(X), _poisoned(y), eval_set=ev, eval_names=["v", "v"],
                             client=cluster)


def test_eval_labels_the_objective_cannot_take(cluster):
    """Eval labels were never checked: multiclass labels >= num_class failed late in the
    metric with an IndexError, binary labels 2 or 0.5 were scored silently."""
    X, y = _data()
    multi = dict(objective="multiclass", num_class=3, n_estimators=2)
    y3 = np.arange(N) % 3.0
    with pytest.raises(ValueError, match=r"eval_set 'valid_0' y must contain integer class "
                                         r"labels in \[0, num_class\) = \[0, 3\).*found.*7"):
        oocgbdt.train(multi, X, y3, eval_set=[(X, y3 + 5)])
    bad = y.copy()
    bad[:2] = [2.0, 0.5]
    with pytest.raises(ValueError, match="eval_set 'holdout' y must contain only the labels 0 "
                                         "and 1 for objective 'binary'"):
        oocgbdt.train(BINARY, _dask(X), _dask(y), eval_set=[(_dask(X), _dask(bad))],
                      eval_names=["holdout"], client=cluster)


def test_unknown_metric_on_an_estimator_fails_before_any_data_is_read(cluster):
    X, y = _data()
    for Est in (GBDTClassifier, GBDTRegressor):
        with pytest.raises(ValueError, match="got unknown metric 'foo'"):
            Est(metric="foo").fit(_poisoned(X), _poisoned(y), client=cluster)


def test_early_stopping_without_an_eval_set_or_metric():
    X, y = _data()
    with pytest.raises(ValueError, match="early_stopping_rounds=3 needs an eval set and a "
                                         "metric.*got no eval_set"):
        oocgbdt.train(dict(BINARY, early_stopping_rounds=3), X, y)
    with pytest.raises(ValueError, match="got metric=None"):
        oocgbdt.train(dict(BINARY, early_stopping_rounds=3, metric="None"), X, y,
                      eval_set=[(X, y)])
    with pytest.raises(ValueError, match="needs an eval set"):
        GBDTClassifier(early_stopping_rounds=3).fit(X, y)


def test_random_state_of_another_type():
    X, y = _data()
    for bad in (1.5, "0", True):
        with pytest.raises(TypeError, match="random_state must be None, an int"):
            GBDTRegressor(random_state=bad).fit(X, y)


def test_eval_set_with_unseen_class(cluster):
    X, y = _data()
    labels = np.array(["no", "yes"])[y.astype(int)]
    bad = labels.astype(object)
    bad[0] = "maybe"
    with pytest.raises(ValueError, match=r"eval_set\[0\] y has labels not seen in the training "
                                         r"labels \['no', 'yes'\]: found \['maybe'\]"):
        GBDTClassifier().fit(X, labels, eval_set=[(X, bad)])


# ---------------------------------------------------------------------------------------------
# parameters
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("num_leaves", [1, 0, -3])
def test_num_leaves_below_2(num_leaves, cluster):
    X, y = _data()
    msg = rf"num_leaves must be an integer >= 2 and <= 131072, got {num_leaves}\b"
    with pytest.raises(ValueError, match=msg):
        oocgbdt.train(dict(BINARY, num_leaves=num_leaves), X, y)
    with pytest.raises(ValueError, match=msg):
        oocgbdt.train(dict(BINARY, num_leaves=num_leaves), _dask(X), _poisoned(y), client=cluster)
    with pytest.raises(ValueError, match=msg):
        GBDTRegressor(num_leaves=num_leaves).fit(X, y)
    # Lazy y: rejected before the classifier reads the labels to find its classes.
    with pytest.raises(ValueError, match=msg):
        GBDTClassifier(num_leaves=num_leaves).fit(_dask(X), _poisoned(y), client=cluster)
    with pytest.raises(ValueError,
                       match=r"num_leaves \(given as 'max_leaves'\) must be an integer >= 2"):
        oocgbdt.train(dict(BINARY, max_leaves=num_leaves), X, y)


@pytest.mark.parametrize("learning_rate", [0, 0.0, -0.1, float("nan")])
def test_learning_rate_not_positive(learning_rate, cluster):
    X, y = _data()
    msg = rf"learning_rate must be a finite number > 0\.0, got {float(learning_rate)!r}"
    with pytest.raises(ValueError, match=msg):
        oocgbdt.train(dict(BINARY, learning_rate=learning_rate), X, y)
    with pytest.raises(ValueError, match=r"learning_rate must be a finite number > 0\.0"):
        GBDTRegressor(learning_rate=learning_rate).fit(X, y)
    with pytest.raises(ValueError, match=r"learning_rate must be a finite number > 0\.0"):
        GBDTClassifier(learning_rate=learning_rate).fit(_dask(X), _poisoned(y), client=cluster)
    with pytest.raises(ValueError, match=r"learning_rate \(given as 'eta'\) must be a finite"):
        oocgbdt.train(dict(BINARY, eta=learning_rate), X, y)


def test_unknown_parameter_suggests_the_close_name():
    X, y = _data()
    with pytest.raises(ValueError, match=r"Unknown parameter 'num_leave'; did you mean "
                                         r"'num_leaves'"):
        oocgbdt.train(dict(BINARY, num_leave=7), X, y)
    with pytest.raises(ValueError, match=r"Unknown parameter 'learning_rte'; did you mean "
                                         r"'learning_rate'"):
        oocgbdt.train(dict(BINARY, learning_rte=0.1), X, y)
    # The estimators take LightGBM keywords as LGBMModel does: an unknown one is named, with
    # the close name, when fit starts (before any data is read).
    for est in (GBDTRegressor(num_leave=7), GBDTClassifier().set_params(num_leave=7)):
        with pytest.raises(ValueError, match=r"Unknown parameter 'num_leave'; did you mean "
                                             r"'num_leaves'"):
            est.fit(X, y)


def test_bad_estimator_parameter_type():
    X, y = _data()
    with pytest.raises(TypeError, match=r"num_leaves must be an integer, got float 7\.5"):
        GBDTRegressor(num_leaves=7.5).fit(X, y)
    with pytest.raises(TypeError, match=r"min_data_in_leaf \(given as 'min_child_samples'\) "
                                        r"must be an integer, got str '20'"):
        GBDTClassifier(min_child_samples="20").fit(X, y)
    with pytest.raises(ValueError, match=r"seed \(given as 'random_state'\) must be an integer "
                                         r">= 0, got -1"):
        GBDTRegressor(random_state=-1).fit(X, y)
    with pytest.raises(ValueError, match=r"sample_weight must be numeric: could not convert "
                                         r"string to float: 'heavy'"):
        GBDTRegressor().fit(X, y, sample_weight=["heavy"] * N)


# ---------------------------------------------------------------------------------------------
# prediction
# ---------------------------------------------------------------------------------------------


def test_predict_with_another_feature_count(allow_training):
    X, y = _data()
    reg = GBDTRegressor(n_estimators=2).fit(X, y)
    clf = GBDTClassifier(n_estimators=2).fit(X, y)
    for est in (reg, clf):
        name = type(est).__name__
        with pytest.raises(ValueError, match=rf"X has 3 features, but {name} is expecting 4 "
                                             r"features as input"):
            est.predict(X[:, :3])
        with pytest.raises(ValueError, match=r"X has 5 features, but the model was trained on "
                                             r"4 features"):
            est.predict(_dask(np.ones((N, 5), dtype=np.float32)))
    with pytest.raises(ValueError, match=r"X has 3 features, but the model was trained on 4"):
        reg.booster_.predict(X[:, :3])
    with pytest.raises(ValueError, match=r"X has 3 features, but the model was trained on 4"):
        clf.predict_proba(_dask(X[:, :3]))
    with pytest.raises(ValueError, match=r"X must be 2-D of shape \(n_samples, 4\), got an "
                                         r"array with 1 dimension\(s\)"):
        reg.booster_.predict(X[0])
    with pytest.raises(ValueError, match=r"X must be 2-D .*got 1 dimension\(s\).*Reshape your"):
        reg.predict(X[0])
