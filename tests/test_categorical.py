"""Native categorical features, pandas input and class weights (issue 3)."""

import numpy as np
import pandas as pd
import pytest

from treeboost import TreeBoostClassifier, TreeBoostRegressor, load_model


def left_categories(tree, node=0):
    bits = np.unpackbits(tree.cat_bitset[node].view(np.uint8), bitorder="little")
    return set(np.flatnonzero(bits).tolist())


@pytest.fixture(scope="module")
def set_signal():
    # the target is "the category is in GOOD": one categorical split can
    # recover it, while thresholds on the codes need many splits
    rng = np.random.default_rng(0)
    cat = rng.integers(0, 30, 4000)
    good = [1, 5, 7, 11, 13, 20, 29]
    y = np.isin(cat, good).astype(int)
    X = np.column_stack([cat, rng.normal(size=cat.size)]).astype(float)
    return X, y, good


def test_one_split_recovers_a_set_of_categories(set_signal):
    X, y, good = set_signal
    model = TreeBoostClassifier(n_estimators=1, learning_rate=1.0, max_leaf_nodes=2,
                                categorical_features=[0]).fit(X, y)
    tree = model.booster_.trees[0][0]
    assert tree.is_categorical[0] == 1
    assert tree.feature[0] == 0
    # bins are the categories' positions in the sorted table, here the values
    found = left_categories(tree)
    assert found == set(good) or found == set(range(30)) - set(good)
    assert model.score(X, y) == 1.0


def test_numeric_codes_need_more_splits(set_signal):
    X, y, _ = set_signal
    native = TreeBoostClassifier(n_estimators=1, learning_rate=1.0, max_leaf_nodes=2,
                                 categorical_features=[0]).fit(X, y)
    codes = TreeBoostClassifier(n_estimators=1, learning_rate=1.0, max_leaf_nodes=2,
                                categorical_features=None).fit(X, y)
    assert native.score(X, y) > codes.score(X, y)


def test_few_categories_split_one_against_the_rest():
    rng = np.random.default_rng(1)
    cat = rng.integers(0, 4, 2000).astype(float)  # 4 <= max_cat_to_onehot
    y = (cat == 2) * 3.0 + rng.normal(scale=0.1, size=cat.size)
    model = TreeBoostRegressor(n_estimators=1, max_leaf_nodes=2,
                               categorical_features=[0]).fit(cat[:, None], y)
    assert len(left_categories(model.booster_.trees[0][0])) == 1


def test_rare_categories_stay_right_past_max_cat_ordered():
    """In the sorted scan of a feature of more than ``max_cat_ordered`` categories, a
    category of fewer than ``cat_smooth`` rows never goes left (LightGBM's rule): here
    the rare one shares the good categories' class, so the best split puts the others
    left to keep it with them; with the bound above the feature's categories, or no
    smoothing, it joins the good ones on the left as their gradients order it (no
    ``cat_l2``, so that a perfect sorted split outscores the imperfect ordered one)."""
    rng = np.random.default_rng(5)
    rare, good = 39, list(range(10))
    cat = np.concatenate([rng.integers(0, 39, 3000), np.full(5, rare)])
    y = np.isin(cat, good + [rare]).astype(int)
    X = np.column_stack([cat, rng.normal(size=cat.size)]).astype(float)

    def root_left(**kw):
        model = TreeBoostClassifier(n_estimators=1, learning_rate=1.0, max_leaf_nodes=2,
                                    min_samples_leaf=1, categorical_features=[0],
                                    cat_l2=0.0, **kw).fit(X, y)
        tree = model.booster_.trees[0][0]
        assert tree.is_categorical[0] == 1
        assert model.score(X, y) == 1.0
        return left_categories(tree)

    assert root_left() == set(range(10, 39))  # 40 categories > max_cat_ordered=32
    assert root_left(max_cat_ordered=40) == set(good) | {rare}
    assert root_left(cat_smooth=0.0) == set(good) | {rare}


@pytest.fixture(scope="module")
def ordinal_frame():
    # an ordinal column (declared levels) whose effect is a step between levels 2 and 3
    rng = np.random.default_rng(3)
    levels = ["none", "low", "mid", "high", "top", "max"]
    code = rng.integers(0, 6, 3000)
    X = pd.DataFrame({"level": pd.Categorical.from_codes(code, levels),
                      "noise": rng.normal(size=code.size)})
    return X, (code >= 3).astype(int)


