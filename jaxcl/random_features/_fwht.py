"""Fast Walsh-Hadamard transform (FWHT) along the last axis.

The transform is computed as a short chain of small Hadamard matmuls instead of the textbook
radix-2 butterfly. Sylvester's construction factors ``H_d = H_r1 (x) H_r2 (x) ... (x) H_rk``
(Kronecker product, ``d = r1 * r2 * ... * rk``), so reshaping a row to ``[r1, ..., rk]`` and
multiplying each axis by its small ``+-1`` block gives the full transform. A radix-``r`` stage
does the work of ``log2(r)`` butterfly passes in one pass over memory, for ``2 r`` flops per
element that matmul units absorb easily; the butterfly's ``log2(d)`` passes over memory are
what made it ~5x slower than one elementwise pass.

On CPU the rows are additionally processed in tiles of about ``_TILE_BYTES``, so that every
stage of a tile runs out of cache; on GPU/TPU the untiled version is used (the whole batch is
one matmul per stage there, and a sequential loop over tiles would only serialise it).

The implementation is a composition of linear JAX primitives (``dot_general`` with constant
matrices, reshapes, ``lax.map``), so forward- and reverse-mode autodiff come for free: the
transpose of each stage is the same small symmetric matmul and the transpose of the tile loop
is the same loop run backwards, which keeps the backward pass as cheap as the forward one.
"""

from __future__ import annotations

import functools
import math

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from jaxcl import _blocks, _checks

# Fewest stages with radix <= 64: a stage costs about one pass over memory plus 2r flops per
# element, and XLA's small matmuls lose efficiency past r = 64 (and are worst at r = 2). The
# rule below matched or came within noise of the best factorization for every d in 128..8192
# (`python experiments/benchmarks/fwht_benchmark.py --sweep` times them all).
_LOG2_MAX_RADIX = 6

# Rows per tile are chosen so that a tile occupies about this many bytes: small enough that the
# k stages of one tile hit cache instead of DRAM, large enough that each matmul stays efficient
# (1-4 MiB were equivalent in the sweep; 0.5 MiB and untiled were slower).
_TILE_BYTES = 2 * 2**20


