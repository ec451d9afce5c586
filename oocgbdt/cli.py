"""This module contains the ``oocgbdt`` command line: ``convert``, ``train``, ``predict``, ``export``, ``quickstart``.

Each command is a thin wrapper over the library (:func:`oocgbdt.io.convert.convert`,
:func:`oocgbdt.dask.training.train`, :meth:`oocgbdt.dask.predict.Booster.predict`), so the CLI and
Python code give the same results. Conventions shared by every command:

* Outputs are never replaced unless ``--overwrite`` is given, and are written atomically
  (temporary sibling, then rename): an interrupted command leaves no half-written file.
* User mistakes (missing files, bad parameters, existing outputs, mismatched data) print one line
  ``oocgbdt <command>: error: <message>`` to stderr and exit with status 2, without a traceback.
  Set the environment variable ``OOCGBDT_DEBUG=1`` to get the full traceback instead.
* :func:`main` returns the exit status instead of calling :func:`sys.exit` (the console script
  wrapper does that), so it can be called in-process: ``main(["train", "data.zarr", ...])``.
"""
from __future__ import annotations

import argparse
import os
import re
import sys
import time
from pathlib import Path

from oocgbdt.params import DEFAULT_CHUNK_ROWS

__all__ = ["main", "build_parser", "parse_param"]

_DEBUG_ENV = "OOCGBDT_DEBUG"
#: Exit status for user errors (same as argparse's usage errors).
_USER_ERROR = 2


class CLIError(Exception):
    """A user mistake: reported as one line on stderr, exit status 2."""


# ------------------------------------------------------------------------------------------
# Small helpers
# ------------------------------------------------------------------------------------------


def _version() -> str:
    try:
        from oocgbdt import __version__
        return __version__
    except Exception:  # pragma: no cover - a broken install should still answer --version
        from importlib.metadata import version
        return version("oocgbdt")


def _path(text) -> Path:
    return Path(os.path.expanduser(os.fspath(text))).absolute()


def _n(x: int) -> str:
    return f"{int(x):,}"


def _unescape_sep(sep):
    """``--sep`` as typed on a shell: ``\\t`` or ``tab`` means a tab, ``space`` any whitespace."""
    if sep is None:
        return None
    named = {"tab": "\t", "\\t": "\t", "comma": ",", "semicolon": ";", "pipe": "|",
             "space": r"\s+", "whitespace": r"\s+"}
    return named.get(sep.lower(), sep)


def _check_new_file(path: Path, overwrite: bool, what: str) -> None:
    """Fail fast (before any work) if ``path`` cannot be written as a new output file."""
    if path.is_dir():
        raise CLIError(f"{what} '{path}' is a directory; give a file path.")
    if path.exists() and not overwrite:
        raise CLIError(f"{what} '{path}' already exists; pass --overwrite to replace it.")
    if not path.parent.is_dir():
        raise CLIError(f"cannot write {what.lower()} '{path}': its folder '{path.parent}' does not exist.")


# ------------------------------------------------------------------------------------------
# --param NAME=VALUE parsing
# ------------------------------------------------------------------------------------------


def _generic_value(text: str):
    low = text.strip().lower()
    if low in ("true", "false"):
        return low == "true"
    try:
        return int(text)
    except ValueError:
        pass
    try:
        return float(text)
    except ValueError:
        return text


def parse_param(item: str):
    """Parse one ``NAME=VALUE`` of ``--param`` into ``(name, value)``.

    The value is read as int, then float, then bool (``true``/``false``), else kept as str.
    Where the parameter is known (:data:`oocgbdt.params.ALIASES`), its declared type refines
    this: str parameters keep the text as typed (``metric=1`` stays ``"1"``), bool parameters
    also accept ``1``/``0``, and ``none``/``null`` give None for parameters that accept None.

    Raises
    ------
    CLIError
        ``item`` has no ``=`` or an empty name.
    """
    if "=" not in item:
        raise CLIError(f"--param expects NAME=VALUE, got {item!r} (put DATA before --param, "
                       f"and give every parameter as name=value).")
    name, text = item.split("=", 1)
    name = name.strip()
    if not name:
        raise CLIError(f"--param expects NAME=VALUE, got {item!r} (empty name).")
    text = text.strip()
    value = _generic_value(text)
    try:
        from oocgbdt.params import ALIASES, PARAMETERS
    except ImportError:  # pragma: no cover
        return name, value
    canonical = ALIASES.get(name)
    if canonical is None:
        return name, value
    ptype = PARAMETERS[canonical].type
    # metric excepted: its text 'None' means "no metric" (None: the objective's default).
    if "None" in ptype and text.lower() in ("none", "null") and canonical != "metric":
        return name, None
    if ptype.startswith("str"):
        return name, text
    if ptype == "bool" and value in (0, 1) and not isinstance(value, bool):
        return name, bool(value)
    return name, value


