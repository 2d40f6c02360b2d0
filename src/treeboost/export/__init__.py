"""Export: a fitted model in other runtimes' formats (ONNX, treelite).

Each exporter reads the model through the public model view
(``Booster.dump_model()``) and refuses what its format cannot state exactly, so an
exported model never predicts differently from treeboost's. The runtimes are optional
dependencies (``pip install treeboost[onnx]``), imported when an exporter runs.
"""

from __future__ import annotations

from ._onnx import float32_threshold, to_onnx

__all__ = ["float32_threshold", "to_onnx", "to_treelite"]


def to_treelite(model, **kw):
    """Export a fitted model as a ``treelite.Model`` (``export._treelite.to_treelite``).

    Imported on first use, so that ``treeboost.export`` loads without treelite.

    Parameters
    ----------
    model : TreeBoostRegressor, TreeBoostClassifier, TreeBoostRanker or Booster
        A fitted model.
    **kw
        Passed on to ``_treelite.to_treelite``.

    Returns
    -------
    treelite.Model
    """
    from ._treelite import to_treelite as f

    return f(model, **kw)