def _radices(d: int) -> tuple[int, ...]:
    """The Hadamard block sizes, one per stage, whose product is ``d`` (a power of two)."""
    log2_d = d.bit_length() - 1
    if log2_d <= 1:
        return (d,) if d > 1 else ()
    # At least two stages so that no dense d x d block is ever multiplied: the transform stays
    # O(d log d) per row, which callers such as SORF rely on.
    num_stages = max(2, -(-log2_d // _LOG2_MAX_RADIX))
    base, extra = divmod(log2_d, num_stages)
    return tuple(2 ** (base + (i < extra)) for i in range(num_stages))


@functools.cache
def _sylvester(r: int) -> np.ndarray:
    """Unnormalized Sylvester-order Hadamard matrix of size ``r`` (a power of two)."""
    h = np.ones((1, 1), dtype=np.float64)
    while h.shape[0] < r:
        h = np.block([[h, h], [h, -h]])
    h.setflags(write=False)  # shared through the cache
    return h


def _stages(x: jax.Array, radices: tuple[int, ...], scale: float) -> jax.Array:
    """Applies ``x @ H_d * scale`` to a ``[rows, d]`` array, one small matmul per radix."""
    rows, d = x.shape
    y = x.reshape((rows, *radices))
    for i, r in enumerate(radices):
        h = _sylvester(r) * (scale if i == len(radices) - 1 else 1.0)
        # Contracting the leading factor axis and appending the result as the last axis rotates
        # the factor axes by one; after all k stages they are back in their original order, so
        # no transpose is written out (the Stockham ordering of FFTs); XLA picks the layouts.
        # HIGHEST: the blocks are exact in any dtype, so this only stops GPU/TPU from rounding
        # the float32 operand to TF32/bfloat16; on those backends the stage is memory-bound and
        # the extra matmul passes are close to free.
        y = lax.dot_general(
            y,
            jnp.asarray(h, dtype=x.dtype),
            (((1,), (0,)), ((), ())),
            precision=lax.Precision.HIGHEST,
        )
    return y.reshape(rows, d)


def map_row_tiles(fn, x: jax.Array, row_bytes: int, tile_bytes: int = _TILE_BYTES) -> jax.Array:
    """``fn`` applied to ``[rows, ...]`` ``x`` one tile of rows at a time, on CPU only.

    ``fn`` must act on rows independently. A tile holds about ``tile_bytes`` when a row costs
    ``row_bytes``, so that every step of ``fn`` on one tile runs out of cache. On GPU/TPU ``fn``
    is applied to all rows at once: there it is one large kernel per step, and a sequential
    loop over tiles would only serialise it.
    """
    rows = x.shape[0]
    tile_rows = max(1, tile_bytes // max(1, row_bytes))
    if rows <= tile_rows:
        return fn(x)
    return lax.platform_dependent(
        x, cpu=functools.partial(_tiled, fn, tile_rows=tile_rows), default=fn
    )


def _tiled(fn, x: jax.Array, tile_rows: int) -> jax.Array:
    """``fn`` mapped over tiles of ``tile_rows`` rows (or an even divisor near it)."""
    rows = x.shape[0]
    divisor = _blocks.even_block(rows, tile_rows)
    if divisor is not None:
        tiles = x.reshape(rows // divisor, divisor, *x.shape[1:])
        out = lax.map(fn, tiles)
        return out.reshape(rows, *out.shape[2:])
    main = rows - rows % tile_rows
    head = lax.map(fn, x[:main].reshape(main // tile_rows, tile_rows, *x.shape[1:]))
    return jnp.concatenate([head.reshape(main, *head.shape[2:]), fn(x[main:])], axis=0)


def transform_rows(x: jax.Array, scale: float) -> jax.Array:
    """``x @ H_d * scale`` for a ``[rows, d]`` array, ``d`` a power of two, untiled."""
    return _stages(x, _radices(x.shape[1]), scale)


def fwht(x: jax.typing.ArrayLike, *, implementation: str = "xla") -> jax.Array:
    """Orthonormal fast Walsh-Hadamard transform along the last axis.

    Computes ``x @ H_d / sqrt(d)`` where ``H_d`` is the ``d x d`` Sylvester-order Hadamard
    matrix (``scipy.linalg.hadamard(d)``), in ``O(d log d)`` work per row and without ever
    forming ``H_d``. The transform is orthogonal and symmetric, hence its own inverse and its
    own transpose: ``fwht(fwht(x)) == x`` and the vector-Jacobian product of ``fwht`` applied
    to a cotangent ``g`` is ``fwht(g)``.

    Args:
      x: ``[..., d]`` floating array; ``d`` must be a power of two (``d = 1`` is the identity).
        Any leading batch shape. ``bfloat16``/``float16`` inputs are transformed in ``float32``
        and rounded once at the end.
      implementation: ``'xla'`` (default; any backend, any power-of-two ``d``) or
        ``'pallas'``: the whole transform as one fused kernel that reads and writes each row
        once (a Pallas Triton kernel: NVIDIA GPUs only; ``d`` in 256, 512, ..., 4096;
        bfloat16 or float32). Both compute the same transform; on one H200 at ``N = 10^6``,
        ``d = 1024``, bfloat16 the kernel took 1.49 ms against XLA's 7.11 ms, as fast as an
        elementwise pass (``experiments/benchmarks/fwht_bandwidth_benchmark.py``). Its
        vector-Jacobian product runs the same kernel; forward-mode autodiff (``jax.jvp``) is
        not defined for it. XLA does not partition the kernel: with sharded rows, call it
        inside ``shard_map`` (each device transforms its own rows).

    Returns:
      ``[..., d]`` array of the same dtype as ``x``.

    Raises:
      ValueError: if ``x`` is not a floating array of rank >= 1, ``d`` is not a power of two,
        or ``implementation`` is unknown or (``'pallas'``) cannot run this input here.

    Example:
      >>> import jax.numpy as jnp
      >>> from jaxcl.random_features import fwht
      >>> fwht(jnp.array([1.0, 0.0, 0.0, 0.0]))
      Array([0.5, 0.5, 0.5, 0.5], dtype=float32)

    References:
      Fino & Algazi, "Unified matrix treatment of the fast Walsh-Hadamard transform", IEEE
      Trans. Computers, 1976. Used by SORF in ESCo (Sec. 4.2, Eq. 12).
    """
    fn = "fwht"
    x = jnp.asarray(_checks.floating_array(fn, "x", x))
    if x.ndim == 0:
        _checks.fail(fn, "`x` must have rank >= 1 (transformed along its last axis), got a scalar")
    d = x.shape[-1]
    if d == 0 or d & (d - 1):
        _checks.fail(
            fn,
            f"`x` must have a power-of-two last dimension d (1, 2, 4, ...), got d={d} "
            f"(shape {tuple(x.shape)})",
        )
    _checks.one_of(fn, "implementation", implementation, ("xla", "pallas"))
    if d == 1 or x.size == 0:
        return x
    if implementation == "pallas":
        from jaxcl.random_features import _hadamard_pallas

        return _hadamard_pallas.fwht_rows(x.reshape(-1, d)).reshape(x.shape)
    compute_dtype = jnp.promote_types(x.dtype, jnp.float32)
    rows = x.size // d
    flat = x.reshape(rows, d).astype(compute_dtype)
    apply = functools.partial(_stages, radices=_radices(d), scale=1.0 / math.sqrt(d))
    out = map_row_tiles(apply, flat, row_bytes=d * flat.dtype.itemsize)
    return out.astype(x.dtype).reshape(x.shape)