def _collect_params(args) -> dict:
    """``--param`` items plus the ``--objective``/``--num-class``/``--cache``/``--cache-path``
    shortcuts as one dict; a shortcut and a ``--param`` of the same parameter must agree."""
    from oocgbdt.params import ALIASES

    params: dict = {}
    for item in args.param or ():
        name, value = parse_param(item)
        if name in params and params[name] != value:
            raise CLIError(f"parameter {name!r} given twice with different values "
                           f"({params[name]!r} and {value!r}).")
        params[name] = value
    cache_path = None if args.cache_path is None else str(_path(args.cache_path))
    checkpoint = getattr(args, "checkpoint", None)
    checkpoint = None if checkpoint is None else str(_path(checkpoint))
    for canonical, flag, value in (("objective", "--objective", args.objective),
                                   ("num_class", "--num-class", args.num_class),
                                   ("cache", "--cache", args.cache),
                                   ("cache_path", "--cache-path", cache_path),
                                   ("checkpoint_path", "--checkpoint", checkpoint),
                                   ("checkpoint_every", "--checkpoint-every",
                                    getattr(args, "checkpoint_every", None))):
        if value is None:
            continue
        for key, other in params.items():
            if ALIASES.get(key) == canonical and other != value and not (
                    canonical == "cache_path" and isinstance(other, str) and _path(other) == _path(value)):
                raise CLIError(f"{flag} {value} conflicts with --param {key}={other}; give it once.")
        if not any(ALIASES.get(k) == canonical for k in params):
            params[canonical] = value
    return params


# ------------------------------------------------------------------------------------------
# convert
# ------------------------------------------------------------------------------------------


def _cmd_convert(args) -> int:
    from oocgbdt.io.convert import convert, infer_format

    source, dest = _path(args.source), _path(args.dest)
    if not source.exists():
        raise CLIError(f"source '{source}' does not exist.")
    fmt = args.format or infer_format(source)
    label = args.label
    if label is None and fmt not in ("libsvm", "svm"):
        raise CLIError(f"--label NAME is required for {fmt} sources: the name (or 0-based "
                       f"position, for files without a header row) of the label column.")
    header = "infer"
    if args.header:
        header = 0
    elif args.no_header:
        header = None
    zero_based = {"auto": "auto", "true": True, "false": False}[args.zero_based]
    t0 = time.perf_counter()
    ds = convert(source, dest, label=label, fmt=args.format, chunk_rows=args.chunk_rows,
                 sep=_unescape_sep(args.sep), header=header, weight=args.weight, drop=args.drop,
                 n_features=args.n_features, zero_based=zero_based,
                 dropna_label=args.dropna_label, overwrite=args.overwrite,
                 sparse={"auto": "auto", "sparse": True, "dense": False}[args.layout],
                 categorical=_categorical_arg(args.categorical, fmt), echo=print)
    seconds = time.perf_counter() - t0
    n_chunks = len(ds.X.chunks[0])
    print(f"Converted '{source}' ({fmt}) in {seconds:.1f} s: {_n(ds.n_rows)} rows x "
          f"{_n(ds.n_features)} features, label {ds.label!r}"
          f"{', weight column ' + repr(args.weight) if ds.weight is not None else ''}, "
          f"{_n(n_chunks)} chunk{'s' if n_chunks != 1 else ''} of up to {_n(ds.chunk_rows)} rows"
          f"{', stored sparse (CSR)' if ds.sparse else ''}.")
    if ds.categorical_features:
        coded = [f"{ds.feature_names[i]} ({len(c)})"
                 for i, c in zip(ds.categorical_features, ds.pandas_categorical)]
        print(f"Category codes (categories) in column(s): {', '.join(coded[:20])}"
              f"{' ...' if len(coded) > 20 else ''}.")
    print(f"Wrote {ds.path}")
    return 0


def _categorical_arg(text, fmt):
    """``--categorical``: ``auto`` (every text column), ``none``, or COL,COL,..."""
    if text is None:
        return "auto" if fmt not in ("libsvm", "svm") else None
    if text.strip().lower() in ("auto", "none", ""):
        return None if text.strip().lower() in ("none", "") else "auto"
    return [c.strip() for c in text.split(",") if c.strip()]


# ------------------------------------------------------------------------------------------
# train
# ------------------------------------------------------------------------------------------


def _open_labelled(path_text, what):
    from oocgbdt.io.dataset import open_dataset

    ds = open_dataset(_path(path_text))
    if ds.y is None:
        raise CLIError(f"{what} '{ds.path}' has no labels ('y'); convert it with --label NAME.")
    return ds


def _format_round(i: int, evals_result: dict) -> str:
    parts = [f"{name}'s {metric}: {scores[i]:.6g}"
             for name, metrics in evals_result.items() for metric, scores in metrics.items()
             if i < len(scores)]
    return f"[{i + 1}]\t" + "\t".join(parts)


def _read_init_score(path, flag):
    """A starting-score file: a Zarr array's path as given (read lazily by training), else the
    values of LightGBM's ``.init`` text format, float64, shape (rows,) or (rows, classes).
    None for None."""
    if path is None:
        return None
    import numpy as np

    p = _path(path)
    if not p.exists():
        raise CLIError(f"{flag} '{p}' does not exist.")
    if p.is_dir():
        return str(p)
    try:
        values = np.loadtxt(p, dtype=np.float64, ndmin=2, delimiter="\t")
    except ValueError as exc:
        raise CLIError(f"{flag} '{p}' is not a text file of scores (one line per row, the "
                       f"classes' scores separated by tabs): {exc}") from None
    return values[:, 0] if values.shape[1] == 1 else values


