"""Plots of a fitted model with matplotlib, as LightGBM's ``lightgbm.plotting`` draws them.

The reader's end of the data flow, beside ``model_view``: every plot reads the
public views of a ``Booster`` (``feature_importances``, ``evals_result``,
``dump_model``) and never its arrays, so a plot shows what the model view
states. ``plot_importance`` draws the importances as horizontal bars,
``plot_metric`` the evaluation log stage by stage, ``plot_tree`` one tree as
boxes and edges laid out by depth (matplotlib alone: no graphviz), and
``plot_split_value_histogram`` the thresholds the trees split a numerical
feature on. Each returns the matplotlib ``Axes`` it drew on, the one passed as
``ax=`` when given.

matplotlib is optional (``pip install treeboost[plot]``): it is imported when a
plot is drawn, never when this module is imported, and its absence is an
``ImportError`` that says how to install it.
"""

from __future__ import annotations

import numbers
from typing import Any

import numpy as np

from .booster import Booster

__all__ = ["plot_importance", "plot_metric", "plot_split_value_histogram", "plot_tree"]

#: what ``plot_tree``'s ``show_info`` may ask for, beside the split rule and leaf value
TREE_INFO = ("gain", "value", "count", "cover", "data_percentage")


# ---- shared helpers -----------------------------------------------------------------------
def _pyplot():
    """``matplotlib.pyplot``, or an ImportError that says how to install it."""
    try:
        import matplotlib.pyplot as plt
    except ImportError as err:
        raise ImportError("treeboost's plots need matplotlib: pip install treeboost[plot] "
                          "(or pip install 'matplotlib>=3.7')") from err
    return plt


def _booster_of(model) -> Booster:
    """The Booster of ``model``: a Booster, or a fitted estimator's ``booster_``."""
    if isinstance(model, Booster):
        return model
    if hasattr(type(model), "booster_"):
        return model.booster_  # an unfitted estimator raises NotFittedError here
    raise TypeError(f"model must be a treeboost Booster or a fitted treeboost estimator, "
                    f"got {type(model).__name__}")


def _check_pair(value, name: str) -> None:
    """``xlim``, ``ylim`` and ``figsize`` are pairs of numbers (or None)."""
    if value is None:
        return
    if (not isinstance(value, (tuple, list)) or len(value) != 2
            or not all(isinstance(v, numbers.Real) and not isinstance(v, bool) for v in value)):
        raise TypeError(f"{name}={value!r} must be None or a tuple of 2 numbers")


def _check_precision(precision) -> None:
    if precision is not None and (not isinstance(precision, numbers.Integral)
                                  or isinstance(precision, bool) or precision < 0):
        raise ValueError(f"precision={precision!r} must be None or an int >= 0")


def _float_text(value: float, precision: int | None) -> str:
    """``value`` with ``precision`` decimals (LightGBM's ``_float2str``), all digits if None."""
    return str(value) if precision is None else f"{value:.{precision}f}"


def _new_axes(ax, figsize, dpi):
    """``ax`` itself, or the axes of a new figure of ``figsize`` and ``dpi``."""
    if ax is not None:
        return ax
    _check_pair(figsize, "figsize")
    _, ax = _pyplot().subplots(1, 1, figsize=figsize, dpi=dpi)
    return ax


def _label_axes(ax, *, xlim, ylim, title, xlabel, ylabel, grid) -> None:
    """Limits, title, axis labels and grid: None leaves a label out, as LightGBM."""
    _check_pair(xlim, "xlim")
    _check_pair(ylim, "ylim")
    ax.set_xlim(xlim)
    ax.set_ylim(ylim)
    if title is not None:
        ax.set_title(title)
    if xlabel is not None:
        ax.set_xlabel(xlabel)
    if ylabel is not None:
        ax.set_ylabel(ylabel)
    ax.grid(grid)


