"""Kernel arguments grouped by concern: one typed record (a named tuple) each.

The tree kernels took 33-38 positional arguments, so adding one tree
parameter touched every call site in six files. A record groups what
travels together; Numba types a named tuple by its fields (one signature as
long as the fields' types are fixed, which the Python side ensures with
``float()``/``int()``), passes it between kernels by value, and caches
kernels that take one. A new parameter is a field here, its value where the
grower builds the record, and its use in the kernel.
"""

from collections import namedtuple

#: what a node's split search and partition need to know of the features:
#: n_bins_non_missing int32 (n_features,), is_categorical uint8 (n_features,),
#: missing_bin int (the bin of missing values and unseen categories)
FeatureBins = namedtuple("FeatureBins", ["n_bins_non_missing", "is_categorical",
                                         "missing_bin"])

#: split-search parameters (floats, the two ints of the categorical scan, then
#: hessian_counts: 1.0 where ``min_samples_leaf`` bounds a child's hessian-estimated
#: count (``leaf_count="hessian"``), 0.0 (the default) where it bounds its rows; then
#: max_cat_ordered: a categorical feature of at most this many categories also splits
#: between its categories in their code order (``max_cat_ordered``; 0.0, the record's
#: default, never)
SplitParams = namedtuple("SplitParams", [
    "reg_lambda", "reg_alpha", "min_samples_leaf", "min_child_weight", "cat_l2",
    "cat_smooth", "max_cat_threshold", "max_cat_to_onehot", "hessian_counts",
    "max_cat_ordered"], defaults=(0.0, 0.0))

#: tree shape, and the node sizes from which the parallel kernels are used:
#: max_leaf_nodes >= 2; max_depth < 0 for none; min_split_gain float;
#: serial_partition_rows, serial_histogram_updates ints; n_threads int, the fit's
#: Numba threads (the parallel histogram passes give each one share of the features)
TreeParams = namedtuple("TreeParams", [
    "max_leaf_nodes", "max_depth", "min_split_gain", "serial_partition_rows",
    "serial_histogram_updates", "n_threads"])

#: a grower's scratch buffers, reused tree after tree:
#: left_buffer, right_buffer uint32 (>= n_rows,); ordered_gradient, ordered_hessian
#: float32 (>= n_rows,); split_out float64 (2, n_features, N_SPLIT_COLUMNS) and
#: split_bitsets uint32 (2, n_features, BITSET_WORDS), a node's split search results
#: (two nodes' where siblings are searched side by side); hist_pool float64
#: (max_leaf_nodes, n_features, n_bins, 3); root_gradient, root_counts float64
#: (n_features, n_bins): a unit-hessian root's gradient sums, built each tree, and
#: its row counts, counted once (the same rows every tree), or both (0, 0) where
#: the counts are not kept (TreeGrower.count_root_rows)
Scratch = namedtuple("Scratch", [
    "left_buffer", "right_buffer", "ordered_gradient", "ordered_hessian", "split_out",
    "split_bitsets", "hist_pool", "root_gradient", "root_counts"])

#: a stage's shared root histograms of every output (histogram.build_root_histograms_multi):
#: multi float64 (n_features, n_bins, 2 n_outputs), counts float64 (n_features, n_bins),
#: output: this tree's output in them, or -1 for a tree that builds its own root
RootHistograms = namedtuple("RootHistograms", ["multi", "counts", "output"])

#: the per-node state of a tree being grown (arrays indexed by node id), built
#: inside grow_tree and handed to the helpers that read and update it;
#: constrained: a NodeState, or None for a tree without constraints
Nodes = namedtuple("Nodes", [
    "depth", "count", "sum_g", "sum_h", "slot", "split_gain", "split_feature", "split_bin",
    "split_ml", "split_gl", "split_hl", "split_cl", "split_bitset", "candidate",
    "constrained"])

#: monotone and interaction constraints (grow_tree's ``constraints``; None for none, which
#: compiles them out): monotone int8 (n_features,) -1/0/+1; sets uint8 (n_sets, n_features),
#: 1 where a feature belongs to an interaction set (one set of every feature when there are
#: no interaction constraints); method int (0: LightGBM's "basic", 1: "intermediate")
Constraints = namedtuple("Constraints", ["monotone", "sets", "method"])