def _cmd_train(args) -> int:
    from oocgbdt.core.booster import MODEL_FORMAT, file_has_format
    from oocgbdt.params import ALIASES, resolve_params

    model_path = _path(args.model)
    _check_new_file(model_path, args.overwrite, "model file")
    if model_path.exists() and not file_has_format(model_path, MODEL_FORMAT):
        raise CLIError(f"refusing to overwrite '{model_path}': --overwrite only replaces an "
                       f"oocgbdt model file, and this is not one. Remove it yourself or choose "
                       f"another --model.")
    user_params = _collect_params(args)
    params = resolve_params(user_params)  # bad names/values fail here, before any data is read
    cache_path = params["cache_path"]
    if cache_path is not None and _path(cache_path) in (model_path, *model_path.parents):
        raise CLIError(f"--cache-path '{cache_path}' and --model '{model_path}' overlap: the "
                       f"model file would be written at or inside the cache directory; give "
                       f"them different paths.")
    if params["checkpoint_path"] is not None and _path(params["checkpoint_path"]) == model_path:
        raise CLIError(f"--checkpoint and --model are the same file '{model_path}'; give them "
                       f"different paths.")
    gave_verbose = any(ALIASES.get(k) == "verbose" for k in user_params)
    verbose = None if gave_verbose else not args.quiet
    if args.quiet:
        verbose = False

    ds = _open_labelled(args.data, "DATA")
    valids = [_open_labelled(v, "VALID_DATA") for v in args.valid or ()]
    for i, v in enumerate(valids):
        if v.n_features != ds.n_features:
            raise CLIError(f"VALID_DATA '{v.path}' has {v.n_features} features but DATA "
                           f"'{ds.path}' has {ds.n_features}; they must match.")
        if list(v.feature_names) != list(ds.feature_names):
            print(f"oocgbdt train: warning: feature names of '{v.path}' differ from those of "
                  f"'{ds.path}'; columns are matched by position.", file=sys.stderr)
    names = [f"valid_{i}" for i in range(len(valids))]
    init_score = _read_init_score(args.init_score, "--init-score")
    valid_init = [_read_init_score(f, "--valid-init-score") for f in args.valid_init_score or ()]
    if valid_init and len(valid_init) != len(valids):
        raise CLIError(f"--valid-init-score given {len(valid_init)} time(s) for {len(valids)} "
                       f"--valid set(s); give one per --valid, in order.")

    client = None
    if args.scheduler:
        from oocgbdt.runtime.cluster import connect
        try:
            client = connect(args.scheduler, timeout="20s")
        except (OSError, TimeoutError) as exc:
            raise CLIError(f"cannot connect to the Dask scheduler at {args.scheduler!r}: {exc}") from None

    if not args.quiet:
        extra = "".join(f"; {n}: '{v.path}' ({_n(v.n_rows)} rows)" for n, v in zip(names, valids))
        where = f"the scheduler at {args.scheduler}" if client is not None else "an embedded LocalCluster"
        print(f"Training {params['objective']} ({_n(params['n_estimators'])} rounds max) on "
              f"'{ds.path}': {_n(ds.n_rows)} rows x {_n(ds.n_features)} features, "
              f"{_n(len(ds.X.chunks[0]))} chunks{extra}; on {where}.", flush=True)
    from oocgbdt.dask.training import train

    t0 = time.perf_counter()
    # A dataset with category codes is passed by path: training reads its category map (kept
    # in the model) and maps a validation set's own codes to it by value.
    coded = ds.categorical_features or any(v.categorical_features for v in valids)
    as_x = lambda d: str(d.path) if coded else d.X  # noqa: E731
    try:
        booster = train(params, as_x(ds), ds.y, sample_weight=ds.weight,
                        eval_set=[(as_x(v), v.y) for v in valids] or None,
                        eval_names=names or None,
                        eval_sample_weight=[v.weight for v in valids] or None,
                        feature_names=list(ds.feature_names), client=client, verbose=verbose,
                        init_score=init_score, eval_init_score=valid_init or None,
                        resume=args.resume)
    finally:
        if client is not None:
            client.close()
    seconds = time.perf_counter() - t0

    evals = booster.evals_result or {}
    n_rounds = booster.num_iterations()
    if not args.quiet:
        n_scored = max((len(s) for m in evals.values() for s in m.values()), default=0)
        for i in range(n_scored):
            print(_format_round(i, evals))
        if booster.best_iteration is not None and n_scored:
            best = _format_round(booster.best_iteration - 1, evals).split("\t", 1)[1]
            print(f"Best iteration: {booster.best_iteration}\t{best}")
        if not valids:
            print("(no --valid data: no metrics to report per round)")
    if _path(args.model).exists() and not args.overwrite:  # appeared while training
        raise CLIError(f"model file '{model_path}' appeared while training; pass --overwrite to "
                       f"replace it.")
    booster.save_model(model_path)
    print(f"Trained {_n(n_rounds)} round{'s' if n_rounds != 1 else ''} "
          f"({_n(booster.num_trees())} trees) in {seconds:.1f} s.")
    print(f"Saved model to {model_path}")
    report = getattr(booster, "cache_report", None) or {}
    if report.get("mode") == "disk" and report.get("kept"):
        how = ("reused, not binned again" if report.get("reused") else
               "written; a later run on the same data and bin settings reuses it")
        print(f"Disk cache of the binned rows at {report['path']} ({how}).")
    elif report.get("mode") == "memory" and params["cache_path"] is not None:
        print(f"The binned rows were kept in memory ({report.get('reason')}); nothing was "
              f"written to --cache-path '{params['cache_path']}'.")
    return 0


# ------------------------------------------------------------------------------------------
# predict
# ------------------------------------------------------------------------------------------


