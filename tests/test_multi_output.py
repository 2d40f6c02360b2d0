"""Multi-output regression, ``multi_strategy="one_output_per_tree"`` (issue 37, part 2).

A 2-D y (n, k) grows k trees a stage, output j fitted as a single-output model on column
j: the trees equal those of k separate fits bit for bit, also with row subsampling and
``colsample_bytree`` (drawn once per stage from the stage's streams, whatever k); with
``colsample_bynode`` only the first output does (each tree draws its node seed from the
stage's stream in output order). Predictions (n, k), SHAP (n, p + 1, k), save/load,
errors naming y, and test RMSE per target against XGBoost's ``one_output_per_tree``.
"""

import gzip
import io
from pathlib import Path

import numpy as np
import pytest
from sklearn.datasets import make_regression

import treeboost as tb
from treeboost import Dataset, TreeBoostRegressor, train

DATASETS = Path(__file__).resolve().parents[2] / "shared" / "datasets"


@pytest.fixture(scope="module")
def data():
    X, Y = make_regression(n_samples=600, n_features=8, n_informative=5, n_targets=3,
                           noise=5.0, random_state=0)
    return X, Y


def _trees_equal(a, b) -> bool:
    return all(np.array_equal(getattr(a, f), getattr(b, f))
               for f in ("feature", "threshold", "left", "right", "value"))


@pytest.mark.parametrize("loss", ["squared_error", "absolute_error", "huber", "quantile"])
@pytest.mark.parametrize("sampling", [{}, {"subsample": 0.7, "colsample_bytree": 0.7}])
def test_outputs_equal_single_output_fits(data, loss, sampling):
    X, Y = data
    kw = dict(loss=loss, n_estimators=15, random_state=3, **sampling)
    multi = TreeBoostRegressor(**kw).fit(X, Y)
    pred = multi.predict(X)
    assert pred.shape == (X.shape[0], 3)
    for j in range(3):
        single = TreeBoostRegressor(**kw).fit(X, Y[:, j])
        assert np.array_equal(pred[:, j], single.predict(X))
        assert multi.booster_.init_score[j] == single.booster_.init_score[0]
        for stage_m, stage_s in zip(multi.booster_.trees, single.booster_.trees, strict=True):
            assert _trees_equal(stage_m[j], stage_s[0])


def test_colsample_bynode_first_output_only(data):
    X, Y = data
    kw = dict(n_estimators=10, random_state=1, colsample_bynode=0.6)
    pred = TreeBoostRegressor(**kw).fit(X, Y).predict(X)
    assert np.array_equal(pred[:, 0], TreeBoostRegressor(**kw).fit(X, Y[:, 0]).predict(X))


def test_train_with_2d_label_and_round_trip(data, tmp_path):
    X, Y = data
    booster = train({"n_estimators": 10}, Dataset(X, Y))
    assert booster.n_outputs == 3
    assert booster.predict_raw(X).shape == (X.shape[0], 3)
    one = train({"n_estimators": 10}, Dataset(X, Y[:, 1]))
    assert np.array_equal(booster.predict_raw(X)[:, 1], one.predict_raw(X)[:, 0])
    model = TreeBoostRegressor(n_estimators=10, loss="huber").fit(X, Y)
    model.save_model(tmp_path / "m.json")
    loaded = tb.load_model(tmp_path / "m.json")
    assert np.array_equal(loaded.predict(X), model.predict(X))


def test_one_column_is_single_output(data):
    X, Y = data
    a = TreeBoostRegressor(n_estimators=5).fit(X, Y[:, :1]).predict(X)
    b = TreeBoostRegressor(n_estimators=5).fit(X, Y[:, 0]).predict(X)
    assert a.shape == (X.shape[0],)
    assert np.array_equal(a, b)


def test_shap_outputs_last(data):
    X, Y = data
    model = TreeBoostRegressor(n_estimators=10).fit(X, Y)
    contribs = model.predict(X[:50], pred_contribs=True)
    assert contribs.shape == (50, X.shape[1] + 1, 3)
    np.testing.assert_allclose(contribs.sum(axis=1), model.predict(X[:50], raw_score=True),
                               rtol=1e-9, atol=1e-6)
    assert model.predict(X[:5], pred_interactions=True).shape == (5, 9, 9, 3)


def test_errors_name_y_and_the_parameter(data):
    X, Y = data
    with pytest.raises(ValueError, match="^y of shape"):
        TreeBoostRegressor(n_estimators=2).fit(X, Y[:-1])
    bad = Y.copy()
    bad[4, 1] = np.nan
    with pytest.raises(ValueError, match="^y contains NaN"):
        TreeBoostRegressor(n_estimators=2).fit(X, bad)
    with pytest.raises(ValueError, match="multi_strategy='vector' must be one of"):
        TreeBoostRegressor(multi_strategy="vector").fit(X, Y)
    with pytest.raises(ValueError, match="multi_strategy='vector' must be one of"):
        train({"multi_strategy": "vector"}, Dataset(X, Y))
    with pytest.raises(ValueError, match="2-D y"):
        TreeBoostRegressor(loss="cox").fit(X, Y)
    with pytest.raises(ValueError, match="eval_metric='ndcg@10' is not defined"):
        TreeBoostRegressor(n_estimators=2, eval_metric="ndcg@10").fit(X, Y)
    with pytest.raises(ValueError, match="eval_metric='ndcg@10' is not defined for several"):
        train({"n_estimators": 2, "eval_metric": "ndcg@10"}, Dataset(X, Y))


