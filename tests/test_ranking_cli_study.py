"""Learning to rank from the command line and in studies: ``treeboost train --task
ranking`` and ``treeboost study`` on ranking datasets (NDCG@10).

The printed and stored NDCG values are recomputed here from the models, on the test
queries of the one query-split helper (``study.data.split_queries``). Data: small
svmlight files with ``qid:`` written here, and LightGBM's example ranking files in
../shared/datasets/ranking (skipped when that folder is absent).
"""

import io
import json
import sqlite3
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from test_cli import write_csv
from treeboost import TreeBoostRanker, TreeBoostRegressor, load_model
from treeboost.cli import main
from treeboost.datasets import load, one_hot, read_svmlight
from treeboost.metrics import map_at_k, ndcg_at_k
from treeboost.study.data import DatasetSpec, discover, load_spec, split_queries
from treeboost.study.space import config_key, expand, parse_grid

RANKING = Path(__file__).resolve().parents[2] / "shared" / "datasets" / "ranking"


def run_cli(capsys, *argv):
    code = main([str(a) for a in argv])
    out = capsys.readouterr()
    return code, out.out, out.err


def offsets(sizes):
    return np.concatenate(([0], np.cumsum(sizes)))


def ranking_data(n_queries=40, n_features=6, seed=0):
    """Queries of 4 to 12 documents; relevance 0-3 from a noisy linear score."""
    rng = np.random.default_rng(seed)
    sizes = rng.integers(4, 13, size=n_queries)
    X = rng.normal(size=(sizes.sum(), n_features))
    X[rng.random(X.shape) < 0.3] = 0.0  # sparse: zeros are not written
    score = X[:, 0] + 0.5 * X[:, 1] - 0.5 * X[:, 2] + 0.3 * rng.normal(size=len(X))
    y = np.digitize(score, [-0.5, 0.5, 1.2]).astype(float)
    return X, y, sizes


def write_svmlight(path, X, y, sizes, qid=True):
    qids = np.repeat(np.arange(len(sizes)) * 3 + 7, sizes)  # any ids, in runs
    lines = []
    for row, label, q in zip(X, y, qids, strict=True):
        pairs = " ".join(f"{j + 1}:{v:.6f}" for j, v in enumerate(row) if v != 0)
        lines.append(f"{label:g} {f'qid:{q} ' if qid else ''}{pairs}")
    Path(path).write_text("\n".join(lines) + "\n")
    return path


# ---- the query split --------------------------------------------------------------------------
@pytest.mark.parametrize("n_folds", [1, 4])
def test_query_split_keeps_whole_queries_and_is_seeded(n_folds):
    sizes = np.random.default_rng(3).integers(1, 9, size=37)
    query = np.repeat(np.arange(sizes.size), sizes)
    tested = []
    for fold in range(n_folds):
        train, test, train_sizes, test_sizes = split_queries(sizes, n_folds, fold, seed=5)
        assert not set(query[train]) & set(query[test])  # no query on both sides
        np.testing.assert_array_equal(np.sort(np.r_[train, test]), np.arange(sizes.sum()))
        for rows, part in ((train, train_sizes), (test, test_sizes)):
            assert part.sum() == rows.size
            # in file order, each query's rows contiguous: the sizes are the runs of ids
            assert np.all(np.diff(rows) > 0)
            ids, first, counts = np.unique(query[rows], return_index=True, return_counts=True)
            np.testing.assert_array_equal(counts[np.argsort(first)], part)
            np.testing.assert_array_equal(part, sizes[ids])
        tested.extend(np.unique(query[test]))
        again = split_queries(sizes, n_folds, fold, seed=5)
        for a, b in zip(again, (train, test, train_sizes, test_sizes), strict=True):
            np.testing.assert_array_equal(a, b)
    if n_folds == 1:
        assert len(tested) == round(0.2 * sizes.size)
        other = split_queries(sizes, 1, 0, seed=6)[1]
        assert not np.array_equal(other, test)  # another seed, other queries
    else:
        assert sorted(tested) == list(range(sizes.size))  # every query tested once


def test_query_split_needs_enough_queries():
    with pytest.raises(ValueError, match="3 queries are too few for 4 folds"):
        split_queries([2, 3, 4], 4, 0, 0)