# ---- importance ---------------------------------------------------------------------------
def plot_importance(model, ax=None, height: float = 0.2, xlim=None, ylim=None,
                    title: str | None = "Feature importance",
                    xlabel: str | None = "Feature importance (@importance_type@)",
                    ylabel: str | None = "Features", importance_type: str = "split",
                    max_num_features: int | None = None, ignore_zero: bool = True,
                    figsize=None, dpi=None, grid: bool = True, precision: int | None = 3,
                    **kwargs: Any):
    """Plot the importance of the features as horizontal bars, the largest on top.

    .. versionadded:: 0.1.0

    Parameters
    ----------
    model : Booster or fitted estimator
        The model; an estimator's ``booster_`` is read.
    ax : matplotlib.axes.Axes, default=None
        Axes to draw on; None draws on a new figure.
    height : float, default=0.2
        Height of the bars.
    xlim, ylim : tuple of 2 floats, default=None
        Axis limits; None fits the bars (``(0, 1.1 * max)``, ``(-1, n_bars)``).
    title, xlabel, ylabel : str or None
        Axes title and labels; None leaves one out. ``@importance_type@`` in
        ``xlabel`` is replaced by ``importance_type``.
    importance_type : {"split", "gain", "total_gain", "cover", "total_cover"}, \
default="split"
        As ``Booster.feature_importances`` (not normalised: "split" counts splits).
    max_num_features : int, default=None
        Plot only the largest ones; None plots them all.
    ignore_zero : bool, default=True
        Leave out the features no tree splits on.
    figsize : tuple of 2 floats, default=None
        Size of the new figure (ignored when ``ax`` is given).
    dpi : int, default=None
        Resolution of the new figure.
    grid : bool, default=True
        Draw the grid.
    precision : int or None, default=3
        Decimals of the values written beside the bars (counts are written whole).
    **kwargs
        Passed to ``ax.barh``.

    Returns
    -------
    matplotlib.axes.Axes
        The axes drawn on.
    """
    _pyplot()  # a missing matplotlib fails first, before any other check
    booster = _booster_of(model)
    if max_num_features is not None and (not isinstance(max_num_features, numbers.Integral)
                                         or isinstance(max_num_features, bool)
                                         or max_num_features < 1):
        raise ValueError(f"max_num_features={max_num_features!r} must be None or an int >= 1")
    _check_precision(precision)
    importance = booster.feature_importances(importance_type)
    names = booster.feature_names or [f"Column_{i}" for i in range(booster.n_features)]
    # stable sort: equal importances keep the features' order
    order = np.argsort(importance, kind="stable")
    if ignore_zero:
        order = order[importance[order] > 0]
    if max_num_features is not None:
        order = order[-max_num_features:]
    if order.size == 0:
        raise ValueError("no feature has a nonzero importance (the model has no split); "
                         "pass ignore_zero=False to plot them all")
    values = importance[order]
    ax = _new_axes(ax, figsize, dpi)
    ylocs = np.arange(order.size)
    ax.barh(ylocs, values, align="center", height=height, **kwargs)
    for x, y in zip(values, ylocs, strict=True):
        text = str(int(x)) if importance_type == "split" else _float_text(x, precision)
        # just right of the bar: the offset in axes-independent points, not data units
        ax.annotate(text, (x, y), xytext=(3, 0), textcoords="offset points", va="center")
    ax.set_yticks(ylocs, [str(names[i]) for i in order])
    if xlabel is not None:
        xlabel = xlabel.replace("@importance_type@", importance_type)
    top = float(values.max())
    _label_axes(ax, xlim=xlim if xlim is not None else (0, top * 1.1 if top > 0 else 1.0),
                ylim=ylim if ylim is not None else (-1, order.size), title=title,
                xlabel=xlabel, ylabel=ylabel, grid=grid)
    return ax


# ---- evaluation log -----------------------------------------------------------------------
def _evals_of(model_or_evals_result) -> dict:
    """The ``{data set: {metric: [value per stage]}}`` log of a model or the log itself."""
    source = model_or_evals_result
    if isinstance(source, dict):
        evals = source
    elif isinstance(source, Booster):
        evals = getattr(source, "evals_result", None) or {}
    elif hasattr(type(source), "booster_"):
        _booster_of(source)  # an unfitted estimator raises NotFittedError here
        evals = source.evals_result_
    else:
        raise TypeError("model_or_evals_result must be a fitted estimator, a Booster or a "
                        "dict {data set: {metric: [values]}}, got "
                        f"{type(source).__name__}")
    if not evals:
        raise ValueError("the evaluation log is empty: fit with eval_set (train with "
                         "valid_sets) to record metrics")
    if not all(isinstance(log, dict) for log in evals.values()):
        raise TypeError("model_or_evals_result must map each data set to a dict "
                        "{metric: [values]}")
    return evals