def test_ordered_splits_take_a_prefix_of_the_declared_order(ordinal_frame):
    """One stump: the code-order prefix {none, low, mid} separates the classes, which no
    single level against the rest (6 <= max_cat_to_onehot, set so here) can."""
    X, y = ordinal_frame
    kw = dict(n_estimators=1, learning_rate=1.0, max_leaf_nodes=2, max_cat_to_onehot=16)
    ordered = TreeBoostClassifier(**kw).fit(X, y)
    tree = ordered.booster_.trees[0][0]
    assert tree.feature[0] == 0
    assert tree.is_categorical[0] == 1
    assert left_categories(tree) == {0, 1, 2}
    assert ordered.score(X, y) == 1.0
    plain = TreeBoostClassifier(max_cat_ordered=0, **kw).fit(X, y)
    assert len(left_categories(plain.booster_.trees[0][0])) == 1
    assert plain.score(X, y) < 0.85


def test_ordered_splits_follow_the_category_order_not_the_labels(ordinal_frame):
    """Reordering the categories (the same labels) moves the prefixes with them: the
    reversed order splits at the same place, the shuffled one cannot in one step (with
    one level against the rest, not the sorted scan, beside the ordered splits)."""
    X, y = ordinal_frame
    kw = dict(n_estimators=1, learning_rate=1.0, max_leaf_nodes=2, max_cat_to_onehot=16)
    levels = list(X["level"].cat.categories)
    reversed_ = X.assign(level=X["level"].cat.reorder_categories(levels[::-1]))
    assert TreeBoostClassifier(**kw).fit(reversed_, y).score(reversed_, y) == 1.0
    shuffled = X.assign(level=X["level"].cat.reorder_categories(
        ["none", "high", "low", "top", "mid", "max"]))
    assert TreeBoostClassifier(**kw).fit(shuffled, y).score(shuffled, y) < 0.85


