"""The project's jit decorators, so compile options are set in one place.

``fastmath`` stays off: models are compared bit for bit across thread counts
and across save/load round trips. ``NUMBA_DISABLE_JIT=1`` turns every kernel
into plain Python (slow, but traceable) for debugging and coverage.
"""

from numba import njit

#: serial kernel, cached on disk, releasing the GIL
kernel = njit(cache=True, nogil=True, error_model="numpy")
#: kernel with ``prange`` loops, run on Numba's thread pool
parallel_kernel = njit(cache=True, nogil=True, parallel=True, error_model="numpy")
#: small helper inlined into the kernels that call it
inline = njit(inline="always", cache=True, nogil=True, error_model="numpy")


@inline
def bin_goes_left(b, is_categorical, bin_threshold, missing_left, missing_bin, bitset):
    """Whether a row in bin ``b`` goes to the left child of a split.

    Numerical split: bins <= ``bin_threshold`` go left, the missing bin goes
    where ``missing_left`` says. Categorical split: bins whose bit is set in
    ``bitset`` (8 uint32 words) go left; the missing bin, which also holds
    categories unseen in training, has bit 255 like any other category.
    """
    if is_categorical:
        return (bitset[b >> 5] >> (b & 31)) & 1 == 1
    if b == missing_bin:
        return missing_left
    return b <= bin_threshold
