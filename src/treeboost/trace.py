"""``trace=True``: every stage of a small fit as tables, a worked example (SPEC §4).

``Booster.fit`` appends one record of plain arrays per tree; ``trace_tables``
turns them into the estimator's ``trace_`` and ``format_trace`` prints them
the way a textbook works an example: F, the pseudo-residuals r = -g, the
split, the leaf each row falls in, each leaf's line-search value gamma and
the shrunk value nu * gamma added to F.

Each entry of ``trace_`` is a dict:

- ``stage``, ``output``: 0-based stage and output (class for multiclass).
- ``rows``: a DataFrame indexed by training row with ``F`` (raw score the
  gradients are taken at: before the stage; for DART without the dropped
  stages; for rf F0), ``residual`` (-gradient, with the sample weight),
  ``hessian``, ``in_sample`` (row used by this tree), ``weight`` (1, or the
  GOSS factor (1 - a) / b of a drawn row, 0 outside the sample), ``leaf``
  (node id of the leaf the row falls in) and ``F_next`` (F plus the shrunk
  leaf value: the new score for gbdt and goss).
- ``leaves``: a DataFrame indexed by leaf node id with ``n_rows`` (rows of
  the sample), ``sum_residual``, ``gamma`` and ``value`` (= shrinkage * gamma).
- ``splits``: one line per internal node, "node 0: x1 <= 2.5 -> 1 | 2".
- ``shrinkage``: nu (DART: nu / (k + 1); rf: 1), ``dropped``: DART's dropped stages.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

#: rows above which ``trace=True`` warns: the tables hold every row of every stage
SMALL_DATA_ROWS = 10_000


def _splits(record: dict, names) -> list[str]:
    lines = []
    for node in np.flatnonzero(record["left"] >= 0):
        f = int(record["feature"][node])
        name = str(names[f]) if names is not None else f"x{f}"
        missing = "missing left" if record["missing_left"][node] else "missing right"
        test = f"{name} in left categories" if record["is_categorical"][node] else \
            f"{name} <= {record['threshold'][node]:.6g}"
        lines.append(f"node {node}: {test} -> {record['left'][node]} | "
                     f"{record['right'][node]} ({missing})")
    return lines


def trace_tables(records: list[dict], feature_names=None) -> list[dict]:
    """``trace_`` entries (tables) from ``Booster.fit``'s trace records.

    Parameters
    ----------
    records : list of dict
        One per tree, in training order.
    feature_names : array-like of str, default=None
        Names used in the split lines (``x0``, ``x1``, ... when None).

    Returns
    -------
    list of dict
        See the module docstring.
    """
    out = []
    for r in records:
        in_sample = r["row_factor"] > 0
        leaf_of = dict(zip(r["leaf_nodes"].tolist(), r["value"].tolist(), strict=True))
        step = np.array([leaf_of[n] for n in r["leaf"].tolist()])
        rows = pd.DataFrame({"F": r["F"], "residual": r["residual"], "hessian": r["hessian"],
                             "in_sample": in_sample, "weight": r["row_factor"],
                             "leaf": r["leaf"], "F_next": r["F"] + step})
        rows.index.name = "row"
        used = rows[in_sample]
        leaves = pd.DataFrame({
            "n_rows": [int((used["leaf"] == n).sum()) for n in r["leaf_nodes"]],
            "sum_residual": [float((used["residual"] * used["weight"])[used["leaf"] == n].sum())
                             for n in r["leaf_nodes"]],
            "gamma": r["gamma"], "value": r["value"]},
            index=pd.Index(r["leaf_nodes"], name="leaf"))
        out.append({"stage": r["stage"], "output": r["output"], "rows": rows,
                    "leaves": leaves, "splits": _splits(r, feature_names),
                    "shrinkage": r["shrinkage"], "dropped": r["dropped"]})
    return out


def format_trace(trace: list[dict], stages=None, max_rows: int = 50) -> str:
    """A fitted estimator's ``trace_`` as text, stage by stage.

    Parameters
    ----------
    trace : list of dict
        ``trace_`` of an estimator fitted with ``trace=True``.
    stages : iterable of int, default=None
        Stages to print; None prints all.
    max_rows : int, default=50
        Rows of each table printed at most.

    Returns
    -------
    str
    """
    wanted = None if stages is None else set(stages)
    parts = []
    with pd.option_context("display.max_rows", max_rows, "display.width", 120,
                           "display.float_format", "{:.6g}".format):
        for entry in trace:
            if wanted is not None and entry["stage"] not in wanted:
                continue
            head = f"Stage {entry['stage'] + 1}"
            if entry["output"] or any(e["output"] for e in trace):
                head += f", output {entry['output']}"
            head += f"  (shrinkage {entry['shrinkage']:.6g}"
            head += f", dropped stages {entry['dropped']})" if entry["dropped"] else ")"
            splits = entry["splits"] or ["no split: a single leaf"]
            parts.append("\n".join([head, "split" + ("s" if len(splits) > 1 else "") + ":",
                                    *("  " + s for s in splits),
                                    "rows (residual = -gradient):",
                                    entry["rows"].to_string(max_rows=max_rows),
                                    "leaves (value = shrinkage * gamma, added to F):",
                                    entry["leaves"].to_string()]))
    return "\n\n".join(parts) + "\n"
