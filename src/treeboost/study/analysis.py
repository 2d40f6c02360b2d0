"""What a study found, read from its store: best configuration per dataset and aggregates.

Data flow: ``store`` rows -> :func:`summarise` (mean score over folds of every complete
configuration; the best one per dataset, ties broken toward the simpler model by
``space.complexity``; reference scores alongside) -> ``report``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from .data import SCORES
from .fitting import BASELINES
from .space import complexity

TIE_RULE = (
    "Scores are means over folds. Among the configurations whose score equals the best "
    "one exactly (ties are common on small test sets, where accuracy moves in steps of "
    "1/n_test), the simplest is reported: fewest trees x leaves first (model size), then "
    "fewest trees, fewest leaves, no row subsampling before subsampling, the larger "
    "learning rate, and finally the configuration text (a total order).")

#: the datasets under this many rows are "small" in the report
SMALL_ROWS = 500


@dataclass
class Summary:
    """The study's findings.

    ``best`` has one row per dataset (name, task, n_rows, n_classes, metric, score,
    config, n_tied, n_configs, and one column per reference model); ``metric`` is
    "accuracy", "rmse" or "ndcg@10" (ranking), see ``data.SCORES``. A reference model that
    cannot learn the task (scikit-learn on ranking) has NaN. ``scores`` every complete
    configuration's mean score (dataset, config dict, score).
    """

    best: pd.DataFrame
    scores: pd.DataFrame
    settings: dict
    baselines: list = field(default_factory=list)


def _mean_scores(store, folds: int) -> pd.DataFrame:
    rows = store.results()
    frame = pd.DataFrame(rows, columns=["dataset", "config", "fold", "score"])
    if frame.empty:
        return frame.assign(n_folds=[])
    grouped = frame.groupby(["dataset", "config"], sort=True)["score"]
    means = grouped.agg(["mean", "count"]).reset_index()
    # a configuration missing a fold (study still running) is not comparable yet
    means = means[means["count"] == folds]
    return means.rename(columns={"mean": "score", "count": "n_folds"})


def summarise(store) -> Summary:
    """Best configuration of every dataset with its reference scores."""
    settings = store.settings()
    folds = settings.get("folds", 1)
    means = _mean_scores(store, folds)
    info = {d["name"]: d for d in store.datasets()}
    base = pd.DataFrame(store.baselines(), columns=["dataset", "model", "fold", "score"])
    base_means = base.groupby(["dataset", "model"])["score"].agg(["mean", "count"])
    present = set(base["model"])
    models = [m for m in BASELINES if m in present] + sorted(present - set(BASELINES))
    records = []
    for name, group in means.groupby("dataset", sort=True):
        task = info[name]["task"]
        metric, higher, _ = SCORES[task]
        best_value = group["score"].max() if higher else group["score"].min()
        tied = group[group["score"] == best_value]
        configs = [json.loads(c) for c in tied["config"]]
        config = min(configs, key=complexity)
        record = {"dataset": name, "task": task, "n_rows": info[name]["n_rows"],
                  "n_classes": info[name]["n_classes"],
                  "metric": metric, "score": float(best_value),
                  "config": config, "n_tied": len(tied), "n_configs": len(group)}
        for model in models:
            key = (name, model)
            ok = key in base_means.index and base_means.loc[key, "count"] == folds
            record[model] = float(base_means.loc[key, "mean"]) if ok else np.nan
        records.append(record)
    best = pd.DataFrame(records)
    scores = means.assign(config=[json.loads(c) for c in means["config"]]) \
        if not means.empty else means
    return Summary(best, scores, settings, models)


def best_value_counts(best: pd.DataFrame, name: str) -> pd.Series:
    """How often each value of parameter ``name`` is in a dataset's best configuration,
    indexed by the value's ``repr`` (so that None and 1 vs 1.0 stay apart)."""
    values = [repr(c.get(name)) for c in best["config"]]
    return pd.Series(values, dtype=object).value_counts()


def lr_trees_regret(summary: Summary) -> pd.DataFrame | None:
    """Mean over classification datasets of (best accuracy - best accuracy at each
    (learning_rate, n_estimators)), maximising over the other axes: how much a
    learning rate loses with each number of trees. None without both axes on a grid."""
    grid = summary.settings.get("grid", {})
    if summary.settings.get("search") != "grid" or "learning_rate" not in grid or \
            "n_estimators" not in grid or summary.scores.empty:
        return None
    scores = summary.scores
    cls = set(summary.best.loc[summary.best["task"] == "classification", "dataset"])
    scores = scores[scores["dataset"].isin(cls)]
    if scores.empty:
        return None
    frame = scores.assign(learning_rate=[c["learning_rate"] for c in scores["config"]],
                          n_estimators=[c["n_estimators"] for c in scores["config"]])
    cell = frame.groupby(["dataset", "learning_rate", "n_estimators"])["score"].max()
    regret = cell.groupby("dataset").transform("max") - cell
    return regret.groupby(["learning_rate", "n_estimators"]).mean().unstack("n_estimators")
