"""Vector steps of two loops the compiler leaves scalar, written as LLVM IR
(Numba's ``intrinsic``).

``split16``, the partition: where a row is written depends on how many rows
went left before it, so the loop (load the index, gather the row's bin,
compare, write the index to both sides, advance one) runs a row at a time,
about 1.3-2 ns a row, a sixth of a regression tree's time on the thread every
other one waits for. The vector step loads 16 indices, gathers their bins (4
bytes each, the bin the lowest), compares them as a mask and compress-stores
the left rows and the right rows, each packed in order: 0.6-0.8 ns a row.

``bins8``, the binning: the scalar binary search over a feature's bin edges is
branchless as written, but the compiler turns its select into a branch, which
random values mispredict at every halving (~55 ns a value, ~5% of a 300-tree
regression fit on 400,000 rows). The vector step searches 8 (or 4) values at
once, each halving one gather of the edges compared (4 values with AVX2 on a
Zen 3: 16.5 ns a value against 58).

The IR names generic LLVM intrinsics (``llvm.masked.gather``,
``llvm.masked.compressstore``, ``llvm.ctpop``); where the CPU has no such
instructions LLVM writes them out as scalar code, correct but no faster. So
the steps follow the CPU Numba generates code for, not the CPU this process
runs on (``target_features``: ``NUMBA_CPU_NAME`` and ``NUMBA_CPU_FEATURES``
where set, as Numba reads them, else the host's): with AVX-512 (``avx512f``,
an x86-64-v4 build or such a host) the partition takes 16 rows a step and the
bin search 8 values (512-bit vectors); with AVX2 only (x86-64-v3) the bin
search takes 4 values (256-bit gathers) and the partition stays scalar, since
AVX2 has no compress-store; with neither, both loops stay scalar. Kernels
compiled ahead of time for a portable CPU (``treeboost._precompile``) thus get
the paths of that CPU. With ``NUMBA_DISABLE_JIT=1`` each step is a Python twin
doing the same.
"""

import numpy as np
from llvmlite import ir
from numba import config, types
from numba.core import cgutils
from numba.core.codegen import get_host_cpu_features
from numba.extending import intrinsic

from ._shipped import TARGET_FEATURES, enabled_features


def target_features(cpu_name, feature_string, host_feature_string):
    """The CPU features (LLVM names) of the code Numba generates, as Numba decides them.

    Parameters
    ----------
    cpu_name : str or None
        ``NUMBA_CPU_NAME`` (``numba.config.CPU_NAME``); None or ``"host"``: this host's CPU.
    feature_string : str or None
        ``NUMBA_CPU_FEATURES`` (``numba.config.CPU_FEATURES``), ``+avx2,-avx512f,...``;
        None: the host's, as Numba then takes them.
    host_feature_string : callable
        Returns the host's feature string (Numba's ``get_host_cpu_features``, which
        applies ``NUMBA_ENABLE_AVX=0`` and is empty where LLVM cannot tell).

    Returns
    -------
    set of str
        The features the code may use. A named CPU brings the features of its
        level (``_shipped.TARGET_FEATURES``: x86-64-v3, -v4, ...; none for a name
        not listed there, so no vector step is assumed), changed by the feature
        string's ``+`` and ``-`` entries.
    """
    if feature_string is None:
        feature_string = host_feature_string()
    host = cpu_name in (None, "", "host")
    features = set() if host else set(TARGET_FEATURES.get(cpu_name, ()))
    for entry in feature_string.split(","):
        if entry.startswith("-"):
            features.discard(entry[1:])
    return features | enabled_features(feature_string)


def vector_widths(features):
    """Lanes of the partition's and the bin search's vector steps for ``features``.

    Parameters
    ----------
    features : set of str
        The target's CPU features (``target_features``).

    Returns
    -------
    (int, int)
        Rows per partition step (16, or 0: the scalar loop) and values per bin
        search step (8, 4, or 0).
    """
    if "avx512f" in features:  # 512-bit gathers and compress-stores
        return 16, 8
    if "avx2" in features:  # 256-bit gathers; a compress-store would be scalar code
        return 0, 4
    return 0, 0