# ---- treeboost train --task ranking ---------------------------------------------------------
def test_train_ranking_prints_the_ndcg_of_its_saved_model(tmp_path, capsys):
    X, y, sizes = ranking_data()
    data = write_svmlight(tmp_path / "small.svm", X, y, sizes)
    model_path = tmp_path / "m.json"
    code, out, err = run_cli(capsys, "train", data, "--n-estimators", 8, "--max-leaf-nodes", 5,
                             "--min-samples-leaf", 3, "--seed", 2, "--save", model_path)
    assert code == 0, err
    assert "(ranking, " in out
    assert "80/20 by query" in out
    X_all, y_all, group = read_svmlight(data)
    train, test, train_sizes, test_sizes = split_queries(group, 1, 0, 2)
    assert f"{train.size} train ({train_sizes.size} queries)" in out
    assert f"{test.size} test ({test_sizes.size} queries)" in out
    model = load_model(model_path)
    assert isinstance(model, TreeBoostRanker)
    assert model.get_params()["n_estimators"] == 8
    scores = model.predict(X_all[test])
    for k in (1, 3, 5, 10):
        printed = float(out.split(f"ndcg@{k} ")[1].split()[0])
        expected = ndcg_at_k(y_all[test], scores, offsets(test_sizes), k)
        assert printed == pytest.approx(expected, rel=1e-5)  # 6 significant digits
    printed = float(out.split("map@10 ")[1].split()[0])
    assert printed == pytest.approx(map_at_k(y_all[test], scores, offsets(test_sizes), 10),
                                    rel=1e-5)
    # the model is the API's on the same queries
    api = TreeBoostRanker(n_estimators=8, max_leaf_nodes=5, min_samples_leaf=3,
                          random_state=2).fit(X_all[train], y_all[train], group=train_sizes)
    np.testing.assert_array_equal(api.predict(X_all[test]), scores)
    # and `treeboost predict` gives its scores on an svmlight file
    code, out, err = run_cli(capsys, "predict", model_path, data)
    assert code == 0, err
    written = pd.read_csv(io.StringIO(out))
    np.testing.assert_array_equal(written["prediction"], model.predict(X_all))


@pytest.mark.skipif(not (RANKING / "rank.train").is_file(), reason=f"{RANKING} not found")
def test_train_with_a_test_file_on_lightgbm_rank_data(tmp_path, capsys):
    model_path = tmp_path / "m.json"
    code, out, err = run_cli(capsys, "train", RANKING / "rank.train", "--test",
                             RANKING / "rank.test", "--n-estimators", 20, "--format", "json",
                             "--lambdarank-truncation-level", 20, "--sigmoid", 1.5,
                             "--save", model_path)
    assert code == 0, err
    report = json.loads(out)
    assert (report["task"], report["n_train"], report["n_test"]) == ("ranking", 3005, 768)
    assert (report["n_queries_train"], report["n_queries_test"]) == (201, 50)
    assert report["params"] == {"n_estimators": 20, "lambdarank_truncation_level": 20,
                                "sigmoid": 1.5}
    model = load_model(model_path)
    assert (model.lambdarank_truncation_level, model.sigmoid) == (20, 1.5)
    X, y, group = read_svmlight(RANKING / "rank.test", n_features=model.n_features_in_)
    scores = model.predict(X)
    for k in (1, 3, 5, 10):
        assert report[f"ndcg@{k}"] == ndcg_at_k(y, scores, offsets(group), k)
    assert report["map@10"] == map_at_k(y, scores, offsets(group), 10)


