"""The study report: ``report.md`` and ``report.html`` with figures, read from the store.

Data flow: ``store`` -> ``analysis.summarise`` -> figures (matplotlib, Agg backend, PNG
files in ``DIR/figures``) and blocks of text and tables -> the same blocks written as
Markdown and as HTML. Nothing is recomputed: a report of a half-finished study shows what
is stored so far.
"""

from __future__ import annotations

import html
import json
import math
from pathlib import Path

import numpy as np

from .analysis import SMALL_ROWS, TIE_RULE, Summary, best_value_counts, lr_trees_regret, summarise
from .data import SCORES

_MODEL_NAMES = {"treeboost": "treeboost defaults", "lightgbm": "LightGBM defaults",
                "sklearn": "sklearn GradientBoosting defaults"}


def _pyplot():
    import matplotlib

    matplotlib.use("Agg")  # files only: no display needed, none opened
    import matplotlib.pyplot as plt

    return plt


def _baselines_of(summary: Summary, best) -> list[str]:
    """The reference models with a score on some of these datasets (scikit-learn has
    none on ranking datasets)."""
    return [m for m in summary.baselines if best[m].notna().any()]


def _fig_best(summary: Summary, path: Path, task: str) -> bool:
    """Bars of the best score per dataset of ``task`` (a score in [0, 1], higher better)."""
    best = summary.best[summary.best["task"] == task].sort_values("score")
    if best.empty:
        return False
    label = SCORES[task].label
    baselines = _baselines_of(summary, best)
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(9.5, 1.6 + 0.22 * len(best)))
    y = np.arange(len(best))
    ax.barh(y, best["score"], color="#4c72b0", label="treeboost, best configuration")
    markers = {"treeboost": "o", "lightgbm": "s", "sklearn": "^"}
    for model in baselines:
        ax.scatter(best[model], y, marker=markers.get(model, "x"), s=18, zorder=3,
                   label=_MODEL_NAMES.get(model, model))
    ax.set_yticks(y, best["dataset"], fontsize=7)
    ax.set_xlabel(f"test {label}")
    low = np.nanmin(best[["score", *baselines]].to_numpy(dtype=float))
    ax.set_xlim(max(0.0, low - 0.05), 1.0)
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0))  # off the bars
    ax.set_title(f"Best {label} per dataset")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return True


def _axes(summary: Summary) -> list[str]:
    grid = summary.settings.get("grid", {})
    return [name for name in sorted(grid) if len(grid[name]) > 1]


