"""A vector step of the partition, written as LLVM IR (Numba's ``intrinsic``).

Splitting a node's rows is a loop the compiler cannot vectorise: where a row
is written depends on how many rows went left before it. Per row it loads the
index, gathers the row's bin, compares, writes the index to both sides and
advances one: about 1.3-2 ns a row, a sixth of a regression tree's time on
the thread every other one waits for. ``split16`` does 16 rows at a time with
the vector instructions made for it: one load of the indices, one gather of
their bins (4 bytes each, the bin the lowest), the comparisons as a mask, and
two compress-stores that write the left rows and the right rows each packed
in order: 0.7 ns a row (400,000 rows of a 20-feature matrix; the loop: 1.25).

The IR names generic LLVM intrinsics (``llvm.masked.gather``,
``llvm.masked.compressstore``, ``llvm.ctpop``); where the CPU has no such
instructions LLVM writes them out as scalar code, correct but no faster, so
``VECTOR_PARTITION`` turns the vector step on only where the host CPU has
AVX-512 (``avx512f``) and Numba compiles for it (no ``NUMBA_CPU_NAME``).
With ``NUMBA_DISABLE_JIT=1`` ``split16`` is the Python function below, doing
the same.
"""

import llvmlite.binding as llvm
import numpy as np
from llvmlite import ir
from numba import config, types
from numba.core import cgutils
from numba.extending import intrinsic

#: whether the kernels take the rows 16 at a time (partition.partition_rows_serial)
VECTOR_PARTITION = (bool(llvm.get_host_cpu_features().get("avx512f", False))
                    and config.CPU_NAME in (None, "host"))  # not for a generic build

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
    """A vector of ``WIDTH`` copies of the i64 ``value``, as ``vector_type``'s elements."""
    i32 = ir.IntType(32)
    element = vector_type.element
    if element.width < 64:
        value = builder.trunc(value, element)
    v = builder.insert_element(ir.Constant(vector_type, ir.Undefined), value,
                               ir.Constant(i32, 0))
    return builder.shuffle_vector(v, ir.Constant(vector_type, ir.Undefined),
                                  ir.Constant(ir.VectorType(i32, WIDTH), [0] * WIDTH))


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
