"""The plots of ``treeboost.plotting`` (issue 34), checked on what they draw, not by eye.

Bars, lines and boxes are read back from the matplotlib Axes and compared with the
model's own numbers (``feature_importances``, ``evals_result_``, ``dump_model``).
"""

import ast
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

matplotlib = pytest.importorskip("matplotlib")
matplotlib.use("Agg")  # no display: draw to memory and files only
import matplotlib.pyplot as plt  # noqa: E402
from sklearn.exceptions import NotFittedError  # noqa: E402

from treeboost import Dataset, TreeBoostClassifier, TreeBoostRegressor, train  # noqa: E402
from treeboost.plotting import (  # noqa: E402
    plot_importance,
    plot_metric,
    plot_split_value_histogram,
    plot_tree,
)

NAMES = ["a", "b", "noise", "constant", "colour"]


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


@pytest.fixture(scope="module")
def regressor():
    """A tiny model on a frame: two useful columns, noise, a constant, a category."""
    rng = np.random.default_rng(0)
    n = 200
    colour = np.array(["red", "green", "blue"])[np.arange(n) % 3]
    X = pd.DataFrame({"a": rng.normal(size=n), "b": rng.normal(size=n),
                      "noise": rng.normal(size=n), "constant": np.ones(n),
                      "colour": pd.Categorical(colour)})
    y = 3 * X["a"] + 2 * X["b"] + 5.0 * (colour == "red")
    return TreeBoostRegressor(n_estimators=6, max_leaf_nodes=5, random_state=0).fit(
        X, y, eval_set=[(X, y), (X[:60], y[:60])])


@pytest.fixture(scope="module")
def multiclass():
    rng = np.random.default_rng(1)
    X = rng.normal(size=(90, 3))
    return TreeBoostClassifier(n_estimators=2, max_leaf_nodes=3).fit(X, np.arange(90) % 3)


def _saves(ax, tmp_path):
    path = tmp_path / "plot.png"
    ax.figure.savefig(path)
    assert path.stat().st_size > 0


# ---- plot_importance ----------------------------------------------------------------------
@pytest.mark.parametrize("importance_type", ["split", "gain", "total_cover"])
def test_importance_bars_are_the_importances(regressor, importance_type, tmp_path):
    imp = regressor.booster_.feature_importances(importance_type)
    ax = plot_importance(regressor, importance_type=importance_type)
    bars = ax.patches
    nonzero = np.flatnonzero(imp)
    assert len(bars) == nonzero.size
    assert imp[NAMES.index("constant")] == 0  # a constant column is never split on
    labels = [t.get_text() for t in ax.get_yticklabels()]
    assert sorted(labels) == sorted(NAMES[i] for i in nonzero)
    widths = [bar.get_width() for bar in bars]
    # bar i is the feature of tick label i, bottom to top in increasing importance
    np.testing.assert_array_equal(widths, [imp[NAMES.index(lab)] for lab in labels])
    assert widths == sorted(widths)
    assert importance_type in ax.get_xlabel()
    _saves(ax, tmp_path)


def test_importance_max_num_features_and_ignore_zero(regressor):
    imp = regressor.booster_.feature_importances("split")
    ax = plot_importance(regressor.booster_, max_num_features=2)
    assert [bar.get_width() for bar in ax.patches] == sorted(imp)[-2:]
    ax = plot_importance(regressor, ignore_zero=False)
    assert len(ax.patches) == len(NAMES)


def test_importance_default_names_and_given_ax(multiclass):
    _, ax = plt.subplots()
    assert plot_importance(multiclass, ax=ax, title=None) is ax
    labels = {t.get_text() for t in ax.get_yticklabels()}
    assert labels <= {"Column_0", "Column_1", "Column_2"}
    assert ax.get_title() == ""


@pytest.mark.parametrize(("kwargs", "error", "match"), [
    ({"importance_type": "weight"}, ValueError, "importance_type"),
    ({"max_num_features": 0}, ValueError, "max_num_features=0"),
    ({"precision": -1}, ValueError, "precision=-1"),
    ({"xlim": (0, 1, 2)}, TypeError, "xlim"),
    ({"figsize": "big"}, TypeError, "figsize"),
])
def test_importance_bad_arguments(regressor, kwargs, error, match):
    with pytest.raises(error, match=match):
        plot_importance(regressor, **kwargs)