def _fig_params(summary: Summary, path: Path) -> bool:
    names = _axes(summary)
    best = summary.best
    if not names or best.empty:
        return False
    plt = _pyplot()
    parts = [("all datasets", best), (f"< {SMALL_ROWS} rows", best[best["n_rows"] < SMALL_ROWS]),
             (f">= {SMALL_ROWS} rows", best[best["n_rows"] >= SMALL_ROWS])]
    fig, axes = plt.subplots(len(names), 3, figsize=(9, 2.1 * len(names)), squeeze=False)
    grid = summary.settings["grid"]
    for i, name in enumerate(names):
        for j, (title, part) in enumerate(parts):
            ax = axes[i][j]
            counts = best_value_counts(part, name) if not part.empty else None
            if summary.settings.get("search") == "grid":
                labels = [str(v) for v in grid[name]]
                heights = [0 if counts is None else int(counts.get(repr(v), 0))
                           for v in grid[name]]
                ax.bar(labels, heights, color="#55a868")
            elif counts is not None:
                ax.hist([float(c.get(name)) for c in part["config"]], bins=8, color="#55a868")
            ax.set_title(f"{name}: {title} ({len(part)})", fontsize=8)
            ax.tick_params(labelsize=7)
    fig.suptitle("Best value of each hyper-parameter (datasets per value)", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return True


def _fig_lr_trees(summary: Summary, path: Path) -> bool:
    best = summary.best
    if best.empty or not all("learning_rate" in c and "n_estimators" in c
                             for c in best["config"]):
        return False
    plt = _pyplot()
    regret = lr_trees_regret(summary)
    fig, axes = plt.subplots(1, 2 if regret is not None else 1, figsize=(10, 4),
                             squeeze=False)
    ax = axes[0][0]
    pairs = [(c["learning_rate"], c["n_estimators"]) for c in best["config"]]
    unique, counts = np.unique(np.array(pairs, dtype=float), axis=0, return_counts=True)
    ax.scatter(unique[:, 0], unique[:, 1], s=40 * counts, alpha=0.6, color="#c44e52")
    for (lr, trees), n in zip(unique, counts, strict=True):
        ax.annotate(str(n), (lr, trees), ha="center", va="center", fontsize=7)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("learning rate")
    ax.set_ylabel("number of trees")
    ax.set_title("Best (learning rate, trees) per dataset\n(size: number of datasets)",
                 fontsize=9)
    if regret is not None:
        ax = axes[0][1]
        image = ax.imshow(regret.to_numpy(), cmap="viridis_r", aspect="auto")
        ax.set_xticks(range(regret.shape[1]), [str(c) for c in regret.columns])
        ax.set_yticks(range(regret.shape[0]), [str(i) for i in regret.index])
        ax.set_xlabel("number of trees")
        ax.set_ylabel("learning rate")
        values = regret.to_numpy()
        for (r, c), v in np.ndenumerate(values):
            # dark text on the light (small) end of the reversed colour map
            ax.text(c, r, f"{v:.3f}", ha="center", va="center", fontsize=7,
                    color="k" if v < np.nanmax(values) / 2 else "w")
        fig.colorbar(image, ax=ax)
        ax.set_title("Mean accuracy lost against each dataset's best\n(best over the "
                     "other axes)", fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return True


def _config_text(config: dict) -> str:
    return ", ".join(f"{k}={v:.4g}" if isinstance(v, float) else f"{k}={v}"
                     for k, v in sorted(config.items()))


def _table(summary: Summary, task: str):
    best = summary.best[summary.best["task"] == task]
    if best.empty:
        return None
    baselines = _baselines_of(summary, best)
    head = ["dataset", "rows", "classes", "best configuration",
            f"treeboost best {SCORES[task].label}", "ties",
            *[_MODEL_NAMES.get(m, m) for m in baselines]]
    if task != "classification":
        head.remove("classes")
    rows = []
    for _, r in best.iterrows():
        cells = [r["dataset"], str(r["n_rows"])]
        if task == "classification":
            cells.append(str(r["n_classes"]))
        cells += [_config_text(r["config"]), f"{r['score']:.4f}",
                  f"{r['n_tied']}/{r['n_configs']}"]
        cells += ["" if np.isnan(r[m]) else f"{r[m]:.4f}" for m in baselines]
        rows.append(cells)
    means = ["mean", "", *([""] if task == "classification" else []), "",
             f"{best['score'].mean():.4f}", ""]
    means += [f"{best[m].mean():.4f}" for m in baselines]
    return head, rows + [means]


def _settings_text(summary: Summary, store) -> str:
    s = summary.settings
    grid = ", ".join(f"{k} {{{', '.join(map(str, v))}}}" for k, v in s["grid"].items())
    protocol = ("a stratified 80/20 hold-out (plain for regression, by whole queries for "
                "ranking, by event for survival)" if s["folds"] == 1 else
                f"stratified {s['folds']}-fold cross-validation (plain k-fold for regression, "
                f"shuffled folds of whole queries for ranking, by event for survival)")
    search = "every configuration of the grid" if s["search"] == "grid" else \
        (f"a Bayesian search (Optuna TPE) inside the grid's bounds, budget "
         f"{s['trials'] or 'the grid size'} configurations per dataset")
    runs = store.db.execute("SELECT COUNT(*), SUM(finished - started) FROM runs "
                            "WHERE finished IS NOT NULL").fetchone()
    seconds = runs[1] or 0.0
    return (f"Search: {search}. Grid: {grid}. Protocol: {protocol}, seed {s['seed']}; "
            f"scores are test accuracy (classification, higher is better), RMSE "
            f"(regression, lower is better), {SCORES['ranking'].label}, the mean over the "
            f"test queries (ranking, higher is better) or Harrell's concordance index "
            f"(survival, higher is better); every model sees the same rows. "
            f"Encoding: {'one-hot' if s['one_hot'] else 'native categorical splits'}. "
            f"Reference models use their libraries' default parameters on the same folds "
            f"(scikit-learn's GradientBoosting on one-hot columns with median-imputed "
            f"missing values; it has no ranking model; LightGBM's for ranking is "
            f"LGBMRanker; neither has a survival model). Wall time of the completed runs: "
            f"{seconds / 60:.1f} min over {runs[0]} run(s).")


def _blocks(summary: Summary, store, figures: dict) -> list:
    blocks = [("h1", "treeboost study"), ("p", _settings_text(summary, store)),
              ("p", f"Tie-breaking rule: {TIE_RULE}")]
    for name, task in (("best", "classification"), ("best_ranking", "ranking"),
                       ("best_survival", "survival")):
        if name in figures:
            blocks += [("h2", f"Best {SCORES[task].label} per dataset"),
                       ("img", figures[name])]
    if "params" in figures:
        blocks += [("h2", "Best value of each hyper-parameter"),
                   ("p", f"Counts of datasets whose best configuration has each value, "
                         f"overall and for datasets under and over {SMALL_ROWS} rows."),
                   ("img", figures["params"])]
    if "lr_trees" in figures:
        blocks += [("h2", "Learning rate against number of trees"), ("img", figures["lr_trees"])]
    for task in ("classification", "regression", "ranking", "survival"):
        table = _table(summary, task)
        if table is not None:
            blocks += [("h2", f"{task.capitalize()}: best configuration and "
                              f"{SCORES[task].label} per dataset"), ("table", table)]
    return blocks


def _markdown(blocks) -> str:
    out = []
    for kind, body in blocks:
        if kind == "h1":
            out.append(f"# {body}\n")
        elif kind == "h2":
            out.append(f"## {body}\n")
        elif kind == "p":
            out.append(body + "\n")
        elif kind == "img":
            out.append(f"![{body}]({body})\n")
        else:
            head, rows = body
            out.append("| " + " | ".join(head) + " |")
            out.append("|" + "|".join("---" for _ in head) + "|")
            out.extend("| " + " | ".join(c.replace("|", "\\|") for c in r) + " |"
                       for r in rows)
            out.append("")
    return "\n".join(out)


def _html(blocks) -> str:
    e = html.escape
    out = ["<!DOCTYPE html>", "<html><head><meta charset='utf-8'><title>treeboost study"
           "</title><style>body{font-family:sans-serif;max-width:1100px;margin:auto}"
           "table{border-collapse:collapse;font-size:12px}td,th{border:1px solid #ccc;"
           "padding:2px 6px}img{max-width:100%}</style></head><body>"]
    for kind, body in blocks:
        if kind in ("h1", "h2", "p"):
            out.append(f"<{kind}>{e(body)}</{kind}>")
        elif kind == "img":
            out.append(f"<img src='{e(body)}' alt='{e(body)}'>")
        else:
            head, rows = body
            out.append("<table><tr>" + "".join(f"<th>{e(h)}</th>" for h in head) + "</tr>")
            out.extend("<tr>" + "".join(f"<td>{e(c)}</td>" for c in r) + "</tr>"
                       for r in rows)
            out.append("</table>")
    out.append("</body></html>")
    return "\n".join(out)


def write_report(store, datasets=None) -> Path:
    """Write ``report.md``, ``report.html`` and ``figures/*.png`` into the study folder.

    Parameters
    ----------
    store : Store
        The study's open store.
    datasets : list of str, default=None
        Datasets to report; None: every dataset with results.

    Returns
    -------
    pathlib.Path
        Path of ``report.md``.
    """
    summary = summarise(store)
    if datasets is not None:
        summary.best = summary.best[summary.best["dataset"].isin(list(datasets))] \
            if not summary.best.empty else summary.best
    folder = store.folder
    (folder / "figures").mkdir(exist_ok=True)
    figures = {}
    if not summary.best.empty:
        for name, draw in (("best", lambda s, p: _fig_best(s, p, "classification")),
                           ("best_ranking", lambda s, p: _fig_best(s, p, "ranking")),
                           ("best_survival", lambda s, p: _fig_best(s, p, "survival")),
                           ("params", _fig_params), ("lr_trees", _fig_lr_trees)):
            if draw(summary, folder / "figures" / f"{name}.png"):
                figures[name] = f"figures/{name}.png"
    blocks = _blocks(summary, store, figures)
    (folder / "report.md").write_text(_markdown(blocks), encoding="utf-8")
    (folder / "report.html").write_text(_html(blocks), encoding="utf-8")
    records = [{k: (None if isinstance(v, float) and math.isnan(v) else v)
                for k, v in r.items()} for r in summary.best.to_dict("records")]
    (folder / "best.json").write_text(json.dumps(records, indent=1, default=float) + "\n",
                                      encoding="utf-8")
    return folder / "report.md"
