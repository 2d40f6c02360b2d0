"""Search spaces of a study: the default grid of SPEC §6, ``--grid`` parsing, config keys.

Data flow: ``--grid NAME=V1,V2`` strings -> :func:`parse_grid` (values typed and checked
against the parameter table of ``treeboost.params``) -> a grid ``{name: [values]}`` ->
:func:`expand` (every configuration) -> :func:`fit_groups` (configurations that differ
only by ``n_estimators`` share one fit, read at several stages) -> the runner. The
Bayesian search uses :func:`bayes_space` for the bounds of the same axes.
"""

from __future__ import annotations

import itertools
import json
import math

from ..params import PARAMS, default

#: SPEC §6: 4 x 4 x 4 x 4 = 256 configurations
DEFAULT_GRID: dict[str, list] = {
    "learning_rate": [0.1, 0.05, 0.01, 0.001],
    "max_leaf_nodes": [2, 3, 6, 11],
    "n_estimators": [100, 200, 500, 1000],
    "subsample": [0.6, 0.7, 0.8, 1.0],
}

#: the bounds of ``search="bayes"`` when no grid is given: the space the tuned comparison
#: of issue 35 searched (benchmarks/bench_tuned.py), whose best trials used 41 leaves, 10
#: rows a leaf, 0.7 of the rows and of the columns and lr 0.043 (medians over 20 sets and
#: 3 seeds; 10th-90th percentiles 6-98 leaves, 5-50 rows) -- most of it outside the SPEC
#: grid's 2-11 leaves and 20 rows, and with axes the grid lacks. 2^6 x 4 stages = 256, the
#: grid's budget.
DEFAULT_BAYES_GRID: dict[str, list] = {
    "colsample_bytree": [0.5, 1.0],
    "learning_rate": [0.01, 0.3],
    "max_leaf_nodes": [4, 128],
    "min_samples_leaf": [5, 100],
    "n_estimators": [100, 200, 500, 1000],
    "reg_lambda": [0.001, 10.0],
    "subsample": [0.5, 1.0],
}

# parameters a study cannot vary: they change what is computed, not the model's capacity
# (threads, logging, early stopping on an inner split) or need a value no string gives
_NOT_SEARCHABLE = {"n_jobs", "verbose", "random_state", "categorical_features",
                   "class_weight", "eval_metric", "importance_type", "n_iter_no_change",
                   "validation_fraction", "tol"}


def _table() -> dict:
    """Parameter name -> list of its table entries (one per estimator scope)."""
    table: dict[str, list] = {}
    for p in PARAMS:
        if p.name not in _NOT_SEARCHABLE:
            table.setdefault(p.name, []).append(p)
    return table


def _convert(param, text: str):
    """A command-line token as a value of ``param``; raise ``ValueError`` if it is not one."""
    if param.none_ok and text.lower() == "none":
        return None
    if param.kind == "int":
        value = float(text)  # accept "1e3" and "100.0" but not "2.5"
        if not value.is_integer():
            raise ValueError(f"{param.name}={text!r} must be an integer")
        return int(value)
    if param.kind == "float":
        return float(text)
    return text


def parse_grid_item(item: str) -> tuple[str, list]:
    """Parse one ``NAME=V1,V2,...`` option into a parameter name and its typed values.

    Parameters
    ----------
    item : str
        The option text. ``NAME`` may use dashes or underscores.

    Returns
    -------
    name : str
        The parameter name as in the parameter table.
    values : list
        The values, converted to the parameter's type and checked against its bounds.

    Raises
    ------
    ValueError
        For a missing ``=``, an unknown or unsearchable parameter, an empty value list,
        a repeated value, or a value the parameter table rejects.
    """
    name, sep, text = item.partition("=")
    name = name.strip().replace("-", "_")
    if not sep or not name:
        raise ValueError(f"--grid {item!r}: expected NAME=V1,V2,... "
                         "(for example learning_rate=0.1,0.05)")
    table = _table()
    if name not in table:
        raise ValueError(f"--grid {item!r}: unknown parameter {name!r}; searchable "
                         f"parameters: {', '.join(sorted(table))}")
    tokens = [t.strip() for t in text.split(",")]
    if not text.strip() or any(t == "" for t in tokens):
        raise ValueError(f"--grid {item!r}: empty value in the list")
    values = []
    for token in tokens:
        errors = []
        for param in table[name]:  # a value valid for one estimator scope is accepted
            try:
                value = _convert(param, token)
                param.check(value)
                break
            except (TypeError, ValueError) as exc:
                errors.append(str(exc))
        else:
            raise ValueError(f"--grid {item!r}: {errors[0]}")
        values.append(value)
    if len(set(map(repr, values))) != len(values):
        raise ValueError(f"--grid {item!r}: a value is repeated")
    return name, values


