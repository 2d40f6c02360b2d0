"""SciPy sparse input, recognised without importing SciPy.

A sparse matrix can only exist once ``scipy.sparse`` has been imported, so a
process that never imported it has none: ``issparse`` then answers False at
once, and dense training and prediction never pay SciPy's import (about 0.2 s,
with what it pulls in).
"""

from __future__ import annotations

import sys


def issparse(x) -> bool:
    """Whether ``x`` is a SciPy sparse matrix or array, without importing SciPy.

    Parameters
    ----------
    x : object

    Returns
    -------
    bool
    """
    sparse = sys.modules.get("scipy.sparse")
    return sparse is not None and sparse.issparse(x)