def test_no_ordered_splits_on_an_identifier():
    """An identifier whose sorted names line up with the class in training: unbounded
    ordered splits take it, and every test row (an unseen name, the missing side) lands
    on one side; at the default bound (fewer categories than the identifier's) the
    model is the one without ordered splits."""
    rng = np.random.default_rng(4)
    n = 400
    y = np.repeat([0, 1], n // 2)
    names = [f"{'a' if c == 0 else 'b'}{i:04d}" for i, c in enumerate(y)]
    signal = y + rng.normal(scale=0.5, size=n)
    X = pd.DataFrame({"name": pd.Categorical(names), "signal": signal})
    train = rng.permutation(n)[:300]
    test = np.setdiff1d(np.arange(n), train)
    X_tr, X_te = X.iloc[train].reset_index(drop=True), X.iloc[test].reset_index(drop=True)
    X_tr["name"] = X_tr["name"].cat.remove_unused_categories()
    X_te["name"] = pd.Categorical(X_te["name"].astype(str))
    kw = dict(n_estimators=20, min_samples_leaf=5, random_state=0)

    def fit(**extra):
        return TreeBoostClassifier(**kw, **extra).fit(X_tr, y[train])

    # the test frame's names are all unseen: refitted categories, so predict on codes
    # the model maps to missing
    default, none, unbounded = fit(), fit(max_cat_ordered=0), fit(max_cat_ordered=255)
    assert_equal = np.testing.assert_array_equal
    assert_equal(default.predict_proba(X_te), none.predict_proba(X_te))
    assert np.ptp(unbounded.predict(X_te)) == 0  # one class for every test row


def test_max_cat_ordered_is_checked(ordinal_frame):
    X, y = ordinal_frame
    with pytest.raises(ValueError, match="max_cat_ordered"):
        TreeBoostClassifier(max_cat_ordered=-1).fit(X, y)


@pytest.mark.parametrize("spec", [[0], ["c"], [True, False], "from_dtype"])
def test_categorical_feature_specifications(spec):
    rng = np.random.default_rng(2)
    frame = pd.DataFrame({"c": pd.Categorical(rng.choice(list("abcdef"), 600)),
                          "x": rng.normal(size=600)})
    y = frame.c.isin(["b", "e"]).to_numpy().astype(int)
    model = TreeBoostClassifier(n_estimators=5, categorical_features=spec).fit(frame, y)
    assert model.is_categorical_.tolist() == [True, False]
    assert model.score(frame, y) == 1.0


def test_bad_categorical_specifications():
    X = np.random.default_rng(3).normal(size=(50, 2))
    y = np.arange(50) % 2
    with pytest.raises(ValueError, match="out of range"):
        TreeBoostClassifier(categorical_features=[5]).fit(X, y)
    with pytest.raises(ValueError, match="not a column"):
        TreeBoostClassifier(categorical_features=["nope"]).fit(X, y)
    with pytest.raises(ValueError, match="3 booleans"):
        TreeBoostClassifier(categorical_features=[True, False, True]).fit(X, y)
    with pytest.raises(ValueError, match="categorical_features="):
        TreeBoostClassifier(categorical_features="all").fit(X, y)


@pytest.fixture(scope="module")
def frame_model(tmp_path_factory):
    rng = np.random.default_rng(4)
    n = 1500
    frame = pd.DataFrame({
        "color": pd.Categorical(rng.choice(["red", "green", "blue", "black", "white",
                                            "grey"], n)),
        "size": rng.normal(size=n),
        "flag": rng.random(n) < 0.5,
        "count": pd.array(rng.integers(0, 5, n), dtype="Int64"),
    })
    frame.loc[rng.random(n) < 0.1, "color"] = None
    frame.loc[rng.random(n) < 0.1, "count"] = pd.NA
    y = (frame.color.isin(["red", "blue", "white"]).to_numpy() ^ (frame["size"] > 1)).astype(int)
    model = TreeBoostClassifier(n_estimators=30, random_state=0).fit(frame, y)
    path = tmp_path_factory.mktemp("m") / "model.json"
    model.save_model(path)
    return frame, y, model, load_model(path)


def test_frame_round_trip_is_bit_identical(frame_model):
    frame, y, model, loaded = frame_model
    assert model.score(frame, y) > 0.95
    np.testing.assert_array_equal(model.predict_proba(frame), loaded.predict_proba(frame))
    assert loaded.pandas_categories_ == model.pandas_categories_
    assert list(loaded.feature_names_in_) == ["color", "size", "flag", "count"]


def test_frame_columns_are_checked(frame_model):
    frame, _, model, loaded = frame_model
    for bad in (frame[["size", "color", "flag", "count"]],
                frame.rename(columns={"size": "length"}),
                frame.drop(columns="flag")):
        for m in (model, loaded):
            with pytest.raises(ValueError, match="feature names"):
                m.predict(bad)


def test_unseen_categories_go_with_missing_values(frame_model):
    frame, _, model, _ = frame_model
    unseen = frame.head(20).copy()
    unseen["color"] = pd.Categorical(["purple"] * 20)
    missing = frame.head(20).copy()
    missing["color"] = pd.Categorical([None] * 20, categories=["red"])
    np.testing.assert_array_equal(model.predict_proba(unseen), model.predict_proba(missing))
    # category codes follow the training table, not the frame's own order
    shuffled = frame.copy()
    shuffled["color"] = shuffled.color.cat.reorder_categories(
        shuffled.color.cat.categories[::-1])
    np.testing.assert_array_equal(model.predict_proba(frame), model.predict_proba(shuffled))


def test_object_columns_are_refused():
    frame = pd.DataFrame({"s": ["a", "b"] * 20, "x": np.arange(40.0)})
    with pytest.raises(TypeError, match="'s' has dtype"):
        TreeBoostClassifier().fit(frame, np.arange(40) % 2)


def test_class_weight_balanced_equals_sample_weight():
    rng = np.random.default_rng(5)
    X = rng.normal(size=(600, 3))
    y = (X[:, 0] > 1).astype(int)  # about 16 % positives
    counts = np.bincount(y)
    w = (y.size / (2 * counts))[y]
    a = TreeBoostClassifier(n_estimators=10, class_weight="balanced").fit(X, y)
    b = TreeBoostClassifier(n_estimators=10).fit(X, y, sample_weight=w)
    np.testing.assert_array_equal(a.predict_proba(X), b.predict_proba(X))
    c = TreeBoostClassifier(n_estimators=10, class_weight={0: 1.0, 1: 5.0}).fit(X, y)
    d = TreeBoostClassifier(n_estimators=10).fit(X, y, sample_weight=np.where(y, 5.0, 1.0))
    np.testing.assert_array_equal(c.predict_proba(X), d.predict_proba(X))


def test_very_rare_class_does_not_blow_up():
    # two rows of class 2 in 2,000: with F0 = log priors its hessians are
    # ~1e-3 and an uncapped Newton leaf step is in the hundreds, which
    # oscillates; max_delta_step bounds each leaf (before shrinkage)
    rng = np.random.default_rng(6)
    X = rng.normal(size=(2000, 4))
    y = (X[:, 0] > 0).astype(int)
    y[:2] = 2
    X[:2, 1] = 5.0
    model = TreeBoostClassifier(min_samples_leaf=2, random_state=0).fit(X, y)
    leaves = [t.value[t.left < 0] for stage in model.booster_.trees for t in stage]
    assert max(np.abs(v).max() for v in leaves) <= 10.0 * 0.1 + 1e-12
    assert model.score(X, y) > 0.95
