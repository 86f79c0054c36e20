"""Random features for the Gaussian kernel: RFF, SORF and positive (FAVOR+) features.

All three approximate ``k(x, y) = exp(-||x - y||^2 / (2 * temperature))`` by an inner product
of explicit feature maps, ``k(x, y) ~ Phi(x) . Phi(y)``, which turns a sum of ``N^2`` pairwise
kernel values into ``N`` feature maps and one sum (ESCo, "Towards Provably Effective and
Scalable Contrastive Representation Learning", Sec. 4.2, Eq. 11).

The random parameters are drawn once (``draw_*``) and are independent of the temperature, so
one draw can serve several temperatures and can be stored in a training state. Projections
are computed in float32 (or wider) whatever the input dtype, and cast back to the dtype of
``z`` at the end.
"""

from __future__ import annotations

import dataclasses
import functools
import math

import jax
import jax.numpy as jnp

from jaxcl import _checks
from jaxcl.random_features._fwht import fwht


@functools.partial(jax.tree_util.register_dataclass, data_fields=["omega"], meta_fields=[])
@dataclasses.dataclass(frozen=True)
class RFFParams:
    """Random Fourier feature directions.

    Attributes:
      omega: ``[dim, num_features]`` standard normal directions, not scaled by the temperature.
    """

    omega: jax.Array