def parse_grid(items, base: dict | None = None) -> dict[str, list]:
    """The grid of a study: ``base`` (the default grid) with the axes ``items`` replace.

    Parameters
    ----------
    items : iterable of str
        ``NAME=V1,V2,...`` options; each replaces that axis of ``base`` or adds one.
    base : dict, default=None
        Starting grid; None means :data:`DEFAULT_GRID` (a Bayesian study passes
        :data:`DEFAULT_BAYES_GRID`).

    Returns
    -------
    dict of {str: list}
    """
    grid = {k: list(v) for k, v in (DEFAULT_GRID if base is None else base).items()}
    for item in items:
        name, values = parse_grid_item(item)
        grid[name] = values
    return dict(sorted(grid.items()))


def config_key(config: dict) -> str:
    """Canonical text of a configuration: the database key (sorted JSON, no spaces)."""
    return json.dumps(config, sort_keys=True, separators=(",", ":"))


def expand(grid: dict[str, list]) -> list[dict]:
    """Every configuration of ``grid`` (its Cartesian product), in a fixed order."""
    names = sorted(grid)
    return [dict(zip(names, values, strict=True))
            for values in itertools.product(*(grid[n] for n in names))]


def fit_groups(configs: list[dict]) -> list[tuple[dict, list[int]]]:
    """Group configurations that differ only by ``n_estimators``: one fit serves a group.

    Returns
    -------
    list of (base, stages)
        ``base`` is the configuration without ``n_estimators``; ``stages`` the sorted
        numbers of trees at which the fit is read (``[100]``, the default, when the grid
        has no ``n_estimators`` axis).
    """
    groups: dict[str, tuple[dict, set]] = {}
    default_trees = next(p.default for p in PARAMS if p.name == "n_estimators")
    for config in configs:
        base = {k: v for k, v in config.items() if k != "n_estimators"}
        entry = groups.setdefault(config_key(base), (base, set()))
        entry[1].add(config.get("n_estimators", default_trees))
    return [(base, sorted(stages)) for base, stages in groups.values()]


def bayes_space(grid: dict[str, list]) -> dict:
    """Optuna distributions spanning each searchable axis of ``grid`` (not n_estimators).

    Numeric axes become ranges from their smallest to their largest grid value (log
    scale when the values span more than a factor of 10 and are positive); string axes
    and single-valued axes stay categorical.
    """
    from optuna.distributions import (
        CategoricalDistribution,
        FloatDistribution,
        IntDistribution,
    )

    table = _table()
    space = {}
    for name, values in grid.items():
        if name == "n_estimators":
            continue  # read at several stages of every fit, as in the grid
        kind = table[name][0].kind
        numeric = [v for v in values if v is not None]
        if kind not in ("int", "float") or len(numeric) < 2 or len(numeric) != len(values):
            space[name] = CategoricalDistribution(values)
            continue
        low, high = min(numeric), max(numeric)
        log = low > 0 and high / low > 10
        if kind == "int":
            space[name] = IntDistribution(int(low), int(high), log=log)
        else:
            space[name] = FloatDistribution(float(low), float(high), log=log)
    return space


def complexity(config: dict) -> tuple:
    """Sort key of the tie-breaking rule: smaller means simpler.

    Fewer trees x leaves first (the model's size), then fewer trees, fewer leaves, no
    row subsampling before subsampling, a larger learning rate (fewer effective
    stages), and last the configuration text so that the order is total.
    """
    trees = config.get("n_estimators", default("n_estimators"))
    leaves = config.get("max_leaf_nodes") or math.inf
    subsample = config.get("subsample", default("subsample"))
    return (trees * leaves, trees, leaves, -subsample,
            -config.get("learning_rate", default("learning_rate")), config_key(config))
