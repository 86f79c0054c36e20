"""Structured orthogonal random features (SORF): Gaussian-kernel features through the FWHT."""

from __future__ import annotations

import dataclasses
import functools
import math

import jax
import jax.numpy as jnp

from jaxcl import _checks
from jaxcl.random_features import _fwht
from jaxcl.random_features._common import check_draw, cos_sin, feature_map

# Up to this padded dimension the projection is one dense matmul with W_SORF, built each call
# from the identity (three transforms of a [dim, D] array); above it, the FWHT chain runs tile
# by tile. Both compute the same W_SORF z. At small p a dense matmul does about as many flops
# as the chain's small Hadamard matmuls and runs them more efficiently. Measured on 2 CPU cores
# (4096 rows, D = max(1024, p), projection + cos/sin sums, forward + backward; `python
# experiments/benchmarks/sorf_speed_benchmark.py`): dense ran level with RFF up to p = 256,
# where the chain was 5-25% slower; at p = 512 all three tied; at p = 1024 the chain took 0.72x
# RFF's time and at 2048 0.45x, while dense stayed level with RFF.
_DENSE_MAX_DIM = 256


@functools.partial(
    jax.tree_util.register_dataclass,
    data_fields=["signs", "scales"],
    meta_fields=["dim", "num_features"],
)
@dataclasses.dataclass(frozen=True)
class SORFParams:
    """Structured orthogonal random feature signs.

    Attributes:
      signs: ``[num_blocks, 3, padded_dim]`` float32 Rademacher (+-1) diagonals ``D_1, D_2, D_3``
        of each ``padded_dim x padded_dim`` block; ``padded_dim`` is the next power of two
        ``>= dim`` and ``num_blocks = ceil(num_features / padded_dim)``.
      dim: input dimension (static).
      num_features: number of projections kept (static); surplus block columns are dropped.
      scales: None (ESCo's SORF: every row of norm ``sqrt(padded_dim)``) or
        ``[num_blocks, padded_dim]`` float32 factors ``r / sqrt(padded_dim)`` with ``r``
        chi-distributed with ``padded_dim`` degrees of freedom, one per row (``norms='chi'``).
    """

    signs: jax.Array
    dim: int
    num_features: int
    scales: jax.Array | None = None


