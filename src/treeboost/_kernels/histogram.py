"""Build per-feature gradient/hessian/count histograms of a node.

Parallel over features: every feature's histogram is summed by one thread in
row order, so the sums are identical whatever the number of threads. Small
nodes use the serial kernel, which gives the same sums.
"""

from numba import prange

from ._jit import inline, kernel, parallel_kernel


@inline
def _feature_histogram(col, sample_indices, ordered_gradient, ordered_hessian, h):
    for i in range(sample_indices.shape[0]):
        b = col[sample_indices[i]]
        h[b, 0] += ordered_gradient[i]
        h[b, 1] += ordered_hessian[i]
        h[b, 2] += 1.0


@parallel_kernel
def build_histograms_root(X_binned, gradient, hessian, features, hist):
    """Histograms of all rows (no index indirection), for the listed features."""
    # X_binned: uint8 (n_features, n_samples), feature-major # IN
    # gradient, hessian: float32 (n_samples,)                 # IN
    # features: int32 (n_used,)                               # IN
    # hist: float64 (n_features, n_bins, 3), zeroed           # OUT
    n_samples = X_binned.shape[1]
    for k in prange(features.shape[0]):
        f = features[k]
        col = X_binned[f]
        h = hist[f]
        for i in range(n_samples):
            b = col[i]
            h[b, 0] += gradient[i]
            h[b, 1] += hessian[i]
            h[b, 2] += 1.0


@parallel_kernel
def build_histograms(X_binned, sample_indices, gradient, hessian, features,
                     ordered_gradient, ordered_hessian, hist):
    """Histograms of the rows in ``sample_indices`` for the listed features."""
    # X_binned: uint8 (n_features, n_samples), feature-major # IN
    # sample_indices: uint32 (n_node,)                        # IN
    # gradient, hessian: float32 (n_samples,)                 # IN
    # features: int32 (n_used,)                               # IN
    # ordered_gradient, ordered_hessian: float32 (>= n_node,) # scratch
    # hist: float64 (n_features, n_bins, 3), zeroed           # OUT
    n_node = sample_indices.shape[0]
    # gather once so that the per-feature loops read gradients contiguously
    for i in prange(n_node):
        j = sample_indices[i]
        ordered_gradient[i] = gradient[j]
        ordered_hessian[i] = hessian[j]
    for k in prange(features.shape[0]):
        f = features[k]
        _feature_histogram(X_binned[f], sample_indices, ordered_gradient,
                           ordered_hessian, hist[f])


@kernel
def build_histograms_serial(X_binned, sample_indices, gradient, hessian, features,
                            ordered_gradient, ordered_hessian, hist):
    """Serial twin of ``build_histograms`` for small nodes."""
    n_node = sample_indices.shape[0]
    for i in range(n_node):
        j = sample_indices[i]
        ordered_gradient[i] = gradient[j]
        ordered_hessian[i] = hessian[j]
    for k in range(features.shape[0]):
        f = features[k]
        _feature_histogram(X_binned[f], sample_indices, ordered_gradient,
                           ordered_hessian, hist[f])
