"""The public model view (issue 34): ``Booster.dump_model``, ``trees_to_dataframe``,
``save_model``/``load_model`` and ``treeboost dump``.

The acceptance property of the dump is that it is complete: a few lines of plain Python
that walk it (raw thresholds, category values, the missing side) give ``predict_raw``
bit for bit, on numerical, integer-coded and pandas categorical features with missing
and unseen values. The table is checked row for row against the model file it views,
and against LightGBM's own table for the same trees.
"""

import json
import math

import numpy as np
import pandas as pd
import pytest

from treeboost import Dataset, TreeBoostClassifier, TreeBoostRegressor, train
from treeboost.booster import Booster
from treeboost.cli import main
from treeboost.exceptions import ModelFormatError
from treeboost.model_view import DATAFRAME_COLUMNS
from treeboost.serialization import save_booster

N_TRAIN, N_TEST = 600, 300
N_CODES = 8  # categories of the categorical feature in training
LABELS = ["ash", "birch", "cedar", "elm", "fir", "oak", "pine", "yew"]
UNSEEN = ["zelkova", "maple"]
# one thread: tiny data, where parallel regions only cost time
SMALL = dict(n_estimators=8, learning_rate=0.3, max_leaf_nodes=8, min_samples_leaf=5,
             n_jobs=1, random_state=0)


# ---- a predictor written against the documented view alone -------------------------------
def _is_missing(x) -> bool:
    return x is None or (isinstance(x, float) and math.isnan(x))


def _goes_left(node: dict, feature: dict, x) -> bool:
    """The documented routing rule of one split, in the user's values."""
    if node["split_type"] == "numerical":
        return node["missing_go_left"] if _is_missing(x) else x <= node["threshold"]
    if _is_missing(x) or x not in feature["categories"]:  # missing or unseen in training
        return node["missing_go_left"]
    return x in node["categories_left"]


def walk_predict(model: dict, rows) -> np.ndarray:
    """Raw scores from ``dump_model()``: init_score plus each tree's leaf, in model order."""
    out = np.empty((len(rows), model["n_outputs"]))
    for i, row in enumerate(rows):
        raw = list(model["init_score"])
        for stage in model["trees"]:
            for tree in stage:
                node = tree["nodes"][0]
                while not node["is_leaf"]:
                    f = node["feature"]
                    child = "left" if _goes_left(node, model["features"][f], row[f]) else "right"
                    node = tree["nodes"][node[child]]
                raw[tree["output"]] += node["value"]
        out[i] = raw
    return out


def _rows(X) -> list:
    """Each row's values as the user gives them (labels in a frame's category columns)."""
    if isinstance(X, pd.DataFrame):
        return [list(r) for r in X.itertuples(index=False)]
    return X.tolist()


# ---- data ---------------------------------------------------------------------------------
def _data(n, seed, categories):
    """x0, x1 numeric with NaN; x2 a category drawn from ``categories`` (NaN 5 %)."""
    rng = np.random.default_rng(seed)
    x0 = rng.normal(size=n)
    x1 = rng.uniform(-2, 2, size=n)
    cat = rng.integers(0, len(categories), size=n)
    signal = x0 + 1.5 * np.isin(cat, [1, 4, 6]) - 0.8 * (cat == 2) + 0.3 * np.sin(2 * x1)
    x0[rng.random(n) < 0.1] = np.nan
    x1[rng.random(n) < 0.05] = np.nan
    missing_cat = rng.random(n) < 0.05
    signal = signal + 1.0 * missing_cat  # missing categories have a signal of their own
    return x0, x1, cat, missing_cat, signal + 0.2 * rng.normal(size=n)


def _target(task: str, signal: np.ndarray) -> np.ndarray:
    if task == "regression":
        return signal
    n_classes = 2 if task == "binary" else 3
    cuts = np.quantile(signal, np.linspace(0, 1, n_classes + 1)[1:-1])
    return np.searchsorted(cuts, signal)