def draw_sorf(key: jax.Array, dim: int, num_features: int, *, norms: str = "fixed") -> SORFParams:
    """Draws the Rademacher diagonals of structured orthogonal random features.

    Args:
      key: PRNG key (``jax.random.key``).
      dim: input dimension ``d``; inputs are zero-padded to ``padded_dim``, the next power of two.
      num_features: number of projections ``D``; ``ceil(D / padded_dim)`` blocks are drawn.
      norms: ``'fixed'`` (ESCo's Eq. 12: every row has norm ``sqrt(padded_dim)``) or
        ``'chi'``: each row is rescaled to the norm of a ``padded_dim``-dimensional Gaussian
        vector (chi-distributed), as orthogonal random features do (Yu et al., ORF). Fixed
        norms bias the kernel estimate by ``O(1 / d)`` (at ``d = 16``, ``tau = 0.5`` the
        kernel of orthogonal unit vectors comes out about a quarter low); chi norms give
        each projection a Gaussian norm, which removes most of that bias (what remains comes
        from the structured rows' directions, which are not exactly uniform; measured in
        ``experiments/benchmarks/sorf_bias_benchmark.py``). The signs are the same for both
        choices given the same key.

    Returns:
      ``SORFParams`` with ``signs: [ceil(D / padded_dim), 3, padded_dim]`` of +-1 (float32),
      and ``scales`` (``norms='chi'``) or None.

    Example:
      >>> import jax
      >>> from jaxcl.random_features import draw_sorf
      >>> draw_sorf(jax.random.key(0), 100, 300).signs.shape
      (3, 3, 128)

    References:
      Yu et al., "Orthogonal Random Features", NeurIPS 2016; ESCo,
      Eq. 12 and Algorithm 1 (``D_m``).
    """
    fn = "draw_sorf"
    dim, num_features = check_draw(fn, key, dim, num_features)
    _checks.one_of(fn, "norms", norms, ("fixed", "chi"))
    padded_dim = 1 << (dim - 1).bit_length()
    num_blocks = -(-num_features // padded_dim)
    signs = jax.random.rademacher(key, (num_blocks, 3, padded_dim), jnp.float32)
    scales = None
    if norms == "chi":  # chi(p) = sqrt(2 Gamma(p / 2)), divided by the fixed norm sqrt(p)
        gamma = jax.random.gamma(jax.random.fold_in(key, 1), padded_dim / 2.0, signs.shape[::2])
        scales = jnp.sqrt(2.0 * gamma / padded_dim).astype(jnp.float32)
    return SORFParams(signs=signs, dim=dim, num_features=num_features, scales=scales)


def _check_params(fn: str, params, name: str = "params") -> SORFParams:
    """SORFParams whose fields agree (as ``draw_sorf`` makes them); ``name``: the argument."""
    signs = getattr(params, "signs", None)
    if signs is None or jnp.ndim(signs) != 3 or jnp.shape(signs)[1] != 3:
        _checks.fail(
            fn,
            f"`{name}` must be SORFParams with signs [num_blocks, 3, padded_dim], got "
            f"{type(params).__name__}" + ("" if signs is None else f" with signs {_shape(signs)}"),
        )
    num_blocks, _, padded_dim = jnp.shape(signs)
    dim, num = getattr(params, "dim", None), getattr(params, "num_features", None)
    for field, value in (("dim", dim), ("num_features", num)):
        if not _checks.is_integer(value) or value <= 0:
            _checks.fail(fn, f"`{name}.{field}` must be a positive integer, got {value!r}")
    if padded_dim & (padded_dim - 1) or padded_dim < dim:
        _checks.fail(
            fn,
            f"`{name}.signs` must be [num_blocks, 3, padded_dim] with padded_dim a power of two "
            f">= dim={dim}, got shape {_shape(signs)}",
        )
    if num > num_blocks * padded_dim:
        _checks.fail(
            fn,
            f"`{name}.num_features`={num} exceeds the {num_blocks} x {padded_dim} projections "
            f"of `{name}.signs` (shape {_shape(signs)}); need num_features <= "
            f"{num_blocks * padded_dim}",
        )
    scales = getattr(params, "scales", None)
    if scales is not None and _shape(scales) != (num_blocks, padded_dim):
        _checks.fail(
            fn,
            f"`{name}.scales` must be None or of shape (num_blocks, padded_dim) = "
            f"{(num_blocks, padded_dim)} like signs[:, 0], got shape {_shape(scales)}",
        )
    return params


def _shape(x) -> tuple[int, ...]:
    return tuple(jnp.shape(x))


def _chain(z: jax.Array, params: SORFParams, temperature) -> jax.Array:
    """``W_SORF z`` for ``[rows, dim]`` ``z`` through the FWHT: ``[rows, num_features]``."""
    num_blocks, _, padded_dim = params.signs.shape
    rows = z.shape[0]
    signs = params.signs.astype(z.dtype)
    scale = 1.0 / math.sqrt(padded_dim)

    def transform(v):  # the blocks are extra rows of one transform: [rows * num_blocks, p]
        return _fwht.transform_rows(v.reshape(-1, padded_dim), scale).reshape(v.shape)

    v = jnp.pad(z, [(0, 0), (0, padded_dim - params.dim)])[:, None, :] * signs[:, 2]
    v = transform(transform(transform(v) * signs[:, 1]) * signs[:, 0])
    if params.scales is not None:
        v = v * params.scales.astype(z.dtype)
    v = v.reshape(rows, num_blocks * padded_dim)[:, : params.num_features]
    return v * jnp.sqrt(padded_dim / jnp.asarray(temperature, z.dtype))


def projector(params: SORFParams, temperature, dtype=jnp.float32, path: str | None = None):
    """``z -> W_SORF z`` for ``[..., dim]`` inputs of the compute dtype ``dtype``.

    On the dense path (``padded_dim <= 256``) ``W_SORF`` is built here, once: code that
    projects many blocks of rows (ESCo's chunked sums) calls the returned function in its loop
    without rebuilding it. ``path`` ('dense' or 'fwht', default: by ``padded_dim``) is for
    benchmarks and tests; both compute the same ``W_SORF z``.
    """
    num_blocks, _, padded_dim = params.signs.shape
    if path is None:
        path = "dense" if padded_dim <= _DENSE_MAX_DIM else "fwht"
    if path == "dense":
        # Rows of W_SORF^T are the projections of the unit vectors (p * D * log p work, once).
        w_t = _chain(jnp.eye(params.dim, dtype=dtype), params, temperature)

        def apply(flat):
            return jnp.matmul(flat, w_t, preferred_element_type=flat.dtype)

    else:
        # The whole chain on one tile of rows before the next (CPU): its intermediates stay
        # in cache, where three separate fwht calls would each stream the [rows, D] array.
        def apply(flat):
            return _fwht.map_row_tiles(
                functools.partial(_chain, params=params, temperature=temperature),
                flat,
                row_bytes=num_blocks * padded_dim * flat.dtype.itemsize,
            )

    def project(z):
        out = apply(z.reshape(-1, params.dim))
        return out.reshape(*z.shape[:-1], params.num_features)

    return project


def _projection(z: jax.Array, params: SORFParams, temperature, path: str | None = None):
    """`sorf_projection` on validated inputs in their compute dtype."""
    return projector(params, temperature, z.dtype, path)(z)


def sorf_projection(
    z: jax.typing.ArrayLike, params: SORFParams, *, temperature, implementation: str = "xla"
) -> jax.Array:
    """Structured orthogonal random projection ``W_SORF z`` (ESCo Eq. 12).

    Per block ``t``, ``W_t z = sqrt(p / temperature) * H D_1 H D_2 H D_3 z_pad`` where ``p`` is
    ``padded_dim``, ``z_pad`` is ``z`` zero-padded to ``p``, ``H`` is the orthonormal
    Walsh-Hadamard matrix (applied with the FWHT, never formed) and ``D_i = diag(signs[t,
    i-1])``. The blocks are concatenated and the surplus columns dropped. Each row of ``sqrt(p)
    H D_1 H D_2 H D_3`` has norm ``sqrt(p)`` like a ``p``-dimensional Gaussian vector, and the
    rows of a block are exactly orthogonal.

    Cost: for ``p > 256`` the chain runs on every input, ``O(D log p)`` per input instead of
    RFF's ``O(D d)``. For ``p <= 256`` the chain is run once on the identity to build
    ``W_SORF`` (``O(p D log p)``), which is then applied as one dense matmul like RFF's
    projection: at that size the matmul is the faster of the two on CPU (the crossover is
    measured by ``experiments/benchmarks/sorf_speed_benchmark.py``). Both compute the same
    ``W_SORF z``; on CPU they agree to float32 rounding. The dense matmul runs at JAX's default
    matmul precision, which on GPU/TPU may round float32 operands (TF32, bfloat16 passes)
    where the FWHT's blocks run at ``HIGHEST``; set ``jax.default_matmul_precision`` to keep
    full float32 there.

    Args:
      z: ``[..., dim]`` floating inputs, zero-padded to ``padded_dim`` inside.
      params: ``SORFParams`` from ``draw_sorf``.
      temperature: kernel bandwidth ``tau > 0``; it scales the projection by
        ``1 / sqrt(tau)``.
      implementation: ``'xla'`` (default) or ``'pallas'``: the three transforms and sign
        flips of each block as one fused kernel that reads ``z`` once and writes each block
        once (NVIDIA GPUs only; ``padded_dim`` in 256, 512, ..., 4096; bfloat16 or float32
        ``z``, taken as it comes rather than promoted to float32; the chain runs in float32
        inside the kernel and is rounded to ``z``'s dtype before the final scaling, one
        rounding more than ``'xla'``). No gradient flows to ``params`` on this path (the
        signs are drawn constants, and the chi ``scales`` are treated as such).

    Returns:
      ``[..., num_features]`` projections ``W_SORF z`` in the dtype of ``z``.

    Example:
      The projections of the unit vectors are the columns of ``W``; with ``dim = D = p = 8``
      they show one block's orthogonal rows of norm ``sqrt(p)``:

      >>> import jax, jax.numpy as jnp
      >>> from jaxcl.random_features import draw_sorf, sorf_projection
      >>> params = draw_sorf(jax.random.key(0), 8, 8)
      >>> w_t = sorf_projection(jnp.eye(8), params, temperature=1.0)  # row i: W e_i
      >>> bool(jnp.allclose(w_t.T @ w_t, 8.0 * jnp.eye(8), atol=1e-4))
      True

    References:
      Yu et al., "Orthogonal Random Features", NeurIPS 2016; ESCo,
      Sec. 4.2, Eq. 12 and its footnote (blocks concatenated, redundant columns removed).
    """
    fn = "sorf_projection"
    params = _check_params(fn, params)
    _checks.one_of(fn, "implementation", implementation, ("xla", "pallas"))
    if implementation == "pallas":
        return feature_map(
            fn,
            z,
            params.dim,
            temperature,
            _pallas_projector(fn, params, temperature),
            promote=False,
        )
    return feature_map(
        fn, z, params.dim, temperature, lambda x: _projection(x, params, temperature)
    )


def _pallas_projector(fn: str, params: SORFParams, temperature, out_dtype=None):
    """``z -> W_SORF z`` for ``[..., dim]`` ``z`` through the fused Pallas kernel, in
    ``out_dtype`` (default ``z``'s)."""
    from jaxcl.random_features import _hadamard_pallas

    if params.scales is not None:
        params = dataclasses.replace(params, scales=jax.lax.stop_gradient(params.scales))

    def project(z):
        rows = z.reshape(-1, params.dim)
        out = _hadamard_pallas.sorf_projection_rows(
            rows, params, temperature, out_dtype=out_dtype, fn=fn
        )
        return out.reshape(*z.shape[:-1], params.num_features)

    return project


def sorf_features(
    z: jax.typing.ArrayLike, params: SORFParams, *, temperature, implementation: str = "xla"
) -> jax.Array:
    """Structured orthogonal random features of the Gaussian kernel.

    ``Phi(z) = [cos(W_SORF z), sin(W_SORF z)] / sqrt(D)`` with ``W_SORF z`` from
    ``sorf_projection``. ``Phi(x) . Phi(y)`` approximates
    ``exp(-||x - y||^2 / (2 * temperature))`` with lower variance than RFF at equal ``D``. With
    ESCo's fixed row norms (``draw_sorf(norms='fixed')``) it is biased by ``O(1 / padded_dim)``,
    more as ``temperature`` falls: at ``d = 128``, ``tau = 0.5`` the kernel of orthogonal pairs
    comes out 2.8% low (``experiments/benchmarks/sorf_bias_benchmark.py``); ``norms='chi'``
    removes most of it. For ``dim = 1`` all projections are ``+-z / sqrt(temperature)`` and the
    estimate is ``cos((x - y) / sqrt(temperature))``.

    Args:
      z: ``[..., dim]`` floating inputs.
      params: ``SORFParams`` from ``draw_sorf``.
      temperature: kernel bandwidth ``tau > 0``.
      implementation: ``'xla'`` (default) or ``'pallas'``, for the projection: see
        ``sorf_projection``. The cosines and sines are computed in float32 on both.

    Returns:
      ``[..., 2 * num_features]`` features in the dtype of ``z``: the ``num_features``
      cosines, then the sines.

    Example:
      >>> import jax, jax.numpy as jnp
      >>> from jaxcl.random_features import draw_sorf, sorf_features
      >>> params = draw_sorf(jax.random.key(0), 100, 4096)  # zero-padded to 128 inside
      >>> x, y = jax.random.normal(jax.random.key(1), (2, 100)) / 10.0
      >>> phi_x, phi_y = (sorf_features(v, params, temperature=1.0) for v in (x, y))
      >>> exact = jnp.exp(-jnp.sum((x - y) ** 2) / 2.0)
      >>> bool(abs(phi_x @ phi_y - exact) < 0.05)
      True

    References:
      Yu et al., NeurIPS 2016; ESCo Eq. 11-12 and Algorithm 1.
    """
    fn = "sorf_features"
    params = _check_params(fn, params)
    _checks.one_of(fn, "implementation", implementation, ("xla", "pallas"))
    if implementation == "pallas":
        # The projection comes out of the kernel in float32: the angles are not rounded to
        # bfloat16 before cos and sin.
        project = _pallas_projector(fn, params, temperature, out_dtype=jnp.float32)

        def compute(x):
            return cos_sin(project(x), params.num_features)

        return feature_map(fn, z, params.dim, temperature, compute, promote=False)
    return feature_map(
        fn,
        z,
        params.dim,
        temperature,
        lambda x: cos_sin(_projection(x, params, temperature), params.num_features),
    )