def test_train_ranking_from_a_csv_query_column(tmp_path, capsys):
    X, y, sizes = ranking_data(n_queries=30, seed=1)
    frame = pd.DataFrame(X, columns=[f"f{j}" for j in range(X.shape[1])])
    frame.insert(0, "query", np.repeat([f"q{i}" for i in range(sizes.size)], sizes))
    frame["rel"] = y
    frame.to_csv(tmp_path / "r.csv", index=False)
    code, out, err = run_cli(capsys, "train", tmp_path / "r.csv", "--target", "rel",
                             "--query-column", "query", "--n-estimators", 5,
                             "--min-samples-leaf", 3, "--format", "json")
    assert code == 0, err
    report = json.loads(out)
    assert report["task"] == "ranking"
    assert report["n_features"] == X.shape[1]
    train, test, train_sizes, test_sizes = split_queries(sizes, 1, 0, 0)
    features = frame.drop(columns=["query", "rel"])
    model = TreeBoostRanker(n_estimators=5, min_samples_leaf=3, random_state=0).fit(
        features.iloc[train], y[train], group=train_sizes)
    assert report["ndcg@10"] == ndcg_at_k(y[test], model.predict(features.iloc[test]),
                                          offsets(test_sizes), 10)
    # a query whose rows are apart is refused
    frame.loc[3, "query"] = "q9"
    frame.to_csv(tmp_path / "r.csv", index=False)
    code, out, err = run_cli(capsys, "train", tmp_path / "r.csv", "--target", "rel",
                             "--query-column", "query")
    assert code == 1
    assert "are not contiguous" in err


@pytest.mark.parametrize(("kind", "argv", "message"), [
    ("csv", ["--target", "rel", "--task", "ranking"], "ranking needs query groups"),
    ("svm-no-qid", [], "neither 'qid:' tokens nor"),
    ("svm-no-qid", ["--task", "ranking"], "neither 'qid:' tokens nor"),
    ("svm", ["--task", "regression"], "read for ranking only"),
    ("svm", ["--alpha", "0.5"], "--alpha applies to regression only, and this dataset's "
                                "task is ranking"),
    ("csv", ["--target", "rel", "--sigmoid", "2"], "--sigmoid applies to ranking only, "
                                                   "and this dataset's task is regression"),
    ("csv", ["--target", "rel", "--query-column", "nope"], "query column 'nope' is not"),
])
def test_ranking_input_errors_are_one_clear_line(tmp_path, capsys, kind, argv, message):
    X, y, sizes = ranking_data(n_queries=12)
    pd.DataFrame(X).add_prefix("f").assign(rel=y).to_csv(tmp_path / "r.csv", index=False)
    paths = {"csv": tmp_path / "r.csv",
             "svm": write_svmlight(tmp_path / "q.svm", X, y, sizes),
             "svm-no-qid": write_svmlight(tmp_path / "plain.svm", X, y, sizes, qid=False)}
    code, out, err = run_cli(capsys, "train", paths[kind], *argv, "--n-estimators", 2)
    assert code == 1
    assert out == ""
    lines = err.strip().splitlines()
    assert len(lines) == 1
    assert "Traceback" not in err
    assert lines[0].startswith("treeboost train: error:")
    assert message in lines[0]


# ---- treeboost study on ranking data -------------------------------------------------------
GRID = ["learning_rate=0.1,0.3", "max_leaf_nodes=3,6", "n_estimators=3,8", "subsample=1.0"]


