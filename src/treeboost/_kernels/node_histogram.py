"""A node's histogram on the CPU: the node builder, the root's dense sources, and the
bin-wise steps around them (zeroing the used bins, sibling subtraction).

``grow_tree`` (``grower``) calls these inside its compiled loop; the histogram
provider's CPU build (``provider.build_histogram``) calls the same ones, so a tree
whose histograms are handed out is the in-kernel tree bit for bit.
"""

from numba import types
from numba.extending import overload

from ._jit import inline, kernel
from .histogram import (
    build_histograms,
    build_histograms_root,
    build_histograms_serial,
    unit_hessians,
)


@kernel
def _zero_used_bins(hist, features, n_bins_non_missing, missing_bin):
    """Zero the bins rows can fall in: each listed feature's value bins and missing bin.

    The other slots of a (n_features, 256, 3) histogram are never read; on
    wide data with few distinct values zeroing (and subtracting) all of them
    cost far more than building the histogram.
    """
    # (also the packed integer histograms of quantised gradients, (n_features, 256) int64)
    for k in range(features.shape[0]):
        f = features[k]
        hist[f, :n_bins_non_missing[f]] = 0
        hist[f, missing_bin] = 0


@kernel
def _copy_root(hist, root_multi, root_counts, output, features, n_bins_non_missing,
               missing_bin):
    """Output ``output``'s root histogram, used bins, from a stage's shared root pass."""
    for k in range(features.shape[0]):
        f = features[k]
        nb = n_bins_non_missing[f]
        for b in range(nb + 1):
            src = b if b < nb else missing_bin
            hist[f, src, 0] = root_multi[f, src, 2 * output]
            hist[f, src, 1] = root_multi[f, src, 2 * output + 1]
            hist[f, src, 2] = root_counts[f, src]


@inline
def _unit_root_from_counts(X_binned, gradient, sample_indices, features, all_rows,
                           feature_bins, scratch, hist, tree):
    """Build a unit-hessian root histogram from its gradient sums and the row counts
    kept in ``scratch``, and return True; False where no counts are kept."""
    counts = scratch.root_counts
    if not all_rows or counts.shape[0] == 0:
        return False
    # every row, each with hessian 1.0: a bin's count and hessian sum are its row
    # count, the same every tree, so a tree adds only the gradients (one float a
    # row and feature, not two: about half the time of the root's pass)
    g = scratch.root_gradient
    nbnm = feature_bins.n_bins_non_missing
    missing_bin = feature_bins.missing_bin
    for k in range(features.shape[0]):  # (not _zero_used_bins: one more signature)
        f = features[k]
        for b in range(nbnm[f]):
            g[f, b] = 0.0
        g[f, missing_bin] = 0.0
    if sample_indices.shape[0] * features.shape[0] >= tree.serial_histogram_updates:
        build_histograms_root(X_binned, gradient, None, features, g, tree.n_threads)
    else:
        build_histograms_serial(X_binned, sample_indices, gradient, None, features,
                                scratch.ordered_gradient, scratch.ordered_hessian, g)
    for k in range(features.shape[0]):
        f = features[k]
        nb = nbnm[f]
        for b in range(nb + 1):
            src = b if b < nb else missing_bin
            hist[f, src, 0] = g[f, src]
            hist[f, src, 1] = counts[f, src]
            hist[f, src, 2] = counts[f, src]
    return True


def _unit_root(X_binned, gradient, hessian, sample_indices, features, all_rows,
               feature_bins, scratch, hist, tree):
    """``_unit_root_from_counts`` where every hessian is 1.0 (``hessian`` None), else False."""
    if hessian is not None:
        return False
    return _unit_root_from_counts(X_binned, gradient, sample_indices, features, all_rows,
                                  feature_bins, scratch, hist, tree)


@overload(_unit_root)
def _unit_root_typed(X_binned, gradient, hessian, sample_indices, features, all_rows,
                     feature_bins, scratch, hist, tree):
    # chosen when typing, not a branch: grow_tree's specialisations with hessians
    # then compile none of it
    if not isinstance(hessian, types.NoneType):
        return (lambda X_binned, gradient, hessian, sample_indices, features, all_rows,
                feature_bins, scratch, hist, tree: False)

    def unit_root(X_binned, gradient, hessian, sample_indices, features, all_rows,
                  feature_bins, scratch, hist, tree):
        return _unit_root_from_counts(X_binned, gradient, sample_indices, features,
                                      all_rows, feature_bins, scratch, hist, tree)
    return unit_root