def plot_metric(model_or_evals_result, metric: str | None = None, dataset_names=None,
                ax=None, xlim=None, ylim=None, title: str | None = "Metric during training",
                xlabel: str | None = "Iterations", ylabel: str | None = "@metric@",
                figsize=None, dpi=None, grid: bool = True):
    """Plot one metric stage by stage, one line per evaluated data set.

    .. versionadded:: 0.1.0

    Parameters
    ----------
    model_or_evals_result : estimator, Booster or dict
        A fitted estimator (its ``evals_result_``), a Booster from ``train``
        (its ``evals_result``) or such a log ``{data set: {metric: [values]}}``.
    metric : str, default=None
        The metric to plot (one: metrics have different scales); None takes the
        first metric of the first data set.
    dataset_names : list of str, default=None
        The data sets to plot; None plots them all.
    ax : matplotlib.axes.Axes, default=None
        Axes to draw on; None draws on a new figure.
    xlim, ylim : tuple of 2 floats, default=None
        Axis limits; None fits the lines (y with a 20% margin).
    title, xlabel, ylabel : str or None
        Axes title and labels; None leaves one out. ``@metric@`` in ``ylabel``
        is replaced by the metric's name.
    figsize : tuple of 2 floats, default=None
        Size of the new figure (ignored when ``ax`` is given).
    dpi : int, default=None
        Resolution of the new figure.
    grid : bool, default=True
        Draw the grid.

    Returns
    -------
    matplotlib.axes.Axes
        The axes drawn on; line i (``ax.lines[i]``) is data set i, labelled with its name.
    """
    _pyplot()
    evals = _evals_of(model_or_evals_result)
    if dataset_names is None:
        dataset_names = list(evals)
    elif isinstance(dataset_names, str) or not isinstance(dataset_names, (list, tuple)) \
            or not dataset_names:
        raise ValueError(f"dataset_names={dataset_names!r} must be None or a non-empty list "
                         "of data set names")
    for name in dataset_names:
        if name not in evals:
            raise ValueError(f"dataset_names: {name!r} is not in the evaluation log; it "
                             f"holds {sorted(evals)}")
    if metric is None:
        metric = next(iter(evals[dataset_names[0]]), None)
        if metric is None:
            raise ValueError(f"the evaluation log of {dataset_names[0]!r} has no metric")
    for name in dataset_names:
        if metric not in evals[name]:
            raise ValueError(f"metric={metric!r} is not in the evaluation log of {name!r}; "
                             f"it holds {sorted(evals[name])}")
    ax = _new_axes(ax, figsize, dpi)
    lows, highs, n_stages = [], [], 0
    for name in dataset_names:
        values = np.asarray(evals[name][metric], dtype=np.float64)
        ax.plot(np.arange(values.size), values, label=str(name))
        n_stages = max(n_stages, values.size)
        if values.size:
            lows.append(np.nanmin(values))
            highs.append(np.nanmax(values))
    ax.legend(loc="best")
    if ylim is None and lows:
        low, high = min(lows), max(highs)
        margin = (high - low) * 0.2 or abs(high) * 0.1 or 1.0  # a flat line still gets room
        ylim = (low - margin, high + margin)
    if xlim is None:
        xlim = (0, max(n_stages - 1, 1))
    if ylabel is not None:
        ylabel = ylabel.replace("@metric@", str(metric))
    _label_axes(ax, xlim=xlim, ylim=ylim, title=title, xlabel=xlabel, ylabel=ylabel,
                grid=grid)
    return ax