_PARTITION_LANES, _SEARCH_LANES = vector_widths(
    target_features(config.CPU_NAME, config.CPU_FEATURES, get_host_cpu_features))

#: whether the kernels take the rows 16 at a time (partition.partition_rows_serial)
VECTOR_PARTITION = _PARTITION_LANES > 0
#: whether map_to_bins searches the bins of SEARCH_WIDTH values at a time
VECTOR_BINS = _SEARCH_LANES > 0

#: rows per vector step
WIDTH = 16


def _split16_python(rows, i, col, bin_threshold, missing_bin, missing_left, left, nl,
                    right, nr):
    """``split16`` in Python (``NUMBA_DISABLE_JIT=1``)."""
    block = rows[i:i + WIDTH].copy()  # left may be rows itself: read before writing
    if int(block.max()) > col.shape[0] - 4:
        return -1
    bins = col[block]
    go = np.where(bins == missing_bin, bool(missing_left), bins <= bin_threshold)
    c = int(go.sum())
    left[nl:nl + c] = block[go]
    right[nr:nr + WIDTH - c] = block[~go]
    return c


def _function(builder, name, return_type, argument_types):
    """The module's declaration of intrinsic ``name`` (declared once per module)."""
    existing = builder.module.globals.get(name)
    if existing is not None:
        return existing
    return ir.Function(builder.module, ir.FunctionType(return_type, argument_types),
                       name=name)


def _splat(builder, value, vector_type):
    """A vector of copies of the i64 ``value``, as ``vector_type``'s elements."""
    i32 = ir.IntType(32)
    element = vector_type.element
    if element.width < 64:
        value = builder.trunc(value, element)
    v = builder.insert_element(ir.Constant(vector_type, ir.Undefined), value,
                               ir.Constant(i32, 0))
    lanes = vector_type.count
    return builder.shuffle_vector(v, ir.Constant(vector_type, ir.Undefined),
                                  ir.Constant(ir.VectorType(i32, lanes), [0] * lanes))


@intrinsic
def _split16_ir(typingctx, rows, i, col, bin_threshold, missing_bin, missing_left, left, nl,
                right, nr):
    """Split rows[i:i + 16] (uint32 row indices; bins in uint8 ``col``) by a numerical
    split: those going left to left[nl:], the others to right[nr:], each in their order.
    Return how many went left, or -1, writing nothing, where a row is among the last 3
    of ``col`` (the gather reads 4 bytes from a row's bin on)."""
    sig = types.int64(rows, i, col, bin_threshold, missing_bin, missing_left, left, nl,
                      right, nr)

    def codegen(context, builder, signature, args):
        argtypes = signature.args
        rows_a, col_a, left_a, right_a = (
            context.make_array(argtypes[k])(context, builder, args[k]) for k in (0, 2, 6, 8))
        i64 = ir.IntType(64)
        i32 = ir.IntType(32)
        (i_, threshold, missing, missing_left_, nl_, nr_) = (
            context.cast(builder, args[k], argtypes[k], types.int64) for k in (1, 3, 4, 5, 7, 9))
        v32 = ir.VectorType(i32, WIDTH)
        v64 = ir.VectorType(i64, WIDTH)
        mask_type = ir.VectorType(ir.IntType(1), WIDTH)
        pointers_type = ir.VectorType(i32.as_pointer(), WIDTH)
        index = builder.load(builder.bitcast(builder.gep(rows_a.data, [i_]),
                                             v32.as_pointer()), align=4)
        n_col = cgutils.unpack_tuple(builder, col_a.shape, 1)[0]
        too_far = builder.icmp_unsigned(">", builder.zext(index, v64),
                                        _splat(builder, builder.sub(n_col, ir.Constant(i64, 4)),
                                               v64))
        any_too_far = builder.icmp_unsigned("!=", builder.bitcast(too_far, ir.IntType(WIDTH)),
                                            ir.Constant(ir.IntType(WIDTH), 0))
        result = builder.alloca(i64)
        builder.store(ir.Constant(i64, -1), result)
        with builder.if_then(builder.not_(any_too_far), likely=True):
            base = _splat(builder, builder.ptrtoint(col_a.data, i64), v64)
            pointers = builder.inttoptr(builder.add(base, builder.zext(index, v64)),
                                        pointers_type)
            gather = _function(builder, "llvm.masked.gather.v16i32.v16p0", v32,
                               [pointers_type, i32, mask_type, v32])
            words = builder.call(gather, [pointers, ir.Constant(i32, 1),
                                          ir.Constant(mask_type, [1] * WIDTH),
                                          ir.Constant(v32, [0] * WIDTH)])
            bins = builder.and_(words, ir.Constant(v32, [255] * WIDTH))
            below = builder.icmp_unsigned("<=", bins, _splat(builder, threshold, v32))
            is_missing = builder.icmp_unsigned("==", bins, _splat(builder, missing, v32))
            missing_go = builder.icmp_unsigned("!=", _splat(builder, missing_left_, v32),
                                               ir.Constant(v32, [0] * WIDTH))
            go = builder.select(is_missing, missing_go, below)
            stays = builder.xor(go, ir.Constant(mask_type, [1] * WIDTH))
            store = _function(builder, "llvm.masked.compressstore.v16i32", ir.VoidType(),
                              [v32, i32.as_pointer(), mask_type])
            builder.call(store, [index, builder.gep(left_a.data, [nl_]), go])
            builder.call(store, [index, builder.gep(right_a.data, [nr_]), stays])
            popcount = _function(builder, "llvm.ctpop.i64", i64, [i64])
            bits = builder.zext(builder.bitcast(go, ir.IntType(WIDTH)), i64)
            builder.store(builder.call(popcount, [bits]), result)
        return builder.load(result)

    return sig, codegen