def _codes_X(x0, x1, cat, missing_cat, categories):
    codes = np.asarray(categories, dtype=float)[cat]
    codes[missing_cat] = np.nan
    return np.column_stack([x0, x1, codes])


def _frame_X(x0, x1, cat, missing_cat, categories, all_labels):
    labels = np.asarray(categories, dtype=object)[cat]
    labels[missing_cat] = None
    return pd.DataFrame({"x0": x0, "x1": x1,
                         "tree": pd.Categorical(labels, categories=all_labels)})


def _train_test(kind: str, task: str):
    """(X_train, y_train, X_test, estimator keywords) of one input kind."""
    train_parts = _data(N_TRAIN, 0, range(N_CODES))
    # the test rows also hold categories never seen in training (codes 8-11, -1; labels
    # absent from the training frame), and NaN everywhere
    test_parts = _data(N_TEST, 1, range(N_CODES + len(UNSEEN) + 2))
    y = _target(task, train_parts[-1])
    if kind == "frame" or kind == "frame_codes":
        X = _frame_X(*train_parts[:4], LABELS, LABELS)
        test_labels = LABELS + UNSEEN + [None, None]
        X_test = _frame_X(*test_parts[:4], test_labels, LABELS + UNSEEN)
        # "frame_codes": the category column split as numbers (its codes in label order)
        extra = {} if kind == "frame" else {"categorical_features": None}
        return X, y, X_test, extra
    codes = list(range(N_CODES))
    X = _codes_X(*train_parts[:4], codes)
    X_test = _codes_X(*test_parts[:4], codes + [8, 9, 11, -1])
    extra = {"categorical_features": [2]}
    if kind == "codes_partition":
        # many-against-many category sets; and 5 bins keep only the 5 most frequent
        # categories, the others sharing the missing bin with NaN and unseen codes
        extra.update(max_cat_to_onehot=2, max_bins=5)
    return X, y, X_test, extra


def _fit(task: str, kind: str, **params):
    X, y, X_test, extra = _train_test(kind, task)
    cls = TreeBoostRegressor if task == "regression" else TreeBoostClassifier
    return cls(**{**SMALL, **extra, **params}).fit(X, y), X, X_test


def _split_nodes(model: dict, split_type: str | None = None) -> list[dict]:
    return [n for stage in model["trees"] for t in stage for n in t["nodes"]
            if not n["is_leaf"] and split_type in (None, n["split_type"])]


# ---- dump_model ---------------------------------------------------------------------------
@pytest.mark.parametrize("task", ["regression", "binary", "multiclass"])
@pytest.mark.parametrize("kind", ["codes", "codes_partition", "frame", "frame_codes"])
def test_walking_the_dump_reproduces_predict_raw(task, kind):
    est, X, X_test = _fit(task, kind)
    booster = est.booster_
    model = booster.dump_model()
    assert model["n_outputs"] == (3 if task == "multiclass" else 1)
    cat_splits = _split_nodes(model, "categorical")
    # not vacuous: the trees split on the category feature and on the numbers
    assert cat_splits
    assert _split_nodes(model, "numerical")
    if kind.startswith("frame"):
        assert all(set(n["categories_left"]) <= set(LABELS) for n in cat_splits)
    if kind == "codes_partition":  # 3 of the 8 training codes route as missing values
        assert len(model["features"][2]["categories"]) == 5
    for X_eval in (X, X_test):
        # the same additions in the same order as the kernels: equal to the bit
        np.testing.assert_array_equal(walk_predict(model, _rows(X_eval)),
                                      booster.predict_raw(X_eval))


def test_walking_the_dump_reproduces_dart():
    # DART rescales earlier trees after they are grown: the dump shows current values
    est, X, X_test = _fit("regression", "codes", boosting="dart", drop_rate=0.5,
                          skip_drop=0.0)
    np.testing.assert_array_equal(walk_predict(est.booster_.dump_model(), _rows(X_test)),
                                  est.booster_.predict_raw(X_test))