@kernel
def dense_root_histogram(X_binned, gradient, hessian, sample_indices, features, all_rows,
                         feature_bins, scratch, root, tree, general, quant, slot):
    """The root's histogram ``slot`` from its dense sources, the first that applies: a
    stage's shared root pass (``root.output``), the unit hessians' kept row counts, the
    parallel pass over every row, the node builder (serial or parallel by size).

    Quantised (``quant``), the packed integer sums go to ``quant.pool[slot]``, unpacked
    by the caller. ``grow_tree`` and the histogram provider's CPU build
    (``provider.build_histogram``) both call it: one root step.
    """
    n_bins_non_missing = feature_bins.n_bins_non_missing
    missing_bin = feature_bins.missing_bin
    hist = scratch.hist_pool[slot]
    if root.output >= 0:
        _copy_root(hist, root.multi, root.counts, root.output, features,
                   n_bins_non_missing, missing_bin)
    elif _unit_root(X_binned, gradient, hessian, sample_indices, features, all_rows,
                    feature_bins, scratch, hist, tree):
        pass
    elif all_rows and sample_indices.shape[0] * features.shape[0] >= \
            tree.serial_histogram_updates:
        if quant is None:
            _zero_used_bins(hist, features, n_bins_non_missing, missing_bin)
            build_histograms_root(X_binned, gradient, hessian, features, hist,
                                  tree.n_threads)
            if hessian is None:
                unit_hessians(hist, features, n_bins_non_missing, missing_bin)
        else:
            _zero_used_bins(quant.pool[slot], features, n_bins_non_missing, missing_bin)
            build_histograms_root(X_binned, quant.packed, quant.packed, features,
                                  quant.pool[slot], tree.n_threads)
    else:
        _build_node_histogram(X_binned, sample_indices, gradient, hessian, features,
                              feature_bins, scratch, slot, tree, general, quant)


@kernel
def _subtract_used_bins(large, small, features, n_bins_non_missing, missing_bin):
    """large -= small over the bins ``_zero_used_bins`` zeroes."""
    for k in range(features.shape[0]):
        f = features[k]
        a = large[f]
        s = small[f]
        # by index, not over reshape(-1) views: reshape brings an error path with a
        # formatted message that cost seconds of compilation, for no faster loop
        for b in range(n_bins_non_missing[f]):
            for c in range(3):
                a[b, c] -= s[b, c]
        for c in range(3):
            a[missing_bin, c] -= s[missing_bin, c]


@kernel
def _build_node_histogram(X_binned, rows, gradient, hessian, features, feature_bins, scratch,
                          slot, tree, general, quant):
    """Zero histogram ``slot``'s used bins and build it from ``rows`` (serial below the
    threshold); with ``quant``, the packed integer histogram of its pool.

    ``general`` None: the caller knows no node reaches the threshold, and the
    parallel kernel is left out of this specialisation (see ``grow_tree``).
    """
    parallel = general is not None and (rows.shape[0] * features.shape[0]
                                         >= tree.serial_histogram_updates)
    if quant is None:
        hist = scratch.hist_pool[slot]
        _zero_used_bins(hist, features, feature_bins.n_bins_non_missing,
                        feature_bins.missing_bin)
        if parallel:
            build_histograms(X_binned, rows, gradient, hessian, features,
                             scratch.ordered_gradient, scratch.ordered_hessian, hist,
                             tree.n_threads)
        else:
            build_histograms_serial(X_binned, rows, gradient, hessian, features,
                                    scratch.ordered_gradient, scratch.ordered_hessian, hist)
        if hessian is None:
            unit_hessians(hist, features, feature_bins.n_bins_non_missing,
                          feature_bins.missing_bin)
    else:  # each row's packed pair stands for both its gradient and its hessian
        packed = quant.pool[slot]
        _zero_used_bins(packed, features, feature_bins.n_bins_non_missing,
                        feature_bins.missing_bin)
        if parallel:
            build_histograms(X_binned, rows, quant.packed, quant.packed, features,
                             quant.ordered, quant.ordered, packed, tree.n_threads)
        else:
            build_histograms_serial(X_binned, rows, quant.packed, quant.packed, features,
                                    quant.ordered, quant.ordered, packed)
