"""Chains of Walsh-Hadamard transforms and sign flips as one Pallas kernel (NVIDIA GPUs).

XLA runs ``fwht``'s stages as separate small matmuls, each a pass over memory, and SORF's
projection (three transforms with sign flips between them) as many more: on an H200 at
``N = 10^6, d = 1024`` in bfloat16 the FWHT reached 11 % of the memory bandwidth and SORF 3 %
(``experiments/benchmarks/fwht_bandwidth_benchmark.py``). Here a block of rows is read once,
goes through the whole chain in registers and shared memory, and is written once: on the same
H200 the FWHT took 1.49 ms (57 % of the nominal bandwidth, level with ``x * 2``) instead of
7.11, SORF's projection 5.5 ms instead of 26.2 (commit 1885518; SORF's three transforms leave
it bound by the kernel's matmuls and transposes rather than by memory).

For ``p = r1 * r2`` (Sylvester's ``H_p = H_r1 (x) H_r2``) a row viewed as an ``r1 x r2``
matrix ``X`` transforms to ``H_r1 X H_r2``: two small matmuls on the tensor cores with a
transpose between them. The ``+-1`` blocks are exact in bfloat16. A bfloat16 input enters the
first matmul exactly; every later operand is a float32 value ``a`` split as ``hi + lo`` with
``hi = bf16(a)``, ``lo = bf16(a - hi)``, two bfloat16 matmuls accumulated in float32, which
leaves a relative error of about ``2^-16`` per stage, far below the output's bfloat16
rounding. Float32 inputs use full float32 matmuls. The result is rounded once, to the input's
dtype, as ``fwht`` does.

The chain is a program over the letters ``H`` (an orthonormal transform) and ``s`` (multiply
by the next ``[p]`` vector, one per output block): SORF's projection is ``sHsHsH`` with its
diagonals ``D_3, D_2, D_1`` and its transpose ``HsHsHs`` with ``D_1, D_2, D_3``. The chain is
linear in the input, so its vector-Jacobian product is the transposed chain run by the same
kernel (``jax.custom_vjp``); the vectors are drawn constants, and no gradient flows to them.

The kernel is written for Pallas' Triton backend and runs only on NVIDIA GPUs. ``interpret``
runs the same kernel body through Pallas' interpreter on any backend (tests on CPU). Two
alternatives exist for the benchmark's sweep, not yet timed on a GPU: the ``'alternate'``
variant keeps a row transposed between consecutive transforms (one transpose per transform
instead of two; the signs are permuted to match), and ``precision='tf32'`` replaces each
``hi + lo`` pair by one TF32 matmul (~2^-11 relative per stage).
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
from jax import lax
from jax.experimental import pallas as pl

from jaxcl import _checks
from jaxcl.random_features import _fwht

# p -> (r1, r2): each factor >= 16, the smallest side of a tensor-core matmul in Triton.
_FACTORS = {256: (16, 16), 512: (16, 32), 1024: (32, 32), 2048: (32, 64), 4096: (64, 64)}
SUPPORTED_DIMS = tuple(_FACTORS)
SUPPORTED_DTYPES = (jnp.dtype(jnp.bfloat16), jnp.dtype(jnp.float32))
# Rows per program and warps per program: the fastest of the sweep in
# experiments/benchmarks/fwht_bandwidth_benchmark.py (--sweep) on an H200 at N = 10^6,
# p = 1024, bfloat16 (commit 1775e7a): 4 rows and 4 warps ran fwht in 1.47 ms, level with an
# elementwise pass (1.44 ms); 16 rows and 8 warps took 2.89 ms, 32 rows and 4 warps 4.97 ms.
# Again at 1885518: 4 rows and 4 warps 1.44 ms, the fastest of 1 to 16 rows and 2 to 8 warps.
DEFAULT_ROW_ELEMENTS = 4 * 1024  # rows per program: this many elements / p
DEFAULT_NUM_WARPS = 4
# Tests set this to run the public entry points (fwht, sorf_projection with
# implementation='pallas') through Pallas' interpreter on CPU.
_FORCE_INTERPRET = False


def _dot(lhs, rhs, float_operand, exact, precision):
    """``lhs @ rhs`` where one operand is a ``+-1`` bfloat16 block and the other
    (``float_operand``: 0 for ``lhs``, 1 for ``rhs``) a float32 value, accumulated in float32.

    ``precision``: ``'float32'`` (full float32 matmuls), ``'split'`` (the float32 operand as
    ``hi + lo``, two bfloat16 matmuls: ~2^-16 relative) or ``'tf32'`` (one TF32 matmul:
    ~2^-11). ``exact``: the float32 operand holds bfloat16 values (one bfloat16 matmul).
    """
    operands = [lhs, rhs]
    a = operands[float_operand]

    def dot(x):
        operands[float_operand] = x
        return jnp.dot(*operands, preferred_element_type=jnp.float32)

    if precision == "float32" or (precision == "tf32" and not exact):
        operands[1 - float_operand] = operands[1 - float_operand].astype(jnp.float32)
        highest = lax.Precision.HIGHEST if precision == "float32" else lax.Precision.DEFAULT
        return jnp.dot(*operands, precision=highest, preferred_element_type=jnp.float32)
    hi = a.astype(jnp.bfloat16)
    out = dot(hi)
    if exact:  # a holds bfloat16 values: hi == a
        return out
    return out + dot((a - hi.astype(jnp.float32)).astype(jnp.bfloat16))


def _transform(v, h1, h2, rows, r1, r2, exact, precision, variant, layout):
    """Unnormalised ``H_p`` applied to each row of the ``[rows, p]`` float32 block ``v``.

    ``layout`` is how a row's ``r1 x r2`` matrix ``X`` is laid out: ``'n'`` row-major, ``'t'``
    its transpose row-major. Returns the result and its layout: ``'n'`` except for the
    ``'alternate'`` variant, which flips it and so does one transpose instead of two.
    """
    p = r1 * r2
    if variant == "rowloop":  # one row at a time as an r1 x r2 matrix: H_r1 X H_r2
        a = _dot(v.reshape(r1, r2), h2, 0, exact, precision)
        return _dot(h1, a, 1, False, precision).reshape(1, p), "n"
    if layout == "n":
        a = _dot(v.reshape(rows * r1, r2), h2, 0, exact, precision)  # [(b, i), k]
        a = a.reshape(rows, r1, r2).transpose(0, 2, 1).reshape(rows * r2, r1)  # [(b, k), i]
        y = _dot(a, h1, 0, False, precision)  # [(b, k), l]: H_r1 X H_r2, transposed
        if variant == "alternate":
            return y.reshape(rows, p), "t"
        return y.reshape(rows, r2, r1).transpose(0, 2, 1).reshape(rows, p), "n"
    a = _dot(v.reshape(rows * r2, r1), h1, 0, exact, precision)  # [(b, j), l]
    a = a.reshape(rows, r2, r1).transpose(0, 2, 1).reshape(rows * r1, r2)  # [(b, l), j]
    return _dot(a, h2, 0, False, precision).reshape(rows, p), "n"  # [(b, l), k]


def _layouts(program: str, variant: str) -> tuple[str, ...]:
    """The layout of the data at each ``s`` of ``program``, then at its end."""
    layout, out = "n", []
    for op in program:
        if op == "s":
            out.append(layout)
        elif variant == "alternate":
            layout = "t" if layout == "n" else "n"
    return (*out, layout)


def _kernel(x_ref, h1_ref, h2_ref, *refs, program, rows, r1, r2, scale, variant, precision):
    *vector_refs, o_ref = refs
    if x_ref.dtype == jnp.float32:
        precision = "float32"
    h1, h2 = h1_ref[...], h2_ref[...]

    def chain(v):
        exact = precision != "float32"  # bf16 input: exact until the first transform
        vectors = iter(vector_refs)
        v, layout = v.astype(jnp.float32), "n"
        for op in program:
            if op == "s":  # [1, p] signs (permuted by the caller to the layout): exact
                v = v * next(vectors)[...]
            else:
                v, layout = _transform(v, h1, h2, rows, r1, r2, exact, precision, variant, layout)
                exact = False
        if layout == "t":
            v = v.reshape(rows, r2, r1).transpose(0, 2, 1).reshape(rows, r1 * r2)
        return (v * scale).astype(o_ref.dtype)

    if variant == "rowloop":

        def body(i, carry):
            o_ref[pl.ds(i, 1), :] = chain(x_ref[pl.ds(i, 1), :])
            return carry

        lax.fori_loop(0, x_ref.shape[0], body, 0)
    else:
        o_ref[...] = chain(x_ref[...])


def _compiler_params(num_warps: int):
    from jax.experimental.pallas import triton as pltriton

    params = getattr(pltriton, "CompilerParams", None) or pltriton.TritonCompilerParams
    return params(num_warps=num_warps, num_stages=1)


def _call(
    x,
    vectors,
    *,
    program,
    num_blocks,
    out_dtype,
    block_rows,
    num_warps,
    variant,
    precision,
    interpret,
):
    """Runs the chain on ``[rows, p]`` (or ``[rows, num_blocks * p]``, one block per vector
    block) ``x``; returns ``[rows, num_blocks * p]`` of ``out_dtype``."""
    p = vectors[0].shape[1] if vectors else x.shape[1]
    r1, r2 = _FACTORS[p]
    rows = x.shape[0]
    if rows == 0:  # no rows: nothing to launch
        return jnp.zeros((0, num_blocks * p), out_dtype)
    padded = -(-rows // block_rows) * block_rows
    if padded != rows:
        x = jnp.pad(x, [(0, padded - rows), (0, 0)])
    x_blocks = x.shape[1] // p  # 1: every output block reads the same input columns
    h1, h2 = (jnp.asarray(_fwht._sylvester(r), jnp.bfloat16) for r in (r1, r2))
    num_h = program.count("H")
    # a vector met in the transposed layout is permuted to it: element (l, k) at k * r1 + l
    vectors = tuple(
        v if layout == "n" else v.reshape(-1, r1, r2).transpose(0, 2, 1).reshape(v.shape)
        for v, layout in zip(vectors, _layouts(program, variant)[:-1], strict=True)
    )
    kernel = functools.partial(
        _kernel,
        program=program,
        rows=block_rows,
        r1=r1,
        r2=r2,
        scale=float(p ** (-num_h / 2)),
        variant=variant,
        precision=precision,
    )
    out = pl.pallas_call(
        kernel,
        out_shape=jax.ShapeDtypeStruct((padded, num_blocks * p), out_dtype),
        grid=(padded // block_rows, num_blocks),
        in_specs=[
            pl.BlockSpec(
                (block_rows, p), (lambda i, t: (i, t)) if x_blocks > 1 else (lambda i, t: (i, 0))
            ),
            pl.BlockSpec((r1, r1), lambda i, t: (0, 0)),
            pl.BlockSpec((r2, r2), lambda i, t: (0, 0)),
            *[pl.BlockSpec((1, p), lambda i, t: (t, 0)) for _ in vectors],
        ],
        out_specs=pl.BlockSpec((block_rows, p), lambda i, t: (i, t)),
        compiler_params=None if interpret else _compiler_params(num_warps),
        interpret=interpret,
    )(x, h1, h2, *vectors)
    return out[:rows] if padded != rows else out


def _transposed(program: str) -> str:
    return program[::-1]


@functools.partial(jax.custom_vjp, nondiff_argnums=(2, 3, 4))
def _chain(x, vectors, program, dtypes, options):
    """The chain with its vector-Jacobian product; ``dtypes`` = (input's, output's)."""
    return _call(
        x,
        vectors,
        program=program,
        num_blocks=_num_blocks(vectors),
        out_dtype=dtypes[1],
        **dict(options),
    )


def _num_blocks(vectors) -> int:
    return vectors[0].shape[0] if vectors else 1


def _chain_fwd(x, vectors, program, dtypes, options):
    return _chain(x, vectors, program, dtypes, options), vectors


def _chain_bwd(program, dtypes, options, vectors, g):
    num_blocks = _num_blocks(vectors)
    out = _call(
        g,
        tuple(reversed(vectors)),
        program=_transposed(program),
        num_blocks=num_blocks,
        out_dtype=jnp.float32 if num_blocks > 1 else dtypes[0],
        **dict(options),
    )
    if num_blocks > 1:  # every block read the same input: their gradients add up
        rows, p = g.shape[0], vectors[0].shape[1]
        out = out.reshape(rows, num_blocks, p).sum(axis=1).astype(dtypes[0])
    return out, tuple(jnp.zeros_like(v) for v in vectors)


_chain.defvjp(_chain_fwd, _chain_bwd)


VARIANTS = ("transpose", "alternate", "rowloop")
PRECISIONS = ("split", "tf32")


def _options(
    fn,
    x,
    *,
    block_rows: int | None = None,
    num_warps: int = DEFAULT_NUM_WARPS,
    variant: str = "transpose",
    precision: str = "split",
    interpret: bool = False,
):
    """The kernel's checked settings for ``[rows, p]`` ``x``, as a hashable tuple.

    ``block_rows`` (rows per program; default ``DEFAULT_ROW_ELEMENTS // p``) and
    ``num_warps`` are the launch settings; ``variant`` (``'transpose'``: two in-register
    transposes per transform; ``'alternate'``: one, the layout alternating between transforms;
    ``'rowloop'``: one row at a time, no transposes) and ``precision`` (of the bfloat16 path's
    float32 operands: ``'split'`` into two bfloat16 halves, or ``'tf32'``) are the kernel's
    alternatives, timed by the benchmark's sweep. ``interpret`` runs Pallas' interpreter.
    """
    p, dtype = x.shape[1], x.dtype
    interpret = interpret or _FORCE_INTERPRET
    if p not in _FACTORS:
        _checks.fail(
            fn,
            f"implementation='pallas' supports a (padded) last dimension in {SUPPORTED_DIMS}, "
            f"got {p}; use implementation='xla'",
        )
    if jnp.dtype(dtype) not in SUPPORTED_DTYPES:
        _checks.fail(
            fn,
            f"implementation='pallas' supports bfloat16 and float32 inputs, got {dtype}; "
            "use implementation='xla'",
        )
    if not interpret and jax.default_backend() != "gpu":
        _checks.fail(
            fn,
            "implementation='pallas' runs on NVIDIA GPUs only (a Pallas Triton kernel), but "
            f"JAX's default backend is {jax.default_backend()!r}; use implementation='xla'",
        )
    _checks.one_of(fn, "variant", variant, VARIANTS)
    _checks.one_of(fn, "precision", precision, PRECISIONS)
    if block_rows is None:
        block_rows = max(1, DEFAULT_ROW_ELEMENTS // p)
    if block_rows < 1 or block_rows & (block_rows - 1):
        _checks.fail(fn, f"`block_rows` must be a power of two >= 1, got {block_rows}")
    return (
        ("block_rows", block_rows),
        ("num_warps", num_warps),
        ("variant", variant),
        ("precision", precision),
        ("interpret", interpret),
    )


def fwht_rows(x: jax.Array, *, fn: str = "fwht", **settings) -> jax.Array:
    """Orthonormal FWHT of each row of a ``[rows, p]`` bfloat16/float32 array, one kernel;
    ``settings`` as ``_options``'s."""
    return _chain(x, (), "H", (x.dtype, x.dtype), _options(fn, x, **settings))


def sorf_chain(
    x: jax.Array, signs: jax.Array, *, out_dtype=None, fn: str = "sorf_projection", **settings
) -> jax.Array:
    """``H D_1 H D_2 H D_3 x`` for each of the ``num_blocks`` sign blocks, concatenated.

    Args:
      x: ``[rows, p]`` bfloat16/float32 rows (already zero-padded to ``p``).
      signs: ``[num_blocks, 3, p]`` ``+-1`` diagonals (``SORFParams.signs``), treated as
        constants.
      out_dtype: the result's dtype (default ``x``'s): float32 keeps the chain's float32
        result unrounded.
      settings: the kernel's, as ``_options``'s.

    Returns:
      ``[rows, num_blocks * p]``, each transform orthonormal.
    """
    options = _options(fn, x, **settings)
    signs = lax.stop_gradient(signs).astype(jnp.float32)
    vectors = (signs[:, 2], signs[:, 1], signs[:, 0])  # D_3 first
    out_dtype = jnp.dtype(x.dtype if out_dtype is None else out_dtype)
    return _chain(x, vectors, "sHsHsH", (x.dtype, out_dtype), options)


def sorf_projection_rows(z, params, temperature, *, out_dtype=None, **kwargs) -> jax.Array:
    """``sorf_projection`` of ``[rows, dim]`` ``z`` through ``sorf_chain``; the scaling is
    done in ``out_dtype`` (default ``z``'s)."""
    num_blocks, _, p = params.signs.shape
    v = sorf_chain(
        jnp.pad(z, [(0, 0), (0, p - params.dim)]), params.signs, out_dtype=out_dtype, **kwargs
    )
    if params.scales is not None:
        v = v * params.scales.reshape(1, num_blocks * p).astype(v.dtype)
    v = v[:, : params.num_features]
    return v * jnp.sqrt(p / jnp.asarray(temperature, v.dtype))