def test_dump_is_plain_json_with_one_key_set_per_node():
    est, _, _ = _fit("multiclass", "frame")
    model = est.booster_.dump_model()

    def check(value, where):
        if isinstance(value, dict):
            for k, v in value.items():
                assert isinstance(k, str), where
                check(v, f"{where}.{k}")
        elif isinstance(value, list):
            for i, v in enumerate(value):
                check(v, f"{where}[{i}]")
        else:
            assert value is None or type(value) in (str, int, float, bool), where

    check(model, "model")
    assert json.loads(json.dumps(model, allow_nan=False)) == model
    keys = {frozenset(n) for stage in model["trees"] for t in stage for n in t["nodes"]}
    assert len(keys) == 1  # leaves and splits alike: one stable schema
    assert model["n_classes"] == 3
    assert model["n_stages"] == SMALL["n_estimators"]
    assert [[t["tree_index"] for t in stage] for stage in model["trees"]] == [
        [3 * m, 3 * m + 1, 3 * m + 2] for m in range(SMALL["n_estimators"])]
    assert model["feature_names"] == ["x0", "x1", "tree"]
    assert model["features"][2]["categories"] == LABELS


def test_categorical_split_closed_form():
    # y is 1 exactly for the categories b, d and for missing values: one split with
    # learning rate 1 and no regularisation separates them, and each leaf's value
    # plus F0 is its rows' mean, 1 or 0 (the closed form of squared error)
    labels = np.array(["a", "b", "c", "d", None], dtype=object)
    column = np.repeat(labels, 50)
    y = np.isin(column, ["b", "d", None]).astype(float)
    X = pd.DataFrame({"c": pd.Categorical(column, categories=["a", "b", "c", "d"])})
    est = TreeBoostRegressor(n_estimators=1, learning_rate=1.0, max_leaf_nodes=2,
                             min_samples_leaf=1, reg_lambda=0.0, max_cat_to_onehot=1,
                             cat_l2=0.0, cat_smooth=0.0, n_jobs=1).fit(X, y)
    model = est.booster_.dump_model()
    root, *leaves = model["trees"][0][0]["nodes"]
    assert root["split_type"] == "categorical"
    assert root["threshold"] is None
    ones_left = root["missing_go_left"]  # missing values go with b and d
    assert set(root["categories_left"]) == ({"b", "d"} if ones_left else {"a", "c"})
    assert root["unseen_go_left"] == root["missing_go_left"]
    f0 = model["init_score"][0]
    assert f0 == pytest.approx(0.6)  # 150 of 250 rows are ones
    left, right = leaves[root["left"] - 1], leaves[root["right"] - 1]
    # 1e-7: gradients are float32 (F0 - y = -0.4 is stored as -0.40000000596...)
    assert left["value"] + f0 == pytest.approx(1.0 if ones_left else 0.0, abs=1e-7)
    assert right["value"] + f0 == pytest.approx(0.0 if ones_left else 1.0, abs=1e-7)
    assert left["count"] + right["count"] == root["count"] == 250


# ---- trees_to_dataframe -------------------------------------------------------------------
def _preorder(left, right, node=0):
    yield node
    if left[node] >= 0:
        yield from _preorder(left, right, left[node])
        yield from _preorder(left, right, right[node])


