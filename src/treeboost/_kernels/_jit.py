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