def _zarr_features(path: Path, booster):
    """Lazy features of a Zarr dataset/array, with a warning when names differ from the model's."""
    from oocgbdt.io.predictions import open_features

    from oocgbdt.io.dataset import dataset_categories

    X, names = open_features(path)
    if (names is not None and len(names) == booster.n_features
            and list(names) != [str(n) for n in booster.feature_names]):
        print("oocgbdt predict: warning: the feature names of DATA differ from the model's; "
              "columns are matched by position.", file=sys.stderr)
    if dataset_categories(path) is not None or (names is not None
                                                  and booster.pandas_categorical_features):
        return str(path)  # its category codes are mapped to the model's by value
    return X


def _csv_features(path: Path, booster, args):
    """The feature columns of a CSV file (by name or position), with notes on stderr."""
    from oocgbdt.io.predictions import csv_features

    features = csv_features(path, booster.feature_names, label=args.label, drop=args.drop or (),
                            sep=_unescape_sep(args.sep),
                            header=0 if args.header else None if args.no_header else "infer")
    if features.ignored:
        print(f"oocgbdt predict: note: ignoring column(s) the model does not use: "
              f"{[str(c) for c in features.ignored][:20]}", file=sys.stderr)
    if features.header == 0 and not features.by_name:
        print("oocgbdt predict: warning: the CSV header does not name the model's features; "
              "columns are matched by position.", file=sys.stderr)
    return features


def _cmd_predict(args) -> int:
    from oocgbdt.dask.predict import Booster
    from oocgbdt.io.predictions import check_output, prediction_columns, write_predictions

    model_path, data, out = _path(args.model), _path(args.data), _path(args.out)
    if not model_path.is_file():
        raise CLIError(f"model file '{model_path}' does not exist.")
    if not data.exists():
        raise CLIError(f"DATA '{data}' does not exist.")
    check_output(out, args.overwrite)  # before any work
    if out == data or (data.is_dir() and out.is_relative_to(data)):
        raise CLIError(f"OUT '{out}' would overwrite or lie inside DATA '{data}'.")
    try:
        booster = Booster.load_model(model_path)
    except (ValueError, KeyError, TypeError) as exc:  # JSONDecodeError is a ValueError
        kind = " (not JSON)" if type(exc).__name__ in ("JSONDecodeError", "UnicodeDecodeError") else ""
        raise CLIError(f"cannot read model '{model_path}'{kind}: {exc}; MODEL must be a file "
                       f"written by `oocgbdt train`.") from None
    kw = dict(raw_score=args.raw_score, num_iteration=args.num_iteration)
    n_out = booster.n_outputs
    t0 = time.perf_counter()

    if data.is_dir():
        if args.label is not None or args.drop:
            raise CLIError("--label and --drop apply to CSV input only (a Zarr dataset keeps its "
                           "label apart from its features).")
        predictions = booster.predict(_zarr_features(data, booster), **kw)  # lazy
    else:
        suffix = "".join(data.suffixes).lower()
        if any(s in suffix for s in (".svm", ".libsvm", ".svmlight", ".zarr")):
            raise CLIError(f"DATA '{data}': predict reads CSV/TSV and Parquet files and Zarr "
                           f"stores; convert this file first with `oocgbdt convert`.")
        if any(s in suffix for s in (".parquet", ".pq")):
            from oocgbdt.io.predictions import parquet_features
            features = parquet_features(data, booster.feature_names, label=args.label,
                                        drop=args.drop or ())
            if features.ignored:
                print(f"oocgbdt predict: note: ignoring column(s) the model does not use: "
                      f"{[str(c) for c in features.ignored][:20]}", file=sys.stderr)
        else:
            features = _csv_features(data, booster, args)
        categories = dict(zip(booster.pandas_categorical_features,
                              booster.pandas_categorical or []))
        predictions = (booster.predict(X, **kw)
                       for X in features.blocks(args.chunk_rows, categories))
    n_rows = write_predictions(
        out, predictions, prediction_columns(n_out, args.raw_score), chunk_rows=args.chunk_rows,
        attrs={"model": str(model_path), "data": str(data), "raw_score": bool(args.raw_score),
               "num_iteration": args.num_iteration},
        overwrite=args.overwrite)
    seconds = time.perf_counter() - t0
    what = "raw scores" if args.raw_score else "predictions"
    shape = f"{_n(n_rows)} rows" + (f" x {n_out} classes" if n_out > 1 else "")
    print(f"Wrote {what} ({shape}) in {seconds:.1f} s to {out}")
    return 0


# ------------------------------------------------------------------------------------------
# export
# ------------------------------------------------------------------------------------------
def _cmd_export(args) -> int:
    from oocgbdt.core.booster import Booster

    model_path, out = _path(args.model), _path(args.out)
    if not model_path.is_file():
        raise CLIError(f"model file '{model_path}' does not exist.")
    _check_new_file(out, args.overwrite, "OUT")
    try:
        booster = Booster.load_model(model_path)
    except (ValueError, KeyError, TypeError) as exc:
        raise CLIError(f"cannot read model '{model_path}': {exc}; MODEL must be a file "
                       f"written by `oocgbdt train` or LightGBM.") from None
    booster.save_model(out, format="lightgbm", num_iteration=args.num_iteration)
    print(f"Wrote {booster.num_trees()} trees as a LightGBM text model to {out}")
    return 0


# ------------------------------------------------------------------------------------------
# quickstart
# ------------------------------------------------------------------------------------------