def test_trees_to_dataframe_matches_the_model_file_row_for_row(tmp_path):
    est, _, _ = _fit("multiclass", "frame")
    booster = est.booster_
    path = tmp_path / "model.json"
    booster.save_model(path)
    doc = json.loads(path.read_text())
    df = booster.trees_to_dataframe()
    assert list(df.columns) == list(DATAFRAME_COLUMNS)
    edges, cats = doc["bin_mapper"]["edges"], dict(doc["pandas_categories"])
    K = len(doc["trees"][0])
    rows = iter(df.to_dict("records"))
    for m, stage in enumerate(doc["trees"]):
        for k, t in enumerate(stage):
            left, right = t["left"], t["right"]
            internal = [i for i in range(len(left)) if left[i] >= 0]
            leaves = [i for i in range(len(left)) if left[i] < 0]
            name = {i: f"{m * K + k}-S{r}" for r, i in enumerate(internal)}
            name.update({i: f"{m * K + k}-L{r}" for r, i in enumerate(leaves)})
            parent = {c: i for i in internal for c in (left[i], right[i])}
            depth = {0: 1}
            for node in _preorder(left, right):
                row = next(rows)
                depth.update({c: depth[node] + 1 for c in (left[node], right[node])})
                assert row["tree_index"] == m * K + k
                assert row["node_index"] == name[node]
                assert row["node_depth"] == depth[node]
                if node == 0:
                    assert pd.isna(row["parent_index"])
                else:
                    assert row["parent_index"] == name[parent[node]]
                # floats are the file's floats: the same float64 (the file writes repr)
                assert row["value"] == t["value"][node]
                assert row["weight"] == t["cover"][node]
                assert row["count"] == t["count"][node]
                if left[node] < 0:
                    assert pd.isna(row["split_feature"])
                    assert pd.isna(row["threshold"])
                    continue
                f = t["feature"][node]
                assert (row["left_child"], row["right_child"]) == (name[left[node]],
                                                                   name[right[node]])
                assert row["split_feature"] == ["x0", "x1", "tree"][f]
                assert row["split_gain"] == t["gain"][node]
                bins = t["cat_left_bins"][node]
                if t["is_categorical"][node]:
                    labels = [cats[f][int(edges[f][b])] for b in bins if b < 255]
                    assert row["decision_type"] == "=="
                    assert row["threshold"] == "||".join(labels)
                    missing_left = 255 in bins
                else:
                    assert row["decision_type"] == "<="
                    assert row["threshold"] == t["threshold"][node]
                    missing_left = t["missing_left"][node] == 1
                assert row["missing_direction"] == ("left" if missing_left else "right")
    assert next(rows, None) is None  # one row per node of the file, no more


def test_trees_to_dataframe_single_leaf_trees():
    # a constant target: every tree is one leaf, named "<tree>-L0" as LightGBM names it
    X = np.arange(40, dtype=float).reshape(-1, 1)
    est = TreeBoostRegressor(n_estimators=3, n_jobs=1).fit(X, np.ones(40))
    df = est.booster_.trees_to_dataframe()
    assert df["node_index"].tolist() == ["0-L0", "1-L0", "2-L0"]
    assert df["split_feature"].isna().all()
    assert (df["count"] == 40).all()


def test_empty_model_gives_an_empty_table():
    booster = train({"n_estimators": 2, "n_jobs": 1},
                    Dataset(np.arange(20.0).reshape(-1, 1), np.arange(20.0)))
    booster.truncate(0)  # F0 alone
    assert booster.dump_model()["trees"] == []
    df = booster.trees_to_dataframe()
    assert df.empty
    assert list(df.columns) == list(DATAFRAME_COLUMNS)


