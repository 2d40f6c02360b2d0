"""Every dtype and array-layout constant of the package, fixed once.

Kernels compile one specialisation per distinct argument type, so the Python
side converts arrays to these dtypes before any kernel runs: each kernel then
compiles exactly once (and is cached on disk by Numba).
"""

import numpy as np

X_DTYPE = np.float64  # raw feature values, bin edges and thresholds
# raw inputs accepted without a copy: float32 stays float32 (kernels that read
# raw X compile once per entry; comparisons with edges happen in float64)
X_DTYPES = (np.float64, np.float32)
X_BINNED_DTYPE = np.uint8  # bin index; binned data is feature-major (n_features, n_samples)
Y_DTYPE = np.float64  # targets (class indices are stored as float64 too)
G_H_DTYPE = np.float32  # per-row gradient and hessian
SUM_DTYPE = np.float64  # histogram sums, leaf values, raw scores
INDEX_DTYPE = np.uint32  # row indices inside the grower
NODE_DTYPE = np.int32  # node indices and feature indices inside trees

MAX_BINS = 255  # bins for non-missing values: 0 .. MAX_BINS - 1
MISSING_BIN = 255  # always the last of the N_BINS histogram slots
N_BINS = 256  # histogram slots per feature: MAX_BINS value bins + 1 missing bin
# A histogram is float64 of shape (n_features, N_BINS, 3): sum of gradients,
# sum of hessians and row count for each bin, interleaved so that one update
# touches one cache line.
HIST_G, HIST_H, HIST_C = 0, 1, 2
# One split of a tree packed for prediction on raw numerical X: everything a row
# reads at a node in one 24-byte record (one cache line or less), where the
# separate node arrays cost five lines. left/right are split indices, or ~leaf
# (negative) for a leaf, so a leaf needs no load of its own to be recognised.
SPLIT_RECORD_DTYPE = np.dtype([("threshold", X_DTYPE), ("feature", NODE_DTYPE),
                               ("missing_left", NODE_DTYPE), ("left", NODE_DTYPE),
                               ("right", NODE_DTYPE)])


def readonly(a: np.ndarray) -> np.ndarray:
    """A read-only view of ``a`` (no copy).

    Numba types read-only arrays apart from writeable ones, so arrays that
    kernels only read are always passed as read-only views: a user's
    read-only memmap and a fresh array then share one compiled kernel.
    """
    view = a.view()
    view.flags.writeable = False
    return view