def test_early_stopping_on_the_mean_loss(data):
    X, Y = data
    model = TreeBoostRegressor(n_estimators=500, n_iter_no_change=5, random_state=0).fit(X, Y)
    assert model.n_iter_ < 500
    assert model.predict(X).shape == (X.shape[0], 3)


# ---- against XGBoost's one_output_per_tree -------------------------------------------------
def _rmse_pair(X, Y, train_rows, test_rows, n_estimators=100):
    xgb = pytest.importorskip("xgboost")
    ours = TreeBoostRegressor(n_estimators=n_estimators, learning_rate=0.1, max_leaf_nodes=31,
                              min_samples_leaf=20, reg_lambda=0.0, max_bins=255, n_jobs=2,
                              random_state=0).fit(X[train_rows], Y[train_rows])
    theirs = xgb.XGBRegressor(multi_strategy="one_output_per_tree", tree_method="hist",
                              n_estimators=n_estimators, learning_rate=0.1,
                              grow_policy="lossguide", max_leaves=31, max_depth=0,
                              min_child_weight=20, reg_lambda=0.0, max_bin=255, n_jobs=2,
                              random_state=0).fit(X[train_rows], Y[train_rows])
    rmse = [np.sqrt(np.mean((m.predict(X[test_rows]) - Y[test_rows]) ** 2, axis=0))
            for m in (ours, theirs)]
    return rmse


def _check_rmse(X, Y, repeats):
    ours, theirs = np.zeros(Y.shape[1]), np.zeros(Y.shape[1])
    for r in range(repeats):
        order = np.random.default_rng(r).permutation(Y.shape[0])
        cut = int(0.8 * Y.shape[0])
        a, b = _rmse_pair(X, Y, order[:cut], order[cut:])
        ours, theirs = ours + a / repeats, theirs + b / repeats
    assert np.all(ours <= 1.01 * theirs), (ours, theirs)


def test_rmse_against_xgboost_make_regression():
    # correlated targets: each a noisy mix of the same two latent targets
    X, Z = make_regression(n_samples=4000, n_features=10, n_informative=6, n_targets=2,
                           noise=10.0, random_state=1)
    Y = np.column_stack([Z[:, 0], 0.7 * Z[:, 0] + 0.3 * Z[:, 1], Z[:, 1]])
    Y = Y + np.random.default_rng(0).normal(scale=5.0, size=Y.shape)
    _check_rmse(np.tanh(X / 2), Y, repeats=2)  # tanh: targets nonlinear in X


def test_rmse_against_xgboost_stock():
    # stock: daily prices of ten aerospace companies; companies 9 and 10 from the other 8
    path = DATASETS / "stock.arff"
    if not path.is_file():
        pytest.skip(f"{path} not available")
    from scipy.io import arff

    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt") as f:
        table, meta = arff.loadarff(io.StringIO(f.read()))
    columns = np.column_stack([table[n].astype(np.float64) for n in meta.names()])
    _check_rmse(columns[:, :-2], columns[:, -2:], repeats=3)


def test_training_over_a_collective_refuses_several_targets_by_name():
    # a member would gather one column's rows for its line searches: refused, not wrong;
    # each member refuses before it talks to the others
    from treeboost.binning import BinMapper
    from treeboost.collective import Collective

    rng = np.random.default_rng(3)
    X = rng.normal(size=(100, 4))
    Y = np.column_stack([X[:, 0], X[:, 1] - X[:, 2]])
    data = Dataset(X, Y).construct(BinMapper(31, random_state=0).fit(X))
    with Collective.host(2, timeout=30) as host:
        with pytest.raises(ValueError, match="several targets"):
            train({"n_estimators": 2, "random_state": 0}, data, collective=host)
        with pytest.raises(ValueError, match="several quantile levels"):
            train({"loss": "quantile", "alpha": [0.2, 0.8], "n_estimators": 2,
                   "random_state": 0}, Dataset(X, X[:, 0]).construct(data.bin_mapper),
                  collective=host)


# ---- metrics of several outputs: the mean over the outputs (issue 37 part 6) --------------
def _per_column_rmse(Y, P, w=None):
    return np.mean(np.sqrt(np.average((P - Y) ** 2, axis=0, weights=w)))