def test_same_trees_as_lightgbm_on_the_same_bins():
    # Integer features of 16 values: both libraries give every value its own bin
    # (LightGBM with min_data_in_bin=1), so with the same parameters (the mapping of
    # tests/test_compare_peers.py) they grow the same trees, and both tables must show it
    lgb = pytest.importorskip("lightgbm")
    rng = np.random.RandomState(0)
    X = rng.randint(0, 16, size=(3000, 4)).astype(float)
    y = 0.5 * X[:, 0] + np.sin(X[:, 1]) + (X[:, 2] > 7) + 0.3 * rng.normal(size=3000)
    common = dict(n_estimators=5, learning_rate=0.1, n_jobs=1, random_state=0)
    ours = TreeBoostRegressor(**common, max_leaf_nodes=31, min_samples_leaf=20,
                              min_child_weight=1e-3, reg_lambda=0.0, max_bins=255).fit(X, y)
    theirs = lgb.LGBMRegressor(**common, num_leaves=31, min_child_samples=20,
                               min_child_weight=1e-3, reg_lambda=0.0, max_bin=255,
                               min_data_in_bin=1, subsample=1.0, subsample_freq=0,
                               colsample_bytree=1.0, verbose=-1).fit(X, y)
    a, b = ours.booster_.trees_to_dataframe(), theirs.booster_.trees_to_dataframe()
    assert list(a.columns) == list(b.columns)
    # LightGBM types "weight" int64 when its hessian sums are whole numbers (here: all 1)
    assert a.dtypes.drop("weight").equals(b.dtypes.drop("weight"))
    # the same nodes in the same order: depth-first, left before right. node_index is
    # not compared: LightGBM numbers splits and leaves in the order it grew them,
    # treeboost in node order, which the model does not record otherwise
    # missing_direction is not compared either: without missing values in training
    # neither side was learnt (LightGBM says "left" with missing_type "None", NaN read
    # as 0; treeboost sends NaN right)
    for col in ("tree_index", "node_depth", "split_feature", "decision_type", "count"):
        assert a[col].tolist() == b[col].tolist(), col
    np.testing.assert_array_equal(a["weight"], b["weight"])  # squared error: h = 1 a row
    # gains: LightGBM keeps them as float32, 6e-8 relative; 1e-5 leaves room for the
    # float32 gradients summed in another order
    split = a["left_child"].notna()
    np.testing.assert_allclose(a.loc[split, "split_gain"], b.loc[split, "split_gain"],
                               rtol=1e-5)
    # leaf values: LightGBM folds F0 into its first tree's leaves. Tolerance: both
    # sum float32 gradients in float64, in different orders, and later trees see scores
    # that already differ by those roundings (measured: 1e-8 absolute at most)
    leaf = ~split
    ours_leaf = a.loc[leaf, "value"] + np.where(a.loc[leaf, "tree_index"] == 0,
                                                ours.booster_.init_score[0], 0.0)
    np.testing.assert_allclose(ours_leaf, b.loc[leaf, "value"], rtol=1e-6, atol=1e-7)
    # thresholds differ in representation only: treeboost's are the midpoints of
    # neighbouring values (6.5), LightGBM's the next float up (6.500000000000001),
    # except that LightGBM ends the bin of 0 at its kZeroThreshold (1e-35) where
    # treeboost has 0.5. What matters: every training row goes the same way everywhere
    ta, tb = a.loc[split, "threshold"].to_numpy(float), b.loc[split, "threshold"].to_numpy(float)
    zero_bin = np.abs(tb) < 1e-30
    np.testing.assert_allclose(ta[~zero_bin], tb[~zero_bin], rtol=1e-12)
    assert np.all(ta[zero_bin] == 0.5)
    for name, t_ours, t_lgb in zip(a.loc[split, "split_feature"], ta, tb, strict=True):
        x = X[:, int(name.removeprefix("Column_"))]
        assert np.array_equal(x <= t_ours, x <= t_lgb)
    np.testing.assert_allclose(ours.predict(X), theirs.predict(X), rtol=1e-6, atol=1e-7)


# ---- save_model / load_model ----------------------------------------------------------------
def test_booster_save_load_round_trip(tmp_path):
    x0, x1, cat, _, signal = _data(N_TRAIN, 0, range(N_CODES))
    X = np.column_stack([x0, x1, cat])
    booster = train(SMALL, Dataset(X, signal, categorical_features=[2]))
    path = tmp_path / "booster.json"
    booster.save_model(path)
    # a thin wrapper: the very file of serialization.save_booster
    save_booster(booster, tmp_path / "reference.json")
    assert path.read_bytes() == (tmp_path / "reference.json").read_bytes()
    # the view's parameters are the file's, name for name
    assert booster.dump_model()["params"] == json.loads(path.read_text())["params"]
    loaded = Booster.load_model(path)
    assert isinstance(loaded, Booster)
    np.testing.assert_array_equal(loaded.predict_raw(X), booster.predict_raw(X))
    assert loaded.dump_model() == booster.dump_model()
    assert loaded.best_iteration is None  # a Booster's file has no early-stopping history