# ---- one tree -----------------------------------------------------------------------------
def _tree_of(booster: Booster, tree_index) -> dict:
    """``dump_model()``'s tree ``tree_index`` (= stage * n_outputs + output)."""
    if not isinstance(tree_index, numbers.Integral) or isinstance(tree_index, bool):
        raise TypeError(f"tree_index={tree_index!r} must be an int")
    n_trees = len(booster.trees) * booster.n_outputs
    if not 0 <= tree_index < n_trees:
        raise ValueError(f"tree_index={tree_index} must be in [0, {n_trees}) (stage x "
                         f"n_outputs + output; the model has {n_trees} trees)")
    stage, output = divmod(int(tree_index), booster.n_outputs)
    return booster.dump_model()["trees"][stage][output]


def _node_positions(nodes: list[dict]) -> dict[int, float]:
    """Position of each node across the depth axis: leaves side by side, left subtree first,
    a split midway between its children (so edges never cross)."""
    position: dict[int, float] = {}
    next_leaf = 0
    stack = [(0, False)]
    while stack:  # post-order without recursion: a deep tree does not hit the stack limit
        i, children_done = stack.pop()
        node = nodes[i]
        if node["is_leaf"]:
            position[i] = float(next_leaf)
            next_leaf += 1
        elif children_done:
            position[i] = (position[node["left"]] + position[node["right"]]) / 2
        else:
            stack += [(i, True), (node["right"], False), (node["left"], False)]
    return position


def _split_text(node: dict, precision, max_category_values: int) -> str:
    name = node["feature_name"] or f"Column_{node['feature']}"
    if node["split_type"] == "numerical":
        return f"{name} <= {_float_text(node['threshold'], precision)}"
    categories = [str(c) for c in node["categories_left"]]
    if len(categories) > max_category_values:
        categories = categories[:max_category_values] + ["..."]
    return f"{name} in {{{', '.join(categories)}}}"


def _node_text(node: dict, show_info, precision, max_category_values, root_count) -> str:
    """The lines of a node's box: the split rule or the leaf value, then the asked info."""
    if node["is_leaf"]:
        lines = [f"leaf {node['node']}: {_float_text(node['value'], precision)}"]
    else:
        lines = [_split_text(node, precision, max_category_values)]
    for info in show_info:
        if info == "gain" and not node["is_leaf"]:
            lines.append(f"gain: {_float_text(node['gain'], precision)}")
        elif info == "value" and not node["is_leaf"]:
            lines.append(f"value: {_float_text(node['value'], precision)}")
        elif info == "count":
            lines.append(f"count: {node['count']}")
        elif info == "cover":
            lines.append(f"cover: {_float_text(node['cover'], precision)}")
        elif info == "data_percentage":
            share = 100.0 * node["count"] / root_count if root_count else 0.0
            lines.append(f"{share:.2f}% of data")
    return "\n".join(lines)