@pytest.mark.parametrize("weighted", [False, True])
def test_eval_rmse_is_the_mean_of_the_per_target_rmse(data, weighted):
    X, Y = data
    w = np.random.default_rng(0).uniform(0.5, 2.0, X.shape[0]) if weighted else None
    ew = [w[400:]] if weighted else None
    model = TreeBoostRegressor(n_estimators=8, eval_metric=["rmse", "mae"], random_state=0)
    model.fit(X[:400], Y[:400], sample_weight=None if w is None else w[:400],
              eval_set=[(X[400:], Y[400:])], eval_sample_weight=ew)
    log = model.evals_result_["validation_0"]
    P = model.predict(X[400:])
    wv = None if w is None else w[400:]
    assert np.isclose(log["rmse"][-1], _per_column_rmse(Y[400:], P, wv), rtol=1e-12)
    mae = np.mean(np.average(np.abs(P - Y[400:]), axis=0, weights=wv))
    assert np.isclose(log["mae"][-1], mae, rtol=1e-12)


def test_early_stopping_on_the_mean_rmse(data):
    X, Y = data
    model = TreeBoostRegressor(n_estimators=400, learning_rate=0.3, eval_metric="rmse",
                               n_iter_no_change=5, random_state=0)
    model.fit(X[:400], Y[:400], eval_set=[(X[400:], Y[400:])])
    log = model.evals_result_["validation_0"]["rmse"]
    assert model.n_iter_ < 400
    assert model.best_iteration_ == int(np.argmin(log))
    P = model.predict(X[400:])
    assert np.isclose(_per_column_rmse(Y[400:], P), min(log), rtol=1e-12)


def test_rmse_of_a_multi_quantile_model_is_per_level(data):
    X, Y = data
    model = TreeBoostRegressor(loss="quantile", alpha=[0.2, 0.8], n_estimators=5,
                               eval_metric="rmse").fit(X, Y[:, 0], eval_set=[(X, Y[:, 0])])
    P = model.predict(X)
    assert np.isclose(model.evals_result_["validation_0"]["rmse"][-1],
                      _per_column_rmse(Y[:, :1], P), rtol=1e-12)


# ---- the command line: --target a,b --------------------------------------------------------
def test_cli_several_targets_match_the_estimator(data, tmp_path, capsys):
    import json

    import pandas as pd

    from treeboost.cli import main
    from treeboost.study.data import split_indices

    X, Y = data
    X, Y = X[:200], Y[:200, :2]
    frame = pd.DataFrame(X, columns=[f"x{i}" for i in range(X.shape[1])])
    frame["a"], frame["b"] = Y[:, 0], Y[:, 1]
    path, model_path = tmp_path / "d.csv", tmp_path / "m.json"
    frame.to_csv(path, index=False)
    assert main(["train", str(path), "--target", "a,b", "--n-estimators", "15", "--seed",
                 "3", "--format", "json", "--save", str(model_path)]) == 0
    report = json.loads(capsys.readouterr().out)
    train_rows, test_rows = split_indices(frame["a"], "regression", 1, 0, 3)
    ours = TreeBoostRegressor(n_estimators=15, random_state=3).fit(
        frame.iloc[train_rows, :-2].reset_index(drop=True), Y[train_rows])
    P = ours.predict(frame.iloc[test_rows, :-2].reset_index(drop=True))
    rmse = np.sqrt(np.mean((P - Y[test_rows]) ** 2, axis=0))
    assert np.allclose([report["targets"][t]["rmse"] for t in "ab"], rmse, rtol=1e-12)
    assert np.isclose(report["rmse"], rmse.mean(), rtol=1e-12)
    assert main(["train", str(path), "--target", "a,b", "--n-estimators", "15", "--seed",
                 "3"]) == 0
    text = capsys.readouterr().out
    assert f"target    a: rmse {rmse[0]:.6g}," in text
    assert "(mean of 2 targets)" in text
    assert main(["predict", str(model_path), str(path)]) == 0
    printed = pd.read_csv(io.StringIO(capsys.readouterr().out))
    # the model file keeps the targets' names (--target a,b): one column after each
    assert list(printed.columns) == ["prediction_a", "prediction_b"]
    assert np.allclose(printed.to_numpy(), ours.predict(frame.iloc[:, :-2]), rtol=1e-12)


@pytest.mark.parametrize(("extra", "message"), [
    (["--task", "classification"], "needs --task regression"),
    (["--loss", "cox"], "needs a per-column --loss"),
    (["--event-column", "b"], "does not go with --event-column")])
def test_cli_several_targets_refusals_name_target(tmp_path, extra, message):
    import argparse

    import pandas as pd

    from treeboost.cli.train import add_parser, check_multi_target

    parser = argparse.ArgumentParser()
    add_parser(parser.add_subparsers())
    path = tmp_path / "d.csv"
    pd.DataFrame({"x": [1.0, 2.0], "a": [1.0, 2.0], "b": [3.0, 4.0]}).to_csv(path, index=False)
    args = parser.parse_args(["train", str(path), "--target", "a,b", *extra])
    with pytest.raises(ValueError, match=f"^--target a,b .*{message}"):
        check_multi_target(args)
