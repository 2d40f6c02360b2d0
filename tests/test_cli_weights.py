"""``treeboost train --weight-column NAME``: a column of the file as the row weights.

The weighted CLI fit must be the estimator's fit with ``sample_weight`` on the same split
(the same model file, byte for byte), for every task; integer weights must equal repeated
rows where the engine guarantees it (``test_estimators.py``'s
``test_integer_weights_equal_repeated_rows``: <= 255 distinct values,
``min_samples_leaf=1``); the printed metrics are weighted by the test rows' weights; a bad
column is one line naming ``--weight-column``; and ``treeboost predict`` ignores the
column.
"""

import io
import json

import numpy as np
import pandas as pd
import pytest
from sklearn import metrics as skm

from treeboost import TreeBoostClassifier, TreeBoostRanker, TreeBoostRegressor, load_model
from treeboost.cli import main
from treeboost.metrics import ndcg_at_k
from treeboost.study.data import DatasetSpec, load_spec, split_indices, split_queries
from treeboost.survival import TreeBoostSurvival, concordance_index

N_TREES = 15


def run_cli(capsys, *argv):
    code = main([str(a) for a in argv])
    out = capsys.readouterr()
    return code, out.out, out.err


def task_frame(task, n=240, seed=0):
    """(frame, target, extra options): features x0..x2 and a text column, the target,
    and a weight column ``w`` (for ranking one weight per query, of column ``qid``)."""
    rng = np.random.default_rng(seed)
    frame = pd.DataFrame(rng.normal(size=(n, 3)), columns=["x0", "x1", "x2"])
    frame["town"] = rng.choice(["north", "south"], size=n)
    signal = frame["x0"] - 0.5 * frame["x1"] + (frame["town"] == "north")
    frame["w"] = rng.uniform(0.2, 3.0, size=n)
    if task == "regression":
        frame["y"] = signal + 0.3 * rng.normal(size=n)
        return frame, "y", []
    if task == "classification":
        frame["y"] = np.where(signal + rng.normal(size=n) > 0.5, "yes", "no")
        return frame, "y", []
    if task == "survival":
        frame["time"] = np.round(rng.exponential(np.exp(-signal)), 3) + 0.01
        frame["event"] = (rng.random(n) < 0.7).astype(int)
        return frame, "time", ["--event-column", "event"]
    sizes = np.full(n // 8, 8)  # ranking: 30 queries of 8 documents
    frame["qid"] = np.repeat(np.arange(sizes.size), sizes)
    frame["w"] = np.repeat(rng.uniform(0.2, 3.0, size=sizes.size), sizes)
    frame["y"] = np.digitize(signal + 0.3 * rng.normal(size=n), [0.0, 1.0, 2.0])
    return frame, "y", ["--query-column", "qid"]


def reference(path, task, target, seed):
    """The CLI's split, refitted with the estimator and ``sample_weight``: (model, X_test,
    y_test, w_test, test query sizes)."""
    spec = DatasetSpec("d", str(path), target, task, "qid" if task == "ranking" else None,
                       "event" if task == "survival" else None)
    X, y, _, group = load_spec(spec, return_group=True)
    w = X.pop("w").to_numpy(np.float64)
    params = dict(n_estimators=N_TREES, random_state=seed)
    if task == "ranking":
        train, test, train_group, test_group = split_queries(group, 1, 0, seed)
    else:
        (train, test), test_group = split_indices(y, task, 1, 0, seed), None
    X_train, X_test = X.iloc[train].reset_index(drop=True), X.iloc[test].reset_index(drop=True)
    y = np.asarray(y)
    if task == "ranking":
        model = TreeBoostRanker(**params).fit(X_train, y[train], group=train_group,
                                              sample_weight=w[train])
    else:
        cls = {"regression": TreeBoostRegressor, "classification": TreeBoostClassifier,
               "survival": TreeBoostSurvival}[task]
        model = cls(**params).fit(X_train, y[train], sample_weight=w[train])
    return model, X_test, y[test], w[test], test_group


@pytest.mark.parametrize("task", ["regression", "classification", "survival", "ranking"])
def test_weighted_cli_fit_is_the_estimator_fit_with_sample_weight(tmp_path, capsys, task):
    frame, target, extra = task_frame(task)
    path, saved, api_saved = tmp_path / "d.csv", tmp_path / "cli.json", tmp_path / "api.json"
    frame.to_csv(path, index=False)
    code, out, err = run_cli(capsys, "train", path, "--target", target, *extra,
                             "--weight-column", "w", "--n-estimators", N_TREES, "--seed", 2,
                             "--format", "json", "--save", saved)
    assert code == 0, err
    report = json.loads(out)
    assert report["weight_column"] == "w"
    model, X_test, y_test, w_test, test_group = reference(path, task, target, 2)
    assert report["n_features"] == 4  # x0..x2 and town: the weights are no feature
    model.save_model(api_saved)
    # the same fit: the model files agree byte for byte
    assert saved.read_bytes() == api_saved.read_bytes()
    # the printed metrics are weighted by the test rows' weights
    pred = model.predict(X_test)
    if task == "regression":
        rmse = np.sqrt(np.average((pred - y_test) ** 2, weights=w_test))
        assert report["rmse"] == pytest.approx(rmse, rel=1e-12)  # one formula, round-off
    elif task == "classification":
        assert report["accuracy"] == pytest.approx(
            np.average(pred == y_test, weights=w_test), rel=1e-12)
        assert report["log_loss"] == skm.log_loss(y_test, model.predict_proba(X_test),
                                                  labels=model.classes_,
                                                  sample_weight=w_test)
    elif task == "survival":
        assert report["cindex"] == concordance_index(y_test, pred, w_test)
    else:
        offsets = np.concatenate(([0], np.cumsum(test_group)))
        assert report["ndcg@10"] == ndcg_at_k(y_test, pred, offsets, 10,
                                              sample_weight=w_test)
        # ... which the weights change: weighting is not a no-op here
        assert report["ndcg@10"] != ndcg_at_k(y_test, pred, offsets, 10)


def test_integer_weights_equal_repeated_rows(tmp_path, capsys):
    # test_estimators' guarantee: <= 255 distinct values and min_samples_leaf=1, so
    # binning and splits see the same data either way; --test keeps the split out of it
    rng = np.random.default_rng(2)
    X = rng.integers(0, 20, size=(200, 3)).astype(float)
    frame = pd.DataFrame(X, columns=["a", "b", "c"])
    frame["y"] = X[:, 0] + rng.normal(size=200)
    w = rng.integers(1, 4, size=200)
    weighted = frame.assign(w=w)
    repeated = frame.loc[np.repeat(np.arange(200), w)].reset_index(drop=True)
    for name, data in (("weighted", weighted), ("repeated", repeated), ("test", frame)):
        data.to_csv(tmp_path / f"{name}.csv", index=False)
    common = ["--target", "y", "--test", tmp_path / "test.csv", "--n-estimators", 10,
              "--min-samples-leaf", 1]
    assert run_cli(capsys, "train", tmp_path / "weighted.csv", *common, "--weight-column",
                   "w", "--save", tmp_path / "w.json")[0] == 0
    assert run_cli(capsys, "train", tmp_path / "repeated.csv", *common,
                   "--save", tmp_path / "r.json")[0] == 0
    a, b = load_model(tmp_path / "w.json"), load_model(tmp_path / "r.json")
    features = frame[["a", "b", "c"]]
    # the tolerance of test_estimators' twin: sums of weights vs sums over copies differ
    # in the order of float32 additions
    np.testing.assert_allclose(a.predict(features), b.predict(features), rtol=1e-6,
                               atol=1e-8)


def test_predict_ignores_the_weight_column(tmp_path, capsys):
    frame, target, _ = task_frame("regression")
    path, saved = tmp_path / "d.csv", tmp_path / "m.json"
    frame.to_csv(path, index=False)
    assert run_cli(capsys, "train", path, "--target", target, "--weight-column", "w",
                   "--n-estimators", N_TREES, "--save", saved)[0] == 0
    model = load_model(saved)
    assert "w" not in list(model.feature_names_in_)
    expected = model.predict(frame[list(model.feature_names_in_)])
    for data in (frame, frame.drop(columns=["w", "y"])):  # with and without the column
        data.to_csv(tmp_path / "new.csv", index=False)
        code, out, err = run_cli(capsys, "predict", saved, tmp_path / "new.csv")
        assert code == 0, err
        printed = pd.read_csv(io.StringIO(out), float_precision="round_trip")
        assert np.array_equal(printed["prediction"].to_numpy(), expected)


@pytest.mark.parametrize(("change", "argv", "message"), [
    ("text", [], "--weight-column w must hold numbers"),
    ("missing", [], "--weight-column w has 1 missing or infinite value"),
    ("negative", [], "--weight-column w has 1 negative value"),
    ("zeros", [], "--weight-column w is 0 on every row"),
    (None, ["--weight-column", "v"], "--weight-column v is not a column"),
    (None, ["--weight-column", "y"], "--weight-column y is also the --target column"),
    ("per row", ["--query-column", "qid"], "query weights"),
])
def test_bad_weight_column_is_one_line_naming_it(tmp_path, capsys, change, argv, message):
    frame, _, _ = task_frame("ranking" if change == "per row" else "regression")
    if change == "text":
        frame["w"] = np.where(frame["w"] > 1, "heavy", "light")
    elif change == "missing":
        frame.loc[4, "w"] = np.nan
    elif change == "negative":
        frame.loc[9, "w"] = -1.0
    elif change == "zeros":
        frame["w"] = 0.0
    elif change == "per row":
        frame.loc[3, "w"] += 1.0  # one row of query 0 differs from its query's weight
    frame.to_csv(tmp_path / "d.csv", index=False)
    options = argv if argv[:1] == ["--weight-column"] else [*argv, "--weight-column", "w"]
    code, _, err = run_cli(capsys, "train", tmp_path / "d.csv", "--target", "y", *options,
                           "--n-estimators", 2)
    assert code == 1
    assert message in err
    assert err.count("\n") == 1  # one line, no traceback


def test_svmlight_data_has_no_weight_column(tmp_path, capsys):
    (tmp_path / "d.svm").write_text("1 qid:1 1:0.5\n0 qid:1 1:0.1\n")
    code, _, err = run_cli(capsys, "train", tmp_path / "d.svm", "--weight-column", "w")
    assert code == 1
    assert "--weight-column w: an svmlight file has no named columns" in err