@functools.partial(
    jax.tree_util.register_dataclass,
    data_fields=["signs"],
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
    """

    signs: jax.Array
    dim: int
    num_features: int


@functools.partial(jax.tree_util.register_dataclass, data_fields=["omega"], meta_fields=[])
@dataclasses.dataclass(frozen=True)
class PositiveParams:
    """Positive random feature directions.

    Attributes:
      omega: ``[dim, num_features]`` directions whose columns are marginally standard normal
        (i.i.d., or block-orthogonal); not scaled by the temperature.
    """

    omega: jax.Array


def _check_draw(fn: str, key, dim, num_features) -> tuple[int, int]:
    _checks.prng_key(fn, "key", key)
    return _checks.positive_int(fn, "dim", dim), _checks.positive_int(
        fn, "num_features", num_features
    )


def _check_dtype(fn: str, dtype) -> jnp.dtype:
    try:
        dtype = jnp.dtype(dtype)
    except TypeError:
        _checks.fail(fn, f"`dtype` must be a floating dtype, got {dtype!r}")
    if not jnp.issubdtype(dtype, jnp.floating):
        _checks.fail(fn, f"`dtype` must be a floating dtype, got {dtype}")
    return dtype


def _check_inputs(fn: str, z, dim: int, temperature) -> tuple[jax.Array, jnp.dtype]:
    """Validates ``z`` and ``temperature``; returns ``z`` in its compute dtype and ``z.dtype``."""
    z = jnp.asarray(_checks.floating_array(fn, "z", z))
    if z.ndim == 0:
        _checks.fail(fn, "`z` must have shape [..., dim], got a scalar")
    if z.shape[-1] != dim:
        _checks.fail(
            fn,
            f"`z` must have last dimension dim={dim} to match `params`, got shape {tuple(z.shape)}",
        )
    _checks.positive(fn, "temperature", temperature)
    return z.astype(jnp.promote_types(z.dtype, jnp.float32)), z.dtype


def _omega(fn: str, params) -> jax.Array:
    omega = getattr(params, "omega", None)
    if omega is None or jnp.ndim(omega) != 2:
        _checks.fail(
            fn,
            "`params` must hold a [dim, num_features] `omega` (RFFParams or PositiveParams), "
            f"got {type(params).__name__}",
        )
    return omega


def _project(z: jax.Array, omega: jax.Array, temperature) -> jax.Array:
    """``z @ (omega / sqrt(temperature))`` with float32 (or wider) accumulation."""
    omega = omega.astype(z.dtype)
    return jnp.matmul(z, omega, preferred_element_type=z.dtype) * jax.lax.rsqrt(
        jnp.asarray(temperature, z.dtype)
    )


def _cos_sin(projection: jax.Array, num_features: int) -> jax.Array:
    scale = 1.0 / math.sqrt(num_features)
    return jnp.concatenate([jnp.cos(projection), jnp.sin(projection)], axis=-1) * scale


def _check_sorf_params(fn: str, params) -> None:
    signs = getattr(params, "signs", None)
    if signs is None or jnp.ndim(signs) != 3 or jnp.shape(signs)[1] != 3:
        _checks.fail(
            fn,
            "`params` must be SORFParams with signs [num_blocks, 3, padded_dim], got "
            f"{type(params).__name__}",
        )


def _sorf_projection(z: jax.Array, params: SORFParams, temperature) -> jax.Array:
    """`sorf_projection` on validated inputs in their compute dtype."""
    num_blocks, _, padded_dim = params.signs.shape
    z = jnp.pad(z, [(0, 0)] * (z.ndim - 1) + [(0, padded_dim - params.dim)])
    signs = params.signs.astype(z.dtype)
    # One fwht call per factor over all blocks at once ([..., num_blocks, p]): the blocks become
    # extra rows of the same transform instead of a Python loop of small launches.
    v = fwht(z[..., None, :] * signs[:, 2])
    v = fwht(v * signs[:, 1])
    v = fwht(v * signs[:, 0])
    v = v.reshape(*v.shape[:-2], num_blocks * padded_dim)[..., : params.num_features]
    return v * jnp.sqrt(padded_dim / jnp.asarray(temperature, z.dtype))


def _positive_log(z: jax.Array, omega: jax.Array, temperature) -> jax.Array:
    """`positive_log_features` on validated inputs in their compute dtype."""
    sq_norm = jnp.sum(z * z, axis=-1, keepdims=True)
    return (
        _project(z, omega, temperature)
        - sq_norm / jnp.asarray(temperature, z.dtype)
        - 0.5 * math.log(omega.shape[1])
    )


def draw_rff(key: jax.Array, dim: int, num_features: int, *, dtype=jnp.float32) -> RFFParams:
    """Draws the Gaussian directions of random Fourier features.

    Args:
      key: PRNG key (``jax.random.key``).
      dim: input dimension ``d``.
      num_features: number of directions ``D``; the feature map has ``2 * D`` entries.
      dtype: floating dtype of ``omega``.

    Returns:
      ``RFFParams`` with ``omega: [dim, num_features]`` i.i.d. standard normal.

    Example:
      >>> import jax
      >>> from jaxcl.random_features import draw_rff
      >>> draw_rff(jax.random.key(0), 16, 256).omega.shape
      (16, 256)

    References:
      Rahimi & Recht, "Random features for large-scale kernel machines", NeurIPS 2007;
      ESCo Sec. 4.2 (``W = G / sqrt(tau)``, G standard normal).
    """
    fn = "draw_rff"
    dim, num_features = _check_draw(fn, key, dim, num_features)
    dtype = _check_dtype(fn, dtype)
    return RFFParams(omega=jax.random.normal(key, (dim, num_features), dtype))


def draw_sorf(key: jax.Array, dim: int, num_features: int) -> SORFParams:
    """Draws the Rademacher diagonals of structured orthogonal random features.

    Args:
      key: PRNG key (``jax.random.key``).
      dim: input dimension ``d``; inputs are zero-padded to ``padded_dim``, the next power of two.
      num_features: number of projections ``D``; ``ceil(D / padded_dim)`` blocks are drawn.

    Returns:
      ``SORFParams`` with ``signs: [ceil(D / padded_dim), 3, padded_dim]`` of +-1 (float32).

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
    dim, num_features = _check_draw(fn, key, dim, num_features)
    padded_dim = 1 << (dim - 1).bit_length()
    num_blocks = -(-num_features // padded_dim)
    signs = jax.random.rademacher(key, (num_blocks, 3, padded_dim), jnp.float32)
    return SORFParams(signs=signs, dim=dim, num_features=num_features)


def draw_positive(
    key: jax.Array,
    dim: int,
    num_features: int,
    *,
    orthogonal: bool = False,
    dtype=jnp.float32,
) -> PositiveParams:
    """Draws the directions of positive random features.

    With ``orthogonal=True`` the directions come in blocks of ``dim`` mutually orthogonal
    vectors: each block is the ``Q`` of a Gaussian matrix's QR decomposition (sign-corrected
    so that it is Haar distributed) with every column rescaled by an independent
    chi-distributed norm, so that each column is still marginally standard normal (the
    estimator stays unbiased) while the block's columns are exactly orthogonal, which lowers
    the variance.

    Args:
      key: PRNG key (``jax.random.key``).
      dim: input dimension ``d``.
      num_features: number of directions ``D`` (the feature map has ``D`` entries).
      orthogonal: draw block-orthogonal directions instead of i.i.d. ones.
      dtype: floating dtype of ``omega``.

    Returns:
      ``PositiveParams`` with ``omega: [dim, num_features]``.

    Example:
      >>> import jax, jax.numpy as jnp
      >>> from jaxcl.random_features import draw_positive
      >>> omega = draw_positive(jax.random.key(0), 8, 8, orthogonal=True).omega
      >>> bool(jnp.allclose(omega.T @ omega, jnp.diag(jnp.diag(omega.T @ omega)), atol=1e-4))
      True

    References:
      Choromanski et al., "Rethinking attention with Performers" (FAVOR+, orthogonal random
      features), ICLR 2021; Yu et al., "Orthogonal Random Features", NeurIPS 2016.
    """
    fn = "draw_positive"
    dim, num_features = _check_draw(fn, key, dim, num_features)
    dtype = _check_dtype(fn, dtype)
    if not orthogonal:
        return PositiveParams(omega=jax.random.normal(key, (dim, num_features), dtype))
    num_blocks = -(-num_features // dim)
    key_q, key_norm = jax.random.split(key)
    # QR is not implemented for bfloat16/float16; draw in float32 and cast once.
    gaussian = jax.random.normal(key_q, (num_blocks, dim, dim), jnp.float32)
    q, r = jnp.linalg.qr(gaussian)
    # Without this sign correction Q is not Haar distributed (LAPACK fixes diag(R) >= 0 only
    # up to convention), and its columns would not be uniform on the sphere.
    q = q * jnp.sign(jnp.diagonal(r, axis1=-2, axis2=-1))[:, None, :]
    norms = jnp.linalg.norm(
        jax.random.normal(key_norm, (num_blocks, dim, dim), jnp.float32), axis=-2
    )
    blocks = q * norms[:, None, :]
    omega = jnp.transpose(blocks, (1, 0, 2)).reshape(dim, num_blocks * dim)[:, :num_features]
    return PositiveParams(omega=omega.astype(dtype))


def rff_features(z: jax.typing.ArrayLike, params: RFFParams, *, temperature) -> jax.Array:
    """Random Fourier features of the Gaussian kernel.

    ``Phi(z) = [cos(z W), sin(z W)] / sqrt(D)`` with ``W = omega / sqrt(temperature)``, so that
    ``E[Phi(x) . Phi(y)] = exp(-||x - y||^2 / (2 * temperature))`` and the variance of the
    estimate is at most ``1 / (2 D)``.

    Args:
      z: ``[..., dim]`` floating inputs (any leading batch shape).
      params: ``RFFParams`` from ``draw_rff`` (``omega: [dim, D]``).
      temperature: kernel bandwidth ``tau > 0``.

    Returns:
      ``[..., 2 * D]`` features in the dtype of ``z``.

    Example:
      >>> import jax, jax.numpy as jnp
      >>> from jaxcl.random_features import draw_rff, rff_features
      >>> params = draw_rff(jax.random.key(0), 4, 4096)
      >>> x = jnp.array([1.0, 0.0, 0.0, 0.0]); y = jnp.array([0.0, 1.0, 0.0, 0.0])
      >>> k = rff_features(x, params, temperature=1.0) @ rff_features(y, params, temperature=1.0)
      >>> bool(abs(k - jnp.exp(-1.0)) < 0.05)
      True

    References:
      Rahimi & Recht, NeurIPS 2007; ESCo Eq. 2 and Eq. 11.
    """
    fn = "rff_features"
    omega = _omega(fn, params)
    z, dtype = _check_inputs(fn, z, omega.shape[0], temperature)
    return _cos_sin(_project(z, omega, temperature), omega.shape[1]).astype(dtype)


def rff_projection(z: jax.typing.ArrayLike, params: RFFParams, *, temperature) -> jax.Array:
    """Random Fourier projection ``z W`` with ``W = omega / sqrt(temperature)``.

    The argument of the cosines and sines in :func:`rff_features`. Code that only needs sums of
    features (as ESCo's kernel sums do) can reduce ``cos`` and ``sin`` of this directly and
    never build the ``[..., 2 D]`` feature array.

    Args:
      z: ``[..., dim]`` floating inputs.
      params: ``RFFParams`` from ``draw_rff``.
      temperature: kernel bandwidth ``tau > 0``.

    Returns:
      ``[..., num_features]`` projections in the dtype of ``z``.

    Example:
      >>> import jax, jax.numpy as jnp
      >>> from jaxcl.random_features import draw_rff, rff_projection
      >>> params = draw_rff(jax.random.key(0), 8, 64)
      >>> rff_projection(jnp.ones((3, 8)), params, temperature=0.5).shape
      (3, 64)

    References:
      Rahimi & Recht, NeurIPS 2007; ESCo Eq. 11.
    """
    fn = "rff_projection"
    omega = _omega(fn, params)
    z, dtype = _check_inputs(fn, z, omega.shape[0], temperature)
    return _project(z, omega, temperature).astype(dtype)


def sorf_projection(z: jax.typing.ArrayLike, params: SORFParams, *, temperature) -> jax.Array:
    """Structured orthogonal random projection ``W_SORF z`` (ESCo Eq. 12).

    Per block ``t``, ``W_t z = sqrt(p / temperature) * H D_1 H D_2 H D_3 z_pad`` where ``p`` is
    ``padded_dim``, ``z_pad`` is ``z`` zero-padded to ``p``, ``H`` is the orthonormal
    Walsh-Hadamard matrix (applied with ``fwht``, never formed) and ``D_i = diag(signs[t, i-1])``.
    The blocks are concatenated and the surplus columns dropped. Each row of ``sqrt(p) H D_1 H
    D_2 H D_3`` has norm ``sqrt(p)`` like a ``p``-dimensional Gaussian vector, and the rows of a
    block are exactly orthogonal. Cost ``O(D log p)`` per input instead of ``O(D d)``.

    Args:
      z: ``[..., dim]`` floating inputs.
      params: ``SORFParams`` from ``draw_sorf``.
      temperature: kernel bandwidth ``tau > 0``.

    Returns:
      ``[..., num_features]`` projections in the dtype of ``z``.

    Example:
      >>> import jax, jax.numpy as jnp
      >>> from jaxcl.random_features import draw_sorf, sorf_projection
      >>> params = draw_sorf(jax.random.key(0), 100, 300)
      >>> sorf_projection(jnp.ones((2, 100)), params, temperature=0.5).shape
      (2, 300)

    References:
      Yu et al., "Orthogonal Random Features", NeurIPS 2016; ESCo,
      Sec. 4.2, Eq. 12 and its footnote (blocks concatenated, redundant columns removed).
    """
    fn = "sorf_projection"
    _check_sorf_params(fn, params)
    z, dtype = _check_inputs(fn, z, params.dim, temperature)
    return _sorf_projection(z, params, temperature).astype(dtype)


def sorf_features(z: jax.typing.ArrayLike, params: SORFParams, *, temperature) -> jax.Array:
    """Structured orthogonal random features of the Gaussian kernel.

    ``Phi(z) = [cos(W_SORF z), sin(W_SORF z)] / sqrt(D)`` with ``W_SORF z`` from
    ``sorf_projection``. ``Phi(x) . Phi(y)`` approximates
    ``exp(-||x - y||^2 / (2 * temperature))`` with lower variance than RFF at equal ``D``; the
    bias is negligible unless ``padded_dim`` is tiny (for ``dim = 1`` all projections are
    ``+-z / sqrt(temperature)`` and the estimate is ``cos((x - y) / sqrt(temperature))``).

    Args:
      z: ``[..., dim]`` floating inputs.
      params: ``SORFParams`` from ``draw_sorf``.
      temperature: kernel bandwidth ``tau > 0``.

    Returns:
      ``[..., 2 * num_features]`` features in the dtype of ``z``.

    Example:
      >>> import jax, jax.numpy as jnp
      >>> from jaxcl.random_features import draw_sorf, sorf_features
      >>> params = draw_sorf(jax.random.key(0), 64, 2048)
      >>> x = jnp.zeros(64).at[0].set(1.0); y = jnp.zeros(64).at[1].set(1.0)
      >>> k = sorf_features(x, params, temperature=1.0) @ sorf_features(y, params, temperature=1.0)
      >>> bool(abs(k - jnp.exp(-1.0)) < 0.05)
      True

    References:
      Yu et al., NeurIPS 2016; ESCo Eq. 11-12 and Algorithm 1.
    """
    fn = "sorf_features"
    _check_sorf_params(fn, params)
    z, dtype = _check_inputs(fn, z, params.dim, temperature)
    projection = _sorf_projection(z, params, temperature)
    return _cos_sin(projection, params.num_features).astype(dtype)


def positive_log_features(
    z: jax.typing.ArrayLike, params: PositiveParams, *, temperature
) -> jax.Array:
    """Logarithm of the positive random features, for log-domain (logsumexp) use.

    ``log Phi+(z) = z W - ||z||^2 / temperature - log(D) / 2`` with
    ``W = omega / sqrt(temperature)``; see ``positive_features``. Never overflows, unlike
    ``exp`` of it for large ``||z||^2 / temperature``.

    Args:
      z: ``[..., dim]`` floating inputs.
      params: ``PositiveParams`` from ``draw_positive``.
      temperature: kernel bandwidth ``tau > 0``.

    Returns:
      ``[..., D]`` log-features in the dtype of ``z``.

    Example:
      >>> import jax, jax.numpy as jnp
      >>> from jaxcl.random_features import draw_positive, positive_log_features
      >>> params = draw_positive(jax.random.key(0), 4, 16)
      >>> positive_log_features(jnp.ones((3, 4)), params, temperature=0.1).shape
      (3, 16)

    References:
      Choromanski et al., "Rethinking attention with Performers", ICLR 2021, Lemma 1.
    """
    fn = "positive_log_features"
    omega = _omega(fn, params)
    z, dtype = _check_inputs(fn, z, omega.shape[0], temperature)
    return _positive_log(z, omega, temperature).astype(dtype)


def positive_features(z: jax.typing.ArrayLike, params: PositiveParams, *, temperature) -> jax.Array:
    """Strictly positive random features of the Gaussian kernel (FAVOR+).

    ``Phi+(z) = exp(z W - ||z||^2 / temperature) / sqrt(D)`` with
    ``W = omega / sqrt(temperature)``, which is unbiased for the Gaussian kernel:

    For ``w ~ N(0, I_d)`` and any ``u``, ``E[exp(w . u)] = exp(||u||^2 / 2)`` (the Gaussian
    moment generating function). One feature pair contributes, with ``u = (x + y) /
    sqrt(temperature)``,

        E[exp(w . u - (||x||^2 + ||y||^2) / temperature)]
          = exp((||x + y||^2 - 2 ||x||^2 - 2 ||y||^2) / (2 temperature))
          = exp(-(||x||^2 - 2 x . y + ||y||^2) / (2 temperature))
          = exp(-||x - y||^2 / (2 temperature)),

    and ``Phi+(x) . Phi+(y)`` is the mean of ``D`` such terms, so
    ``E[Phi+(x) . Phi+(y)] = exp(-||x - y||^2 / (2 temperature))`` exactly. Only the marginal
    law of each column of ``omega`` enters, so block-orthogonal directions keep it unbiased.
    Unlike the cosine features every term is positive, so sums of kernel values stay positive
    (safe under ``log``). The variance of one term is
    ``exp(4 x . y / temperature) - exp(-||x - y||^2 / temperature)``, large for aligned inputs
    at small temperature; use ``positive_log_features`` where ``exp`` could overflow.

    Args:
      z: ``[..., dim]`` floating inputs.
      params: ``PositiveParams`` from ``draw_positive``.
      temperature: kernel bandwidth ``tau > 0``.

    Returns:
      ``[..., D]`` strictly positive features in the dtype of ``z``.

    Example:
      >>> import jax, jax.numpy as jnp
      >>> from jaxcl.random_features import draw_positive, positive_features
      >>> params = draw_positive(jax.random.key(0), 4, 4096, orthogonal=True)
      >>> x = jnp.array([1.0, 0.0, 0.0, 0.0]); y = jnp.array([0.0, 1.0, 0.0, 0.0])
      >>> phi = lambda v: positive_features(v, params, temperature=1.0)
      >>> bool(abs(phi(x) @ phi(y) - jnp.exp(-1.0)) < 0.05)
      True

    References:
      Choromanski et al., "Rethinking attention with Performers", ICLR 2021, Lemma 1 (positive
      random features for the softmax kernel, here with the Gaussian factors folded in).
    """
    fn = "positive_features"
    omega = _omega(fn, params)
    z, dtype = _check_inputs(fn, z, omega.shape[0], temperature)
    return jnp.exp(_positive_log(z, omega, temperature)).astype(dtype)
