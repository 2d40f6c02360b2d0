"""Survival (``loss="cox"``) through the clients: ``treeboost train``/``predict``, the study,
and ``treeboost.dask`` (issue 37, part 6).

The printed and stored concordance values are recomputed here from ``TreeBoostSurvival``
on the rows of the one split helper (``study.data.split_indices``, stratified by the
event indicator). Data: a rossi-shaped synthetic set written to a CSV under ``tmp_path``,
and a smaller synthetic set.
"""

import io
import json
import sqlite3

import numpy as np
import pandas as pd
import pytest

from treeboost.cli import main
from treeboost.study import run_study
from treeboost.study.data import DatasetSpec, load_spec, prepare_fold, split_indices
from treeboost.survival import (
    TreeBoostSurvival,
    concordance_index,
    cox_negative_log_likelihood,
)

N_TREES = 30


def run_cli(capsys, *argv):
    code = main([str(a) for a in argv])
    out = capsys.readouterr()
    return code, out.out, out.err


@pytest.fixture(scope="module")
def rossi_csv(tmp_path_factory):
    """A rossi-shaped CSV (lifelines pins pandas<3, so it is not a test dependency): week
    (integer times, many tied), arrest (0/1 event, ~30% censored) and 8 features,
    prio a count; 432 rows."""
    rng = np.random.default_rng(7)
    n = 432
    frame = pd.DataFrame(rng.normal(size=(n, 7)), columns=[f"x{i}" for i in range(7)])
    risk = frame["x0"] - 0.5 * frame["x1"] + 0.3 * frame["x2"]
    frame["week"] = np.ceil(rng.exponential(20 * np.exp(-risk))).clip(1, 52).astype(int)
    frame["arrest"] = ((rng.random(n) < 0.7) & (frame["week"] < 52)).astype(int)
    frame["prio"] = rng.poisson(2, n)  # prior convictions: a count, not an event column
    frame.loc[0, "prio"] = 3
    path = tmp_path_factory.mktemp("rossi") / "rossi.csv"
    frame.to_csv(path, index=False)
    return path


def synthetic(n=300, seed=0):
    """Features, times (> 0, some tied) and a 0/1 event column, ~30% censored."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 4))
    time = np.round(rng.exponential(np.exp(-X[:, 0] + 0.5 * X[:, 1])), 2) + 0.01
    event = (rng.random(n) < 0.7).astype(int)
    return X, time, event


def reference(path, *, seed=0, **params):
    """The CLI's split refitted with ``TreeBoostSurvival``: (model, X, y, train, test)."""
    X, y, task = load_spec(DatasetSpec("rossi", str(path), "week", None, None, "arrest"))
    assert task == "survival"
    train, test = split_indices(y, task, 1, 0, seed)
    model = TreeBoostSurvival(n_estimators=N_TREES, random_state=seed, **params)
    model.fit(X.iloc[train], y.to_numpy()[train])
    return model, X, y.to_numpy(), train, test


def test_train_prints_the_concordance_of_the_estimator(rossi_csv, tmp_path, capsys):
    saved = tmp_path / "cox.json"
    code, out, err = run_cli(capsys, "train", rossi_csv, "--target", "week",
                             "--event-column", "arrest", "--n-estimators", N_TREES,
                             "--format", "json", "--save", saved)
    assert code == 0, err
    report = json.loads(out)
    model, X, y, train, test = reference(rossi_csv)
    risk = model.predict(X.iloc[test])
    assert report["task"] == "survival"
    assert report["split"] == "80/20 stratified by event"
    assert (report["n_train"], report["n_test"]) == (train.size, test.size)
    assert report["cindex"] == concordance_index(y[test], risk)
    assert report["cox-nloglik"] == cox_negative_log_likelihood(y[test], risk)
    # stratified by event: both parts keep the share of events
    events = int(np.sum(y > 0))
    assert report["n_events_train"] + report["n_events_test"] == events
    assert abs(report["n_events_test"] / test.size - events / y.size) < 0.01

    # predict of the saved model: the log hazard ratios of every row of the file
    code, out, err = run_cli(capsys, "predict", saved, rossi_csv)
    assert code == 0, err
    predicted = pd.read_csv(io.StringIO(out), float_precision="round_trip")["prediction"]
    assert np.array_equal(predicted.to_numpy(), model.predict(X))

    code, out, _ = run_cli(capsys, "train", rossi_csv, "--target", "week",
                           "--event-column", "arrest", "--n-estimators", N_TREES)
    assert code == 0
    assert "(survival, 432 rows, 8 features)" in out
    assert f"cindex    {report['cindex']:.6g}" in out
    assert "cox-nloglik" in out