def test_models_refused():
    with pytest.raises(TypeError, match="model must be a treeboost Booster"):
        plot_importance(object())
    with pytest.raises(NotFittedError):
        plot_importance(TreeBoostRegressor())
    with pytest.raises(NotFittedError):
        plot_metric(TreeBoostRegressor())


# ---- plot_metric --------------------------------------------------------------------------
def test_metric_one_line_per_data_set(regressor, tmp_path):
    evals = regressor.evals_result_
    ax = plot_metric(regressor)
    assert [line.get_label() for line in ax.lines] == list(evals)
    for line, name in zip(ax.lines, evals, strict=True):
        values = evals[name]["squared_error"]
        np.testing.assert_array_equal(line.get_ydata(), values)
        np.testing.assert_array_equal(line.get_xdata(), np.arange(len(values)))
    assert ax.get_ylabel() == "squared_error"
    _saves(ax, tmp_path)


def test_metric_from_a_dict_picks_sets_and_metrics():
    evals = {"train": {"l2": [3.0, 2.0, 1.0], "l1": [1.5, 1.2, 1.0]},
             "valid": {"l2": [3.5, 2.5, 2.0], "l1": [1.7, 1.5, 1.4]}}
    ax = plot_metric(evals)  # None: the first metric of the first set
    assert ax.get_ylabel() == "l2"
    np.testing.assert_array_equal(ax.lines[1].get_ydata(), evals["valid"]["l2"])
    _, given = plt.subplots()
    ax = plot_metric(evals, metric="l1", dataset_names=["valid"], ax=given)
    assert ax is given
    assert len(ax.lines) == 1
    np.testing.assert_array_equal(ax.lines[0].get_ydata(), evals["valid"]["l1"])


def test_metric_from_a_trained_booster():
    rng = np.random.default_rng(2)
    X = rng.normal(size=(60, 2))
    valid = Dataset(X[:20], X[:20, 0])
    booster = train({"n_estimators": 3, "max_leaf_nodes": 3}, Dataset(X, X[:, 0]),
                    valid_sets=[(valid, "val")])
    ax = plot_metric(booster)
    np.testing.assert_array_equal(ax.lines[0].get_ydata(),
                                  booster.evals_result["val"]["squared_error"])


@pytest.mark.parametrize(("kwargs", "error", "match"), [
    ({"metric": "auc"}, ValueError, "metric='auc'"),
    ({"dataset_names": ["test"]}, ValueError, "'test' is not in the evaluation log"),
    ({"dataset_names": "train"}, ValueError, "dataset_names='train'"),
    ({"dataset_names": []}, ValueError, "dataset_names"),
])
def test_metric_bad_arguments(kwargs, error, match):
    with pytest.raises(error, match=match):
        plot_metric({"train": {"l2": [1.0, 0.5]}}, **kwargs)


def test_metric_without_a_log(multiclass):
    with pytest.raises(ValueError, match="evaluation log is empty"):
        plot_metric(multiclass)  # fitted without eval_set
    with pytest.raises(TypeError, match="model_or_evals_result"):
        plot_metric([1.0, 2.0])


# ---- plot_tree ----------------------------------------------------------------------------
def _boxes(ax):
    return [t for t in ax.texts if t.get_bbox_patch() is not None]


@pytest.mark.parametrize("orientation", ["horizontal", "vertical"])
def test_tree_one_box_per_node(regressor, orientation, tmp_path):
    tree = regressor.booster_.dump_model()["trees"][1][0]
    ax = plot_tree(regressor, tree_index=1, orientation=orientation,
                   show_info=["gain", "count", "cover", "value", "data_percentage"])
    boxes = _boxes(ax)
    assert len(boxes) == len(tree["nodes"])
    for box, node in zip(boxes, tree["nodes"], strict=True):
        text = box.get_text()
        if node["is_leaf"]:
            assert f"{node['value']:.3f}" in text  # precision=3 decimals
            assert "gain" not in text
        else:
            assert node["feature_name"] in text
            assert f"gain: {node['gain']:.3f}" in text
        assert f"count: {node['count']}" in text
    # one edge label per child: every node but the root
    assert len(ax.texts) - len(boxes) == len(tree["nodes"]) - 1
    _saves(ax, tmp_path)