def test_an_estimator_file_loads_as_a_booster(tmp_path):
    est, X, X_test = _fit("binary", "frame", n_iter_no_change=2, validation_fraction=0.2,
                          n_estimators=100)
    path = tmp_path / "classifier.json"
    assert est.best_iteration_ is not None  # early stopping happened
    est.save_model(path)
    booster = Booster.load_model(path)
    np.testing.assert_array_equal(booster.predict_raw(X_test), est.booster_.predict_raw(X_test))
    assert booster.best_iteration == est.best_iteration_
    assert booster.evals_result == est.evals_result_
    view = booster.dump_model()
    assert view["feature_names"] == ["x0", "x1", "tree"]
    assert view["n_classes"] == 2


def test_load_model_names_a_bad_file(tmp_path):
    path = tmp_path / "broken.json"
    path.write_text('{"format": "treeboost-model"')
    with pytest.raises(ModelFormatError, match="broken.json"):
        Booster.load_model(path)


# ---- treeboost dump -------------------------------------------------------------------------
@pytest.fixture(scope="module")
def saved_model(tmp_path_factory):
    est, _, _ = _fit("multiclass", "frame")
    path = tmp_path_factory.mktemp("dump") / "model.json"
    est.save_model(path)
    return path, est.booster_


def test_cli_dump_json_is_dump_model(saved_model, capsys):
    path, booster = saved_model
    assert main(["dump", str(path)]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert printed == Booster.load_model(path).dump_model()
    assert printed["trees"] == booster.dump_model()["trees"]


def test_cli_dump_csv_is_trees_to_dataframe(saved_model, tmp_path, capsys):
    path, booster = saved_model
    out = tmp_path / "trees.csv"
    assert main(["dump", str(path), "--format", "csv", "--out", str(out)]) == 0
    assert str(out) in capsys.readouterr().err
    expected = booster.trees_to_dataframe()
    # "NaN" is a missing_type value, not a missing cell: only empty cells are missing
    read = pd.read_csv(out, keep_default_na=False, na_values=[""],
                       float_precision="round_trip")
    assert list(read.columns) == list(expected.columns)
    assert len(read) == len(expected)
    for col in expected.columns:
        if pd.api.types.is_numeric_dtype(expected[col]):
            # written with 17 significant digits: the same float64 back
            np.testing.assert_array_equal(read[col].to_numpy(float),
                                          expected[col].to_numpy(float), err_msg=col)
        else:
            def text(v):
                return "" if pd.isna(v) else str(v)

            assert read[col].map(text).tolist() == expected[col].map(text).tolist(), col
    # an existing file is kept unless --force
    assert main(["dump", str(path), "--format", "csv", "--out", str(out)]) == 1
    assert "--force" in capsys.readouterr().err
    assert main(["dump", str(path), "--out", str(out), "--force"]) == 0
    assert json.loads(out.read_text())["format"] == "treeboost-model-view"


@pytest.mark.parametrize(("content", "message"), [
    (None, "no such model file"),
    ("not json at all", "not valid JSON"),
    ('{"format": "something else"}', "not a treeboost model file"),
])
def test_cli_dump_bad_model_is_one_line(tmp_path, capsys, content, message):
    path = tmp_path / "model.json"
    if content is not None:
        path.write_text(content)
    assert main(["dump", str(path)]) == 1  # an input error, as `treeboost predict`
    captured = capsys.readouterr()
    assert captured.out == ""
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1
    assert str(path) in lines[0]
    assert message in lines[0]
    assert lines[0].startswith("treeboost dump: error:")