def test_train_with_loss_aft_scores_the_predicted_times(rossi_csv, capsys):
    # an AFT model predicts times: a later time is a lower risk, so the concordance is
    # that of -log time, and the likelihood is the AFT model's own
    from treeboost.survival import aft_bounds, aft_negative_log_likelihood

    code, out, err = run_cli(capsys, "train", rossi_csv, "--target", "week",
                             "--event-column", "arrest", "--loss", "aft",
                             "--aft-loss-distribution", "logistic",
                             "--n-estimators", N_TREES, "--format", "json")
    assert code == 0, err
    report = json.loads(out)
    model, X, y, train, test = reference(rossi_csv, loss="aft",
                                         aft_loss_distribution="logistic")
    log_time = model.predict(X.iloc[test], raw_score=True)
    assert report["params"]["aft_loss_distribution"] == "logistic"
    assert report["cindex"] == concordance_index(aft_bounds(y[test]), -log_time)
    assert report["cindex"] == concordance_index(y[test], -log_time)  # right-censored
    assert report["cindex"] > 0.6
    assert report["aft-nloglik"] == aft_negative_log_likelihood(
        aft_bounds(y[test]), log_time, distribution="logistic", scale=1.0)
    assert "cox-nloglik" not in report


def test_signed_times_with_loss_cox_are_the_same_data(rossi_csv, tmp_path, capsys):
    frame = pd.read_csv(rossi_csv)
    frame["week"] = np.where(frame.pop("arrest") == 1, frame["week"], -frame["week"])
    signed = tmp_path / "signed.csv"
    frame.to_csv(signed, index=False)
    runs = []
    for argv in (["--event-column", "arrest"], ["--loss", "cox"], ["--task", "survival"]):
        data = rossi_csv if argv[0] == "--event-column" else signed
        code, out, err = run_cli(capsys, "train", data, "--target", "week", *argv,
                                 "--n-estimators", 10, "--format", "json")
        assert code == 0, err
        runs.append(json.loads(out))
    assert {r["task"] for r in runs} == {"survival"}
    assert len({(r["cindex"], r["cox-nloglik"], r["n_test"]) for r in runs}) == 1


def test_train_with_a_test_file_and_text_events(tmp_path, capsys):
    X, time, event = synthetic()
    frame = pd.DataFrame(X, columns=[f"x{j}" for j in range(4)])
    frame["time"], frame["status"] = time, np.where(event == 1, "true", "false")
    frame.iloc[:240].to_csv(tmp_path / "train.csv", index=False)
    frame.iloc[240:].to_csv(tmp_path / "test.csv", index=False)
    code, out, err = run_cli(capsys, "train", tmp_path / "train.csv", "--test",
                             tmp_path / "test.csv", "--target", "time", "--event-column",
                             "status", "--n-estimators", 20, "--format", "json")
    assert code == 0, err
    report = json.loads(out)
    signed = np.where(event == 1, time, -time)
    model = TreeBoostSurvival(n_estimators=20, random_state=0).fit(
        frame.iloc[:240, :4], signed[:240])
    assert report["cindex"] == model.score(frame.iloc[240:, :4], signed[240:])


@pytest.mark.parametrize(("change", "argv", "message"), [
    (None, ["--event-column", "status"], "event column 'status' is not a column"),
    (None, ["--event-column", "prio"], "event column 'prio' must hold 0/1 or true/false"),
    ("negative", ["--event-column", "arrest"], "survival times must be > 0 (target column "
                                               "'week'"),
    ("zero", ["--loss", "cox"], "signed survival times (target column 'week'"),
    ("no events", ["--event-column", "arrest"], "event column 'arrest' holds no event"),
    (None, ["--event-column", "arrest", "--alpha", "0.5"], "--alpha applies to regression"),
    (None, ["--loss", "cox", "--task", "regression"], "--loss cox is a survival loss"),
    (None, ["--event-column", "arrest", "--loss", "huber"], "--loss huber is not a survival"),
    (None, ["--event-column", "arrest", "--task", "classification"],
     "an event column ('arrest') is for survival"),
])
def test_bad_survival_input_is_one_line_naming_it(rossi_csv, tmp_path, capsys, change, argv,
                                                  message):
    frame = pd.read_csv(rossi_csv)
    if change == "negative":
        frame.loc[5, "week"] = -3
    elif change == "zero":
        frame.loc[7, "week"] = 0
    elif change == "no events":
        frame["arrest"] = 0
    data = tmp_path / "bad.csv"
    frame.to_csv(data, index=False)
    code, out, err = run_cli(capsys, "train", data, "--target", "week", *argv)
    assert code == 1
    assert out == ""
    assert err.startswith("treeboost train: error: ")
    assert err.count("\n") == 1
    assert message in err
    if "prio" in argv:
        assert err.rstrip().endswith("data row 1 has 3")