def test_tree_split_texts(regressor):
    nodes = regressor.booster_.dump_model()["trees"][0][0]["nodes"]
    texts = [box.get_text() for box in _boxes(plot_tree(regressor, precision=2))]
    for node, text in zip(nodes, texts, strict=True):
        if node["is_leaf"]:
            assert text == f"leaf {node['node']}: {node['value']:.2f}"
        elif node["split_type"] == "numerical":
            assert text == f"{node['feature_name']} <= {node['threshold']:.2f}"
        else:
            assert text == f"{node['feature_name']} in {{{', '.join(node['categories_left'])}}}"
    # the colour column (+5 for red) is split on in the first tree
    assert any(n["split_type"] == "categorical" for n in nodes)


def test_tree_index_is_stage_times_outputs_plus_output(multiclass):
    tree = multiclass.booster_.dump_model()["trees"][1][2]
    _, given = plt.subplots()
    ax = plot_tree(multiclass.booster_, tree_index=1 * 3 + 2, ax=given)
    assert ax is given
    assert [b.get_text() for b in _boxes(ax) if b.get_text().startswith("leaf")] == [
        f"leaf {n['node']}: {n['value']:.3f}" for n in tree["nodes"] if n["is_leaf"]]
    assert "Column_" in _boxes(ax)[0].get_text()


@pytest.mark.parametrize(("kwargs", "error", "match"), [
    ({"tree_index": 6}, ValueError, r"tree_index=6 must be in \[0, 6\)"),
    ({"tree_index": -1}, ValueError, "tree_index=-1"),
    ({"tree_index": 1.0}, TypeError, "tree_index=1.0"),
    ({"show_info": ["weight"]}, ValueError, "unknown"),
    ({"orientation": "diagonal"}, ValueError, "orientation='diagonal'"),
    ({"max_category_values": 0}, ValueError, "max_category_values=0"),
])
def test_tree_bad_arguments(regressor, kwargs, error, match):
    with pytest.raises(error, match=match):
        plot_tree(regressor, **kwargs)


# ---- plot_split_value_histogram -----------------------------------------------------------
@pytest.mark.parametrize("feature", [0, "a", "b"])
def test_histogram_counts_the_splits(regressor, feature, tmp_path):
    f = feature if isinstance(feature, int) else NAMES.index(feature)
    n_splits = regressor.booster_.feature_importances("split")[f]
    assert n_splits > 0
    ax = plot_split_value_histogram(regressor, feature)
    assert sum(bar.get_height() for bar in ax.patches) == n_splits
    kind = "name" if isinstance(feature, str) else "index"
    assert ax.get_title() == f"Split value histogram for feature with {kind} {feature}"
    _saves(ax, tmp_path)


def test_histogram_bins_and_ax(regressor):
    thresholds = [n["threshold"] for stage in regressor.booster_.dump_model()["trees"]
                  for tree in stage for n in tree["nodes"] if n["feature"] == 0]
    _, given = plt.subplots()
    ax = plot_split_value_histogram(regressor.booster_, 0, bins=2, ax=given)
    assert ax is given
    assert len(ax.patches) == 2
    counts, _ = np.histogram(thresholds, bins=2)
    assert [bar.get_height() for bar in ax.patches] == list(counts)


@pytest.mark.parametrize(("feature", "error", "match"), [
    ("colour", ValueError, "categorical"),
    ("constant", ValueError, "not split on by any tree"),
    ("nope", ValueError, "feature='nope' is not a feature name"),
    (5, ValueError, r"feature=5 must be in \[0, 5\)"),
    (1.5, TypeError, "feature=1.5"),
])
def test_histogram_bad_features(regressor, feature, error, match):
    with pytest.raises(error, match=match):
        plot_split_value_histogram(regressor, feature)


# ---- matplotlib is optional ---------------------------------------------------------------
def test_no_matplotlib_import_at_module_level():
    source = Path(plot_tree.__code__.co_filename).read_text(encoding="utf-8")
    top = [node for node in ast.parse(source).body
           if isinstance(node, (ast.Import, ast.ImportFrom))]
    names = [a.name for n in top for a in n.names] + [
        n.module for n in top if isinstance(n, ast.ImportFrom) and n.module]
    assert not [n for n in names if "matplotlib" in n]


def test_missing_matplotlib_says_how_to_install(regressor, monkeypatch):
    monkeypatch.setitem(sys.modules, "matplotlib.pyplot", None)  # import fails
    for plot, args in [(plot_importance, ()), (plot_metric, ()), (plot_tree, ()),
                       (plot_split_value_histogram, (0,))]:
        with pytest.raises(ImportError, match=r"pip install treeboost\[plot\]"):
            plot(regressor, *args)