def plot_tree(model, tree_index: int = 0, ax=None, figsize=None, dpi=None, show_info=(),
              precision: int | None = 3, orientation: str = "horizontal",
              max_category_values: int = 10, **kwargs: Any):
    """Plot one tree: a box per node, edges from each split to its children.

    Drawn with matplotlib alone, from ``Booster.dump_model()``. A split's box
    reads ``feature <= threshold`` (numerical) or ``feature in {categories}``
    (categorical: the categories that go left); a leaf's box reads
    ``leaf <node>: <value>`` (the shrunk value the tree adds). The edge to the
    left child is labelled "yes", the other "no"; "missing" marks the side NaN
    (and, at a categorical split, a category unseen in training) goes to.

    .. versionadded:: 0.1.0

    Parameters
    ----------
    model : Booster or fitted estimator
        The model; an estimator's ``booster_`` is read.
    tree_index : int, default=0
        ``stage * n_outputs + output`` (``dump_model()["trees"][stage][output]``).
    ax : matplotlib.axes.Axes, default=None
        Axes to draw on; None draws on a new figure sized to the tree.
    figsize : tuple of 2 floats, default=None
        Size of the new figure (ignored when ``ax`` is given).
    dpi : int, default=None
        Resolution of the new figure.
    show_info : sequence of str, default=()
        More lines in the boxes, any of "gain" (splits), "value" (a split's
        value before it split), "count" (training rows), "cover" (sum of
        hessians), "data_percentage" (share of the training rows).
    precision : int or None, default=3
        Decimals of thresholds, values, gains and covers; None writes them all.
    orientation : {"horizontal", "vertical"}, default="horizontal"
        "horizontal": the root on the left, depth growing rightwards (LightGBM's
        default); "vertical": the root on top.
    max_category_values : int, default=10
        At most so many categories written in a categorical split's box.
    **kwargs
        Passed to ``ax.text`` for the boxes (``fontsize=8``, ...).

    Returns
    -------
    matplotlib.axes.Axes
        The axes drawn on; ``ax.texts`` holds one boxed text per node, in node
        order, then the edge labels; ``ax.lines`` one edge per child.
    """
    _pyplot()
    booster = _booster_of(model)
    if orientation not in ("horizontal", "vertical"):
        raise ValueError(f"orientation={orientation!r} must be 'horizontal' or 'vertical'")
    if isinstance(show_info, str):
        show_info = (show_info,)  # one name is not a sequence of its letters
    unknown = [s for s in (show_info or ()) if s not in TREE_INFO]
    if unknown:
        raise ValueError(f"show_info={list(show_info)!r}: unknown {unknown}; choose among "
                         f"{list(TREE_INFO)}")
    _check_precision(precision)
    if (not isinstance(max_category_values, numbers.Integral)
            or isinstance(max_category_values, bool) or max_category_values < 1):
        raise ValueError(f"max_category_values={max_category_values!r} must be an int >= 1")
    tree = _tree_of(booster, tree_index)
    nodes = tree["nodes"]
    across = _node_positions(nodes)
    n_leaves = max(1, int(tree["n_leaves"]))
    max_depth = max(node["depth"] for node in nodes)
    horizontal = orientation == "horizontal"

    def xy(i):
        # depth runs left to right (or top down); the left child comes first (top or left)
        d, a = float(nodes[i]["depth"]), across[i]
        return (d, -a) if horizontal else (a, -d)

    if ax is None and figsize is None:
        long, wide = 3.0 * (max_depth + 1), 1.0 * n_leaves + 1
        figsize = (long, wide) if horizontal else (1.8 * n_leaves + 1, 1.5 * (max_depth + 1))
    ax = _new_axes(ax, figsize, dpi)
    box = dict(boxstyle="round,pad=0.3", facecolor="white", edgecolor="black")
    for node in nodes:
        text = _node_text(node, show_info or (), precision, max_category_values,
                          nodes[0]["count"])
        ax.text(*xy(node["node"]), text, ha="center", va="center", bbox=box,
                zorder=3, **kwargs)
    for node in nodes:
        if node["is_leaf"]:
            continue
        for child, answer, goes_left in ((node["left"], "yes", True),
                                         (node["right"], "no", False)):
            start, end = xy(node["node"]), xy(child)
            # a line, not an annotation: ax.texts stays the boxes and the edge labels
            ax.plot([start[0], end[0]], [start[1], end[1]], color="gray", zorder=1)
            label = answer + (", missing" if node["missing_go_left"] == goes_left else "")
            ax.text((start[0] + end[0]) / 2, (start[1] + end[1]) / 2, label, ha="center",
                    va="center", fontsize="small", color="dimgray", zorder=2)
    ends = np.array([xy(i) for i in range(len(nodes))])
    # half a step of margin around the outermost boxes' centres
    ax.set_xlim(ends[:, 0].min() - 0.6, ends[:, 0].max() + 0.6)
    ax.set_ylim(ends[:, 1].min() - 0.6, ends[:, 1].max() + 0.6)
    ax.set_axis_off()
    return ax


# ---- split thresholds ---------------------------------------------------------------------
def _feature_index(model_view: dict, feature) -> int:
    """The index of ``feature``, given by index or by name."""
    n = model_view["n_features"]
    if isinstance(feature, str):
        names = model_view["feature_names"] or [f"Column_{i}" for i in range(n)]
        if feature not in names:
            raise ValueError(f"feature={feature!r} is not a feature name of the model; "
                             f"names: {names}")
        return names.index(feature)
    if isinstance(feature, numbers.Integral) and not isinstance(feature, bool):
        if not 0 <= feature < n:
            raise ValueError(f"feature={feature} must be in [0, {n}) (the model has {n} "
                             "features)")
        return int(feature)
    raise TypeError(f"feature={feature!r} must be a feature index (int) or name (str)")