def test_study_scores_survival_by_the_concordance_of_the_estimator(rossi_csv, tmp_path):
    folder = tmp_path / "data"
    folder.mkdir()
    (folder / "rossi.csv").write_bytes(rossi_csv.read_bytes())
    (folder / "MANIFEST.tsv").write_text("name\tfile\ttask\ttarget\tevent\n"
                                         "rossi\trossi.csv\tsurvival\tweek\tarrest\n")
    out = run_study([folder], tmp_path / "study", jobs=1, baselines=["treeboost"],
                    grid=["learning_rate=0.1", "max_leaf_nodes=3,6", "n_estimators=10,20",
                          "subsample=1.0"], progress=None)
    best = json.loads((out / "best.json").read_text())
    assert [(b["dataset"], b["task"], b["metric"]) for b in best] == \
        [("rossi", "survival", "cindex")]
    spec = DatasetSpec("rossi", str(folder / "rossi.csv"), "week", "survival", None, "arrest")
    fold = prepare_fold(spec, 1, 0, 0)
    db = sqlite3.connect(out / "study.sqlite")
    try:
        stored = dict(db.execute("SELECT config, score FROM results").fetchall())
        (baseline,), = db.execute("SELECT score FROM baselines WHERE model='treeboost'")
    finally:
        db.close()
    assert len(stored) == 4
    for config, value in stored.items():
        model = TreeBoostSurvival(**json.loads(config), random_state=0).fit(
            fold.X_train, fold.train_codes)
        assert value == pytest.approx(model.score(fold.X_test, fold.test_codes), abs=1e-12)
    default = TreeBoostSurvival(random_state=0).fit(fold.X_train, fold.train_codes)
    assert baseline == pytest.approx(default.score(fold.X_test, fold.test_codes), abs=1e-12)
    report = (out / "report.md").read_text()
    assert "Survival: best configuration and concordance index per dataset" in report


@pytest.mark.slow
def test_dask_regressor_with_loss_cox_is_the_local_model():
    distributed = pytest.importorskip("distributed")
    da = pytest.importorskip("dask.array")
    from test_dask import _spread  # the row chunks placed on the workers in turn
    from treeboost import Dataset, train
    from treeboost.dask import DaskTreeBoostRegressor

    X, time, event = synthetic(n=1200, seed=1)
    y = np.where(event == 1, time, -time)
    w = np.random.default_rng(2).uniform(0.5, 2.0, size=y.size)
    params = {"loss": "cox", "n_estimators": 12, "max_leaf_nodes": 10, "learning_rate": 0.2,
              "random_state": 3}
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as cluster, \
            distributed.Client(cluster) as client:
        # spread by hand: the scheduler may put every chunk of da.from_array on one worker
        Xd = _spread(client, X)
        model = DaskTreeBoostRegressor(**params, client=client).fit(
            Xd, _spread(client, y), sample_weight=_spread(client, w))
        assert len(model.collective_stats_) == 2  # trained over a collective of two
        risk = model.predict(Xd).compute()
        single = train(params, Dataset(X, y, weight=w).construct(model.booster_.bin_mapper))
        zero = y.copy()
        zero[7] = 0.0
        with pytest.raises(Exception, match="survival time"):
            DaskTreeBoostRegressor(**params, client=client).fit(
                Xd, da.from_array(zero, chunks=300))
    assert np.array_equal(risk, np.ravel(single.predict_raw(X)))
    local = TreeBoostSurvival(**params).fit(X, y, sample_weight=w)
    assert np.array_equal(risk, local.predict(X))
    assert concordance_index(y, risk) > 0.7