def _cmd_quickstart(args) -> int:
    import numpy as np
    import pandas as pd

    from oocgbdt.io.dataset import write_dataset
    from oocgbdt.dask.training import train
    from oocgbdt.datasets import QUICKSTART_LABEL, quickstart_path

    workdir = _path(args.workdir) if args.workdir else Path.cwd() / "oocgbdt-quickstart"
    if workdir.exists() and not workdir.is_dir():
        raise CLIError(f"--workdir '{workdir}' exists and is not a folder.")
    if workdir.is_dir() and any(workdir.iterdir()) and not args.overwrite:
        raise CLIError(f"--workdir '{workdir}' already exists and is not empty; pass --overwrite "
                       f"to reuse it (its train.zarr, test.zarr and model.json are replaced) or "
                       f"choose another --workdir.")
    if not workdir.parent.is_dir():
        raise CLIError(f"cannot create '{workdir}': its folder '{workdir.parent}' does not exist.")
    t_all = time.perf_counter()
    workdir.mkdir(exist_ok=True)
    src = quickstart_path()
    frame = pd.read_csv(src, sep="\t")
    y_all = frame[QUICKSTART_LABEL].to_numpy(dtype=np.float64)
    X_df = frame.drop(columns=[QUICKSTART_LABEL])
    X_all = X_df.to_numpy(dtype=np.float32)
    names = [str(c) for c in X_df.columns]
    n = len(frame)
    perm = np.random.default_rng(args.seed).permutation(n)  # deterministic 80/20 split
    n_test = n // 5
    test_idx, train_idx = perm[:n_test], perm[n_test:]

    paths = {}
    for split, idx in (("train", train_idx), ("test", test_idx)):
        paths[split] = workdir / f"{split}.zarr"
        write_dataset(paths[split], X_all[idx], y_all[idx], feature_names=names,
                      label=QUICKSTART_LABEL, chunk_rows=max(1, len(idx) // 8), source=str(src),
                      overwrite=args.overwrite)
    from oocgbdt.io.dataset import open_dataset

    tr, te = open_dataset(paths["train"]), open_dataset(paths["test"])
    print(f"California housing: {_n(n)} rows x {len(names)} features, regression on "
          f"{QUICKSTART_LABEL!r} (median house value, USD).")
    print(f"Split 80/20 (seed {args.seed}): {_n(tr.n_rows)} training rows -> {tr.path} "
          f"({len(tr.X.chunks[0])} chunks), {_n(te.n_rows)} test rows -> {te.path} "
          f"({len(te.X.chunks[0])} chunks).")

    from oocgbdt.runtime.cluster import embedded_client, embedded_threads

    threads = embedded_threads()
    # The library defaults (100 rounds of 31 leaves, learning rate 0.1).
    params = {"objective": "regression", "metric": "rmse", "n_estimators": args.n_estimators,
              "learning_rate": args.learning_rate, "num_leaves": args.num_leaves,
              "seed": args.seed}
    print(f"Training {args.n_estimators} rounds (num_leaves={args.num_leaves}, learning_rate="
          f"{args.learning_rate}) on an embedded LocalCluster (1 worker, {threads} threads), "
          f"scoring the test set every round...", flush=True)
    with embedded_client(threads) as client:
        t0 = time.perf_counter()
        booster = train(params, tr.X, tr.y, eval_set=[(te.X, te.y)], eval_names=["test"],
                        feature_names=names, client=client, verbose=not args.quiet)
        seconds = time.perf_counter() - t0
        pred = client.compute(booster.predict(te.X)).result()
        y_tr, y_te = client.compute([tr.y, te.y], sync=True)
    model_path = workdir / "model.json"
    booster.save_model(model_path)

    rmse = float(np.sqrt(np.mean((np.asarray(pred) - y_te) ** 2)))
    baseline = float(np.sqrt(np.mean((float(np.mean(y_tr)) - y_te) ** 2)))
    print(f"Test RMSE:      {rmse:,.1f}")
    print(f"Baseline RMSE:  {baseline:,.1f}   (predicting the training mean)")
    print(f"Ratio:          {rmse / baseline:.3f}   (lower is better; 1.0 = no better than the mean)")
    print(f"Training time:  {seconds:.1f} s ({booster.num_iterations()} rounds; "
          f"{time.perf_counter() - t_all:.1f} s in all)")
    print(f"Model saved to  {model_path}")
    print(f"Data saved to   {tr.path} and {te.path}")
    preds = workdir / "test-predictions.csv"  # a rerun's earlier predictions need --overwrite
    print(f"Next: oocgbdt predict {model_path} {te.path} {preds}"
          + (" --overwrite" if preds.exists() else ""))
    return 0


# ------------------------------------------------------------------------------------------
# Parser
# ------------------------------------------------------------------------------------------


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {value}")
    return value


class _Formatter(argparse.RawDescriptionHelpFormatter):
    """Wraps each paragraph of descriptions and epilogs; keeps indented lines (examples) as is."""

    def __init__(self, prog):
        super().__init__(prog, max_help_position=32)

    def _fill_text(self, text, width, indent):
        import textwrap

        width = min(width, 100)
        return "\n".join(line if not line or line[0].isspace()
                         else textwrap.fill(line, width, initial_indent=indent,
                                            subsequent_indent=indent)
                         for line in text.split("\n"))


def build_parser() -> argparse.ArgumentParser:
    """The ``oocgbdt`` argument parser (sub-commands ``convert``, ``train``, ``predict``, ``export``, ``quickstart``)."""
    parser = argparse.ArgumentParser(
        prog="oocgbdt",
        description="Out-of-core gradient-boosted decision trees on Dask (LightGBM's algorithms "
                    "over chunked Zarr data).",
        epilog="Typical use:\n"
               "  oocgbdt quickstart                       # a 30-second tour on shipped data\n"
               "  oocgbdt convert train.csv train.zarr --label target\n"
               "  oocgbdt train train.zarr --model model.json --valid valid.zarr\n"
               "  oocgbdt predict model.json test.zarr predictions.csv\n\n"
               "`oocgbdt COMMAND --help` describes each command. User errors exit with status 2 "
               f"and a one-line message; set {_DEBUG_ENV}=1 for a traceback.",
        formatter_class=_Formatter,
    )
    parser.add_argument("--version", action="version", version=f"oocgbdt {_version()}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    # convert ---------------------------------------------------------------------------
    p = sub.add_parser(
        "convert", formatter_class=_Formatter,
        help="convert a CSV/TSV, Parquet or LibSVM file to an oocgbdt Zarr dataset",
        description="Convert a CSV/TSV, Parquet or LibSVM file to an oocgbdt Zarr dataset "
                    "(X float32, y, optional weight), streaming CHUNK_ROWS rows at a time so "
                    "memory stays bounded. DEST is built in a temporary sibling folder and "
                    "renamed when complete.",
        epilog="Examples:\n"
               "  oocgbdt convert higgs.csv.gz higgs.zarr --label label --chunk-rows 200000\n"
               "  oocgbdt convert data.tsv data.zarr --label 0 --no-header\n"
               "  oocgbdt convert rcv1.svm rcv1.zarr   # LibSVM: the label is the first token")
    p.add_argument("source", metavar="SOURCE", help="input file (.csv/.tsv/.txt, optionally "
                   ".gz/.bz2/.xz/.zip; .parquet or a folder of them; .svm/.libsvm)")
    p.add_argument("dest", metavar="DEST", help="output folder (the Zarr dataset)")
    p.add_argument("--label", metavar="NAME", help="label column: name, or 0-based position for "
                   "files without a header (required for CSV/Parquet; LibSVM has it first)")
    p.add_argument("--format", choices=("csv", "tsv", "parquet", "libsvm"),
                   help="input format (default: from the file extension)")
    p.add_argument("--sep", metavar="SEP", help="CSV field separator; '\\t' or 'tab' for a tab, "
                   "'space' for any whitespace (default: tab for .tsv, comma for .csv, else sniffed)")
    hdr = p.add_mutually_exclusive_group()
    hdr.add_argument("--header", action="store_true", help="the first line names the columns "
                     "(default: inferred; no header if every field of the first line is a number)")
    hdr.add_argument("--no-header", action="store_true", help="there is no header row (columns are "
                     "numbered 0, 1, ...; features are named Column_0, ...)")
    p.add_argument("--chunk-rows", type=_positive_int, metavar="N", default=None,
                   help=f"rows per stored chunk and per parsed block (default {DEFAULT_CHUNK_ROWS:,})")
    p.add_argument("--weight", metavar="COL", help="column of sample weights")
    p.add_argument("--drop", metavar="COL", nargs="+", action="extend",
                   help="columns to leave out (ids the model should not see); repeatable")
    p.add_argument("--categorical", metavar="auto|none|COL,...", default=None,
                   help="columns stored as category codes (0, 1, ... in the sorted order of "
                        "their values; the map is kept in the dataset and the model): auto "
                        "(default) = every text column; none; or a comma-separated list")
    p.add_argument("--n-features", type=_positive_int, metavar="N",
                   help="LibSVM: number of features (default: the largest index in the file)")
    p.add_argument("--zero-based", choices=("auto", "true", "false"), default="auto",
                   help="LibSVM index base (default auto: zero-based if index 0 occurs)")
    p.add_argument("--layout", choices=("auto", "sparse", "dense"), default="auto",
                   help="how X is stored: sparse (CSR per row chunk, LibSVM only) or dense "
                        "(default auto: sparse for LibSVM files with at most 10%% of cells stored)")
    p.add_argument("--dropna-label", action="store_true",
                   help="drop rows with a missing label (default: fail on them)")
    p.add_argument("--overwrite", action="store_true", help="replace an existing dataset at DEST")
    p.set_defaults(func=_cmd_convert)

    # train -----------------------------------------------------------------------------
    p = sub.add_parser(
        "train", formatter_class=_Formatter,
        help="train a model on a Zarr dataset and save it as JSON",
        description="Train a gradient-boosted tree model on a Zarr dataset written by "
                    "`oocgbdt convert` (its weights, if any, are used) and save it as JSON.\n\n"
                    "Progress: while training, a progress bar on stderr shows the round and the "
                    "latest metric of the last --valid set. When training ends, the metric of "
                    "every round of every --valid set is printed, one tab-separated line per "
                    "round (\"[10]  valid_0's l2: 0.51234\"), read from the model's "
                    "evals_result, "
                    "then the best iteration when early stopping was requested.",
        epilog="Examples:\n"
               "  oocgbdt train train.zarr --model model.json --valid valid.zarr \\\n"
               "      --objective binary --param num_leaves=63 learning_rate=0.05 \\\n"
               "      --param n_estimators=500 early_stopping_rounds=20 metric=auc,binary_logloss\n"
               "  oocgbdt train train.zarr --model model.json --scheduler tcp://10.0.0.1:8786\n"
               "  oocgbdt train big.zarr --model model.json --cache disk --cache-path big.cache\n\n"
               "Parameters use LightGBM's names and aliases (num_iterations = n_estimators, "
               "eta = learning_rate, ...); see oocgbdt.params.PARAMETERS.")
    p.add_argument("data", metavar="DATA", help="training dataset (a Zarr folder from `oocgbdt convert`)")
    p.add_argument("--model", metavar="OUT.json", required=True, help="where to save the model")
    p.add_argument("--valid", metavar="VALID_DATA", action="append",
                   help="validation dataset scored every round (named valid_0, valid_1, ... in "
                        "order; the metrics drive early_stopping_rounds); repeatable")
    p.add_argument("--init-score", metavar="FILE",
                   help="starting raw score of every row of DATA (LightGBM's init_score; no "
                        "boost_from_average then, and the model leaves it out of its "
                        "predictions): a text file as LightGBM's DATA.init (one line per row; "
                        "multiclass: the classes' scores separated by tabs) or a Zarr array of "
                        "shape (rows,) or (rows, classes)")
    p.add_argument("--valid-init-score", metavar="FILE", action="append",
                   help="starting raw scores of a --valid set, as --init-score; repeatable, "
                        "one per --valid, in order")
    p.add_argument("--objective", choices=("regression", "binary", "multiclass"),
                   help="loss to minimize (default regression)")
    p.add_argument("--num-class", type=_positive_int, metavar="K",
                   help="number of classes (multiclass only; labels 0..K-1)")
    p.add_argument("--param", metavar="NAME=VALUE", nargs="+", action="extend",
                   help="any LightGBM-style parameter, e.g. num_leaves=63 learning_rate=0.05 "
                        "metric=auc; values are read as int, float, bool (true/false) or text; "
                        "repeatable")
    p.add_argument("--cache", choices=("auto", "memory", "disk"),
                   help="where the binned rows live between passes (parameter cache): memory on "
                        "the workers, disk (a compressed Zarr store streamed in every pass) or "
                        "auto (memory when they fit in cache_memory_fraction of the workers' "
                        "memory, else disk; the default)")
    p.add_argument("--cache-path", metavar="DIR",
                   help="directory of the disk cache (parameter cache_path), used when the "
                        "rows are cached on disk (--cache disk, or auto choosing disk): kept "
                        "after training and reused by a later run on the same data and bin "
                        "settings (a mismatch is an error; nothing is overwritten). Default: a "
                        "temporary directory, removed after training")
    p.add_argument("--checkpoint", metavar="FILE",
                   help="checkpoint file (parameter checkpoint_path): the model so far and the "
                        "fit's state, written atomically every --checkpoint-every rounds; a "
                        "file there that is not an oocgbdt checkpoint is never overwritten")
    p.add_argument("--checkpoint-every", type=_positive_int, metavar="N",
                   help="rounds between checkpoints (parameter checkpoint_every)")
    p.add_argument("--resume", action="store_true",
                   help="continue the fit whose checkpoint is --checkpoint (same data and "
                        "parameters): the model is the one the uninterrupted run gives")
    p.add_argument("--scheduler", metavar="ADDRESS", help="address of a running Dask scheduler "
                   "to train on (default: an embedded LocalCluster on this machine)")
    p.add_argument("--overwrite", action="store_true", help="replace an existing model file")
    p.add_argument("--quiet", action="store_true", help="no progress bar and no per-round metrics")
    p.set_defaults(func=_cmd_train)

    # predict ---------------------------------------------------------------------------
    p = sub.add_parser(
        "predict", formatter_class=_Formatter,
        help="predict with a saved model, streaming to CSV or Zarr",
        description="Predict DATA with a model saved by `oocgbdt train`, chunk by chunk.\n\n"
                    "DATA: a Zarr dataset written by `oocgbdt convert` (or any Zarr array of "
                    "features), or a CSV/TSV file of features (read in blocks of CHUNK_ROWS rows; "
                    "with a header naming the model's features, columns are matched by name and "
                    "others ignored, else by position), or a .parquet file (columns matched by "
                    "name). Text columns are coded through the model's category map, by value; "
                    "values the model never saw are missing.\n"
                    "OUT: a .csv/.tsv file (header line, then one row per input row; values "
                    "written with 17 significant digits, so they read back exactly) or, for any "
                    "other name, a Zarr array of float64 (n_rows,) or (n_rows, num_class).\n"
                    "Predictions are probabilities for binary (of class 1) and multiclass, values "
                    "for regression; --raw-score gives the untransformed scores.",
        epilog="Examples:\n"
               "  oocgbdt predict model.json test.zarr predictions.csv\n"
               "  oocgbdt predict model.json test.csv predictions.zarr --label target")
    p.add_argument("model", metavar="MODEL", help="model file (JSON) from `oocgbdt train`")
    p.add_argument("data", metavar="DATA", help="Zarr dataset/array folder, or a CSV/TSV or "
                   "Parquet file")
    p.add_argument("out", metavar="OUT", help="output: *.csv / *.tsv, else a Zarr array folder")
    p.add_argument("--raw-score", action="store_true", help="raw scores instead of predictions")
    p.add_argument("--num-iteration", type=_positive_int, metavar="N",
                   help="use the first N rounds (default: the best iteration, else all)")
    p.add_argument("--label", metavar="NAME", help="CSV/Parquet input: label column to leave out")
    p.add_argument("--drop", metavar="COL", nargs="+", action="extend",
                   help="CSV/Parquet input: other columns to leave out; repeatable")
    p.add_argument("--sep", metavar="SEP", help="CSV input field separator (default as for convert)")
    hdr = p.add_mutually_exclusive_group()
    hdr.add_argument("--header", action="store_true", help="CSV input has a header row "
                     "(default: inferred)")
    hdr.add_argument("--no-header", action="store_true", help="CSV input has no header row")
    p.add_argument("--chunk-rows", type=_positive_int, metavar="N", default=DEFAULT_CHUNK_ROWS,
                   help=f"CSV input: rows per block (default {DEFAULT_CHUNK_ROWS:,})")
    p.add_argument("--overwrite", action="store_true", help="replace an existing OUT")
    p.set_defaults(func=_cmd_predict)

    # export ----------------------------------------------------------------------------
    p = sub.add_parser(
        "export", formatter_class=_Formatter,
        help="write a model in LightGBM's text format",
        description="Write MODEL (from `oocgbdt train`) as a LightGBM text model: "
                    "lightgbm.Booster(model_file=OUT) predicts the same raw scores, and tools "
                    "that read LightGBM models (SHAP, onnxmltools, treelite) read it.",
        epilog="Example:\n  oocgbdt export model.json model.txt")
    p.add_argument("model", metavar="MODEL", help="model file from `oocgbdt train`")
    p.add_argument("out", metavar="OUT", help="LightGBM text model to write")
    p.add_argument("--num-iteration", type=_positive_int, metavar="N",
                   help="write the first N rounds (default: all)")
    p.add_argument("--overwrite", action="store_true", help="replace an existing OUT")
    p.set_defaults(func=_cmd_export)

    # quickstart ------------------------------------------------------------------------
    p = sub.add_parser(
        "quickstart", formatter_class=_Formatter,
        help="train and evaluate on the shipped California housing data (under a minute)",
        description="A short tour on the shipped California housing data (20,640 rows, 8 "
                    "features, regression on 'target'): split the rows 80/20 with a seeded "
                    "permutation, write both parts as Zarr datasets (8 chunks each) under "
                    "--workdir, train on an embedded LocalCluster while scoring the test set, "
                    "then print the test RMSE next to the trivial baseline (predicting the "
                    "training mean), the training time and where the model and data were saved.")
    p.add_argument("--workdir", metavar="DIR", help="folder for the data and the model "
                   "(default: ./oocgbdt-quickstart, which must be new or empty)")
    p.add_argument("--n-estimators", type=_positive_int, metavar="N", default=100,
                   help="boosting rounds (default 100)")
    p.add_argument("--num-leaves", type=_positive_int, metavar="N", default=31,
                   help="leaves per tree (default 31)")
    p.add_argument("--learning-rate", type=float, metavar="RATE", default=0.1,
                   help="learning rate: the factor of every tree's leaf values (default 0.1)")
    p.add_argument("--seed", type=int, default=0, help="seed of the train/test split and of training")
    p.add_argument("--overwrite", action="store_true",
                   help="reuse a non-empty --workdir (replaces its train.zarr, test.zarr, model.json)")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.set_defaults(func=_cmd_quickstart)
    return parser


# ------------------------------------------------------------------------------------------
# Entry point
# ------------------------------------------------------------------------------------------


#: ``name=value (CLI: --flag ...)`` in the library's messages: the command line shows the flag.
_PYTHON_AND_FLAG = re.compile(r"\b[a-z_]+=(?:\[[^\]]*\]|[^\s(]*?) \(CLI: ([^)]+)\)")


def _one_line(exc: BaseException) -> str:
    text = str(exc)
    if isinstance(exc, KeyError) and exc.args:
        text = str(exc.args[0])
    text = " ".join(text.split())
    text = _PYTHON_AND_FLAG.sub(r"\1", text)  # CLI terms, not Python syntax
    return text or type(exc).__name__


def main(argv=None) -> int:
    """Run the ``oocgbdt`` command line.

    Parameters
    ----------
    argv : list of str, optional
        Arguments without the program name; default ``sys.argv[1:]``.

    Returns
    -------
    int
        Exit status: 0 on success (also for ``--help`` and ``--version``), 2 for user errors
        (a one-line message on stderr) and usage errors, 130 when interrupted.
    """
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # --help, --version, usage errors
        return exc.code if isinstance(exc.code, int) else (0 if exc.code is None else _USER_ERROR)
    if args.command is None:
        parser.print_help(sys.stderr)
        return _USER_ERROR
    if getattr(args, "chunk_rows", 0) is None:
        args.chunk_rows = DEFAULT_CHUNK_ROWS
    prog = f"oocgbdt {args.command}"
    debug = os.environ.get(_DEBUG_ENV, "").strip() not in ("", "0")
    try:
        return int(args.func(args) or 0)
    except KeyboardInterrupt:
        print(f"{prog}: interrupted", file=sys.stderr)
        return 130
    except (CLIError, FileNotFoundError, FileExistsError, NotADirectoryError, IsADirectoryError,
            PermissionError, ValueError, TypeError) as exc:
        if debug:
            raise
        print(f"{prog}: error: {_one_line(exc)}", file=sys.stderr)
        return _USER_ERROR


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