def test_study_scores_ranking_by_ndcg_at_10(tmp_path, capsys):
    """Stored NDCG@10 per stage equals the estimator's on the same test queries; the
    reference models run (scikit-learn, without a ranker, sits out) and the report
    names the metric."""
    X, y, sizes = ranking_data(n_queries=30, seed=4)
    folder = tmp_path / "data"
    folder.mkdir()
    write_svmlight(folder / "small.svm", X, y, sizes)
    # a folder whose manifest says "ranking"
    (folder / "MANIFEST.tsv").write_text("name\tfile\tformat\ttask\ttarget\n"
                                         "ranks\tsmall.svm\tsvmlight\tranking\t\n")
    baselines = ["treeboost", "sklearn"]
    try:
        import lightgbm  # noqa: F401

        baselines.append("lightgbm")
    except ImportError:
        pass
    out = tmp_path / "s"
    code = main(["study", str(folder), "--out", str(out), "--folds", "2", "--seed", "3",
                 "--jobs", "1", "--baselines", ",".join(baselines),
                 *sum((["--grid", g] for g in GRID), [])])
    assert code == 0
    err = capsys.readouterr().err
    n_results = 8 * 2 + (len(baselines) - 1) * 2  # configurations x folds + baselines
    assert f"{n_results}/{n_results} (100%)" in err
    with sqlite3.connect(out / "study.sqlite") as db:
        stored = {(c, f): s for c, f, s in db.execute("SELECT config, fold, score FROM results")}
        base = {(m, f): s for m, f, s in db.execute("SELECT model, fold, score FROM baselines")}
        assert db.execute("SELECT task FROM datasets").fetchall() == [("ranking",)]
    assert len(stored) == 16
    assert {m for m, _ in base} == set(baselines) - {"sklearn"}
    for fold in (0, 1):
        train, test, train_sizes, test_sizes = split_queries(sizes, 2, fold, 3)
        Xc, _, _ = read_svmlight(folder / "small.svm")
        for config in expand(parse_grid(GRID)):
            model = TreeBoostRanker(**config, random_state=3).fit(
                Xc[train], y[train], group=train_sizes)
            expected = ndcg_at_k(y[test], model.predict(Xc[test]), offsets(test_sizes), 10)
            assert stored[config_key(config), fold] == pytest.approx(expected, abs=1e-15)
        model = TreeBoostRanker(random_state=3).fit(Xc[train], y[train], group=train_sizes)
        assert base["treeboost", fold] == pytest.approx(
            ndcg_at_k(y[test], model.predict(Xc[test]), offsets(test_sizes), 10), abs=1e-15)
    best = json.loads((out / "best.json").read_text())[0]
    means = {}
    for (c, _), s in stored.items():
        means.setdefault(c, []).append(s)
    assert best["metric"] == "ndcg@10"
    assert best["score"] == max(np.mean(v) for v in means.values())  # higher is better
    md = (out / "report.md").read_text()
    assert "## Ranking: best configuration and NDCG@10 per dataset" in md
    assert "| treeboost best NDCG@10 |" in md
    assert "Best NDCG@10 per dataset" in md
    assert (out / "figures" / "best_ranking.png").stat().st_size > 1000
    assert "sklearn GradientBoosting" not in md.split("## Ranking")[1]


def test_discover_and_load_ranking_specs(tmp_path):
    X, y, sizes = ranking_data(n_queries=10)
    # LightGBM's layout: no suffix (sniffed), the query sizes in a companion file
    write_svmlight(tmp_path / "rank.train", X, y, sizes, qid=False)
    (tmp_path / "rank.train.query").write_text("".join(f"{n}\n" for n in sizes))
    specs = discover([tmp_path], target="ignored")
    assert [(s.name, s.target) for s in specs] == [("rank.train", None)]
    X_read, y_read, task, group = load_spec(specs[0], return_group=True)
    assert task == "ranking"
    np.testing.assert_array_equal(group, sizes)
    np.testing.assert_array_equal(y_read, y)
    assert X_read.shape == X.shape
    frame = pd.DataFrame({"q": [1, 1, 2, 2, 2], "x": [0.1, 0.2, 0.3, 0.4, 0.5],
                          "rel": [0, 1, 2, 0, 1]})
    frame.to_csv(tmp_path / "r.csv", index=False)
    X_csv, y_csv, task, group = load_spec(DatasetSpec("r", str(tmp_path / "r.csv"), "rel",
                                                      None, "q"), return_group=True)
    assert (task, list(X_csv.columns), list(group)) == ("ranking", ["x"], [2, 3])


def test_test_file_for_regression_with_one_hot(tmp_path, capsys):
    """--test serves the other tasks too: the test file's text column is coded with the
    training file's categories (one it never uses still gets its column of zeros)."""
    train, test = write_csv(tmp_path / "a.csv", n=120), write_csv(tmp_path / "b.csv", seed=2)
    frame = pd.read_csv(test)
    frame[frame["town"] == "north"].to_csv(test, index=False)  # no "south" in the test file
    code, out, err = run_cli(capsys, "train", train, "--test", test, "--target", "price",
                             "--one-hot", "--n-estimators", 5, "--format", "json")
    assert code == 0, err
    report = json.loads(out)
    X, y = load(train, target="price")
    X_test, y_test = load(test, target="price")
    assert (report["n_train"], report["n_test"]) == (120, len(y_test))
    assert report["split"] == f"test file {test}"
    model = TreeBoostRegressor(n_estimators=5, random_state=0).fit(one_hot(X), y)
    encoded = one_hot(X_test).reindex(columns=one_hot(X).columns, fill_value=0.0)
    rmse = np.sqrt(np.mean((model.predict(encoded) - y_test.to_numpy()) ** 2))
    assert report["rmse"] == pytest.approx(rmse, rel=1e-12)
