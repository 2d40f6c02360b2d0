"""The CPU's histogram step as a kernel of its own, for a grower that hands it out.

``grow_tree`` builds every histogram inside itself (the default fit: no round trip to
Python per node). A growth resumed with its ``EXTERNAL`` counter set stops before each
dense histogram instead, and the caller's provider builds it
(``treeboost.histogram_provider``); ``build_histogram`` is the CPU provider's build:
the very kernels and choices ``grow_tree`` makes, so a tree grown so is the in-kernel
one bit for bit.

The root's histogram has five dense sources in ``grow_tree`` (the sparse pass is the
sixth, left inside the kernel): a stage's shared root pass (``root.output``), the unit
hessians' kept row counts (``_unit_root``), the parallel pass over every row, and the
node builder (serial or parallel by size): ``node_histogram.dense_root_histogram``,
which ``grow_tree`` calls too.
"""

from ._jit import kernel
from .node_histogram import _build_node_histogram, dense_root_histogram
from .records import FeatureBins, RootHistograms, Scratch, TreeParams


@kernel
def build_histogram(X_binned, gradient, hessian, sample_indices, features, all_rows,
                    feature_bins_t, tree_t, scratch_t, root_t, general, quant, rows, slot,
                    is_root):
    """Build histogram ``slot`` of the node over ``rows`` as ``grow_tree`` would.

    The arguments up to ``quant`` are ``grow_tree``'s (its split record left out);
    ``rows``: the node's slice of ``sample_indices`` (the root: all of it); ``is_root``:
    whether the node is the root, whose sources differ. Writes ``scratch.hist_pool[slot]``
    (float sums) or, with ``quant``, ``quant.pool[slot]`` (packed integer sums, unpacked
    by ``grow_tree`` on resuming), over the used bins.
    """
    feature_bins = FeatureBins(*feature_bins_t)
    tree = TreeParams(*tree_t)
    scratch = Scratch(*scratch_t)
    root = RootHistograms(*root_t)
    if is_root:
        dense_root_histogram(X_binned, gradient, hessian, sample_indices, features,
                             all_rows, feature_bins, scratch, root, tree, general, quant,
                             slot)
    else:
        _build_node_histogram(X_binned, rows, gradient, hessian, features, feature_bins,
                              scratch, slot, tree, general, quant)