def _split_values(model, feature) -> np.ndarray:
    """The thresholds of every split on numerical ``feature`` (by index or name), all trees."""
    view = _booster_of(model).dump_model()
    f = _feature_index(view, feature)
    if view["features"][f]["kind"] == "categorical":
        raise ValueError(f"feature={feature!r} is categorical: its splits are category "
                         "sets, not thresholds, so it has no split value histogram")
    return np.array([node["threshold"] for stage in view["trees"] for tree in stage
                     for node in tree["nodes"]
                     if not node["is_leaf"] and node["feature"] == f], dtype=np.float64)


def plot_split_value_histogram(model, feature, bins=None, ax=None, width_coef: float = 0.8,
                               xlim=None, ylim=None,
                               title: str | None = "Split value histogram for feature with "
                                                   "@index/name@ @feature@",
                               xlabel: str | None = "Feature split value",
                               ylabel: str | None = "Count", figsize=None, dpi=None,
                               grid: bool = True, **kwargs: Any):
    """Plot the histogram of the thresholds the trees split a numerical feature on.

    .. versionadded:: 0.1.0

    Parameters
    ----------
    model : Booster or fitted estimator
        The model; an estimator's ``booster_`` is read.
    feature : int or str
        The feature, by index or by name; a categorical feature, or one no tree
        splits on, is refused (ValueError).
    bins : int, str or sequence, default=None
        ``numpy.histogram``'s bins; None takes one bin per distinct threshold
        (LightGBM's rule).
    ax : matplotlib.axes.Axes, default=None
        Axes to draw on; None draws on a new figure.
    width_coef : float, default=0.8
        Width of a bar as a fraction of its bin's.
    xlim, ylim : tuple of 2 floats, default=None
        Axis limits; None fits the bars.
    title, xlabel, ylabel : str or None
        Axes title and labels; None leaves one out. In ``title``, ``@feature@``
        is replaced by ``feature`` and ``@index/name@`` by "index" or "name".
    figsize : tuple of 2 floats, default=None
        Size of the new figure (ignored when ``ax`` is given).
    dpi : int, default=None
        Resolution of the new figure.
    grid : bool, default=True
        Draw the grid.
    **kwargs
        Passed to ``ax.bar``.

    Returns
    -------
    matplotlib.axes.Axes
        The axes drawn on; one bar per bin, whose heights sum to the number of
        splits on the feature.
    """
    _pyplot()
    from matplotlib.ticker import MaxNLocator

    if not isinstance(width_coef, numbers.Real) or isinstance(width_coef, bool) \
            or not 0 < width_coef <= 1:
        raise ValueError(f"width_coef={width_coef!r} must be a number in (0, 1]")
    values = _split_values(model, feature)
    if values.size == 0:
        raise ValueError(f"feature={feature!r} is not split on by any tree: no split value "
                         "histogram to plot")
    if bins is None:
        bins = np.unique(values).size
    hist, edges = np.histogram(values, bins=bins)
    ax = _new_axes(ax, figsize, dpi)
    ax.bar((edges[:-1] + edges[1:]) / 2, hist, align="center",
           width=width_coef * np.diff(edges), **kwargs)
    ax.yaxis.set_major_locator(MaxNLocator(integer=True))  # counts: no 0.5 ticks
    if xlim is None:
        span = (edges[-1] - edges[0]) * 0.2
        xlim = (edges[0] - span, edges[-1] + span)
    if title is not None:
        title = title.replace("@feature@", str(feature)).replace(
            "@index/name@", "name" if isinstance(feature, str) else "index")
    _label_axes(ax, xlim=xlim, ylim=ylim if ylim is not None else (0, hist.max() * 1.1),
                title=title, xlabel=xlabel, ylabel=ylabel, grid=grid)
    return ax