#: the constrained per-node state (``Nodes.constrained``, None without constraints):
#: lower, upper float64 (capacity,), bounds of the node's value; sets uint8
#: (capacity, n_sets), the interaction sets still open to the node's path;
#: features int32 (n_features,), scratch of a node's allowed features; for the
#: "intermediate" method: parent int64 (capacity,); changed int64 (capacity + 1,), the
#: leaves whose bounds the last split tightened (count first); stack int64 (capacity,)
NodeState = namedtuple("NodeState", ["lower", "upper", "sets", "features", "parent",
                                     "changed", "stack"])

#: what a constrained node's split search needs (splitting.find_best_splits ``bounds``):
#: lower, upper float, the node's value bounds; monotone int8 (n_features,)
NodeBounds = namedtuple("NodeBounds", ["lower", "upper", "monotone"])

#: a tree being grown, besides its per-node growth state (Nodes): the node arrays
#: grow_tree returns (indexed by node id, 2 max_leaf_nodes - 1 of them), each node's
#: slice of sample_indices, the stack of free histogram slots, and the counters
#: (n_nodes, n_leaves, n_free, phase, pending node) in one int64 array, which a
#: resumed growth updates
TreeState = namedtuple("TreeState", [
    "feature", "bin_threshold", "missing_left", "node_categorical", "cat_bitset", "left",
    "right", "gain", "start", "stop", "free_slots", "counters"])

#: binned sparse data (binning.SparseBinned) and its scratch: col_ptr int64
#: (n_features + 1,), rows uint32, bins uint8, zero_bin uint8 (n_features,); mark
#: uint8 (n_samples,) zeros (row -> node slot while a histogram pass runs);
#: root_sums float64 (2,): the tree's gradient and hessian sums over its rows,
#: written by the caller (NumPy's pairwise sums, as format-1 models were trained)
SparseBins = namedtuple("SparseBins", ["col_ptr", "rows", "bins", "zero_bin", "mark",
                                       "root_sums"])

#: per-node column sampling (colsample_bynode): seed uint64 (1,), this tree's draw;
#: k int64 (1,), the features each node may use (ALL_FEATURES without colsample_bynode:
#: the record is passed either way, so that both share one compiled grower); mark
#: uint8 (n_features,) zeros and chosen int32 (n_features,) scratch
NodeColumns = namedtuple("NodeColumns", ["seed", "k", "mark", "chosen"])
#: NodeColumns.k when every node may use all of the tree's features
ALL_FEATURES = 2**62

#: a tree grown step by step (grow_tree's ``resume``): its TreeState and Nodes
Resume = namedtuple("Resume", ["state", "nodes"])

#: quantised gradients (use_quantized_grad; grow_tree's ``quant``, None for float
#: histograms): packed int64 (n_samples,), each row's quantised (g, h) pair
#: (quantize.quantize_gradients); ordered int64 (n_samples,) scratch; pool int64
#: (n_slots, n_features, n_bins), the packed histograms beside Scratch.hist_pool, which
#: holds their dequantised sums for the split search; scales float64 (2,): s_g, s_h
QuantizedGradients = namedtuple("QuantizedGradients", ["packed", "ordered", "pool", "scales"])

#: one tree for several outputs (multi_strategy="multi_output_tree"; grow_tree's ``multi``,
#: None for a single output, which compiles it out): gradient float32 (n_outputs,
#: n_samples), every output's gradients (output 0's also grow_tree's ``gradient``); sum_g
#: float64 (capacity, n_outputs), each node's gradient sum per output; split_gl float64
#: (capacity, n_outputs), each candidate's left child's sums; split_left float64
#: (n_features, n_outputs) and ordered float32 (n_samples, n_outputs + 1), scratch of a
#: node's split search and histogram. Histograms have n_outputs + 2 channels: output 0's
#: gradient, the hessian (the outputs share it: every output's is the row weight), the
#: count, then the gradients of outputs 1 to n_outputs - 1 (``multi_output.channel``)
MultiOutput = namedtuple("MultiOutput", ["gradient", "sum_g", "split_gl", "split_left",
                                         "ordered"])