split16 = _split16_python if config.DISABLE_JIT else _split16_ir


#: values per step of the bin search: eight float64 lanes (512-bit) or four (256-bit)
SEARCH_WIDTH = _SEARCH_LANES or 8


def _bins8_python(X, i, f, edges, m, missing_bin, out):
    """``bins8`` in Python (``NUMBA_DISABLE_JIT=1``)."""
    x = X[i:i + SEARCH_WIDTH, f].astype(np.float64)
    b = np.searchsorted(edges[:m], x, side="left")  # edges below x: the first b, x <= edges[b]
    out[i:i + SEARCH_WIDTH] = np.where(np.isnan(x), missing_bin, b)


@intrinsic
def _bins8_ir(typingctx, X, i, f, edges, m, missing_bin, out):
    """out[i:i + w] = the bins of X[i:i + w, f] (w = SEARCH_WIDTH) on a numerical
    feature's sorted ``edges[:m]`` (m >= 1): the first b with x <= edges[b] (m where
    none), ``missing_bin`` for NaN.

    The binary search of w values at once: each halving gathers the w
    edges compared and adds the half where the edge is below. The loop's scalar
    twin (binning._count_below) is branchless too, but the compiler turns its
    select into a branch, which random values mispredict: ~55 ns a value.
    """
    sig = types.void(X, i, f, edges, m, missing_bin, out)

    def codegen(context, builder, signature, args):
        argtypes = signature.args
        X_a = context.make_array(argtypes[0])(context, builder, args[0])
        edges_a = context.make_array(argtypes[3])(context, builder, args[3])
        out_a = context.make_array(argtypes[6])(context, builder, args[6])
        i64 = ir.IntType(64)
        i32 = ir.IntType(32)
        f64 = ir.DoubleType()
        lanes = SEARCH_WIDTH
        v64 = ir.VectorType(i64, lanes)
        vf64 = ir.VectorType(f64, lanes)
        mask_type = ir.VectorType(ir.IntType(1), lanes)
        all_lanes = ir.Constant(mask_type, [1] * lanes)
        i_, f_, m_, missing = (context.cast(builder, args[k], argtypes[k], types.int64)
                               for k in (1, 2, 4, 5))
        stride0, stride1 = cgutils.unpack_tuple(builder, X_a.strides, 2)
        steps = ir.Constant(v64, list(range(lanes)))
        # the values: X[i + k, f], k < lanes, at data + (i + k) stride0 + f stride1
        x_first = builder.add(builder.ptrtoint(X_a.data, i64),
                              builder.add(builder.mul(i_, stride0), builder.mul(f_, stride1)))
        x_addresses = builder.add(_splat(builder, x_first, v64),
                                  builder.mul(steps, _splat(builder, stride0, v64)))
        x_element = context.get_data_type(argtypes[0].dtype)
        vx = ir.VectorType(x_element, lanes)
        x_pointers_type = ir.VectorType(x_element.as_pointer(), lanes)
        x_gather = _function(builder, f"llvm.masked.gather.v{lanes}{_suffix(x_element)}.v{lanes}p0",
                             vx, [x_pointers_type, i32, mask_type, vx])
        x = builder.call(x_gather, [builder.inttoptr(x_addresses, x_pointers_type),
                                    ir.Constant(i32, 1), all_lanes, ir.Constant(vx, None)])
        if x_element != f64:
            x = builder.fpext(x, vf64)
        e_pointers_type = ir.VectorType(f64.as_pointer(), lanes)
        e_gather = _function(builder, f"llvm.masked.gather.v{lanes}f64.v{lanes}p0", vf64,
                             [e_pointers_type, i32, mask_type, vf64])
        edges_base = _splat(builder, builder.ptrtoint(edges_a.data, i64), v64)
        edge_bytes = ir.Constant(v64, [8] * lanes)

        def edge_at(index):  # edges[index], index a vector of i64 (edges is contiguous)
            pointers = builder.inttoptr(builder.add(edges_base, builder.mul(index, edge_bytes)),
                                        e_pointers_type)
            return builder.call(e_gather, [pointers, ir.Constant(i32, 8), all_lanes,
                                           ir.Constant(vf64, None)])

        # while n > 1: half = n >> 1; base += half where edges[base + half - 1] < x; n -= half
        entry = builder.block
        loop = builder.append_basic_block("search")
        body = builder.append_basic_block("halve")
        done = builder.append_basic_block("found")
        builder.branch(loop)
        builder.position_at_end(loop)
        n = builder.phi(i64)
        base = builder.phi(v64)
        n.add_incoming(m_, entry)
        base.add_incoming(ir.Constant(v64, [0] * lanes), entry)
        builder.cbranch(builder.icmp_signed(">", n, ir.Constant(i64, 1)), body, done)
        builder.position_at_end(body)
        half = builder.lshr(n, ir.Constant(i64, 1))
        half_v = _splat(builder, half, v64)
        below = builder.fcmp_ordered("<", edge_at(builder.sub(builder.add(base, half_v),
                                                              ir.Constant(v64, [1] * lanes))), x)
        next_base = builder.add(base, builder.select(below, half_v, ir.Constant(v64, [0] * lanes)))
        next_n = builder.sub(n, half)
        n.add_incoming(next_n, body)
        base.add_incoming(next_base, body)
        builder.branch(loop)
        builder.position_at_end(done)
        last_below = builder.fcmp_ordered("<", edge_at(base), x)
        found = builder.add(base, builder.zext(last_below, v64))
        is_nan = builder.fcmp_unordered("uno", x, x)
        bins = builder.select(is_nan, _splat(builder, missing, v64), found)
        out_pointer = builder.bitcast(builder.gep(out_a.data, [i_]),
                                      ir.VectorType(ir.IntType(8), lanes).as_pointer())
        builder.store(builder.trunc(bins, ir.VectorType(ir.IntType(8), lanes)), out_pointer,
                      align=1)
        return context.get_dummy_value()

    return sig, codegen


def _suffix(element):
    """LLVM's type suffix of an intrinsic over ``element`` (f64, f32)."""
    return "f64" if isinstance(element, ir.DoubleType) else "f32"


bins8 = _bins8_python if config.DISABLE_JIT else _bins8_ir
