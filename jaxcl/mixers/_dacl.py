"""DACL's Mixup-noise: linear, geometric and binary mixing with another sample, and DACL+.

Every sample ``x_k`` is mixed with a partner drawn uniformly from the rest of the batch
(Algorithm 1 line 6: ``x~ ~ {x_k} \\ {x_k}``). The partner index is
``(k + randint(1, batch)) mod batch``, which is uniform over the other samples and never
``k`` itself. The two positive views of Algorithm 1 are two calls with independent keys.

Padded batches (e.g. graph embeddings with padding graphs) pass ``where``, a ``[batch]``
boolean mask of the real rows: partners are then drawn among the *other real* rows only
(rank ``r`` of a row among the real ones, partner rank ``(r + randint(1, n_real)) mod
n_real``, the same rule on the real rows), and masked rows come back unchanged. The number
of real rows may be traced; a real row that is the only one has no partner and comes back
unchanged too. Masked rows may hold anything, NaN and inf included: they never enter the
arithmetic, so the gradient passes through them unchanged and never reaches the real rows.

How a key is used (fixed, so that results are reproducible across releases):
``linear_mixup``/``geometric_mixup`` split it into (partner, lambda) keys, ``binary_mixup``
into (partner, mask) keys and ``dacl_plus_mixup`` into (partner, lambda, mask, kind) keys.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from jaxcl import _checks as checks
from jaxcl.mixers._common import compute_dtype, per_sample, row_mask, sample_batch

# DACL+ codes for the per-sample choice of noise function; 2 is binary.
_LINEAR, _GEOMETRIC = 0, 1


def _partners(key: jax.Array, batch: int, where: jax.Array | None = None) -> jax.Array:
    """``[batch]`` indices, each uniform over the batch minus the sample's own index.

    With ``where``, uniform over the other rows with ``where`` True; rows with ``where``
    False (and a lone real row) get their own index.
    """
    if where is None:
        shift = jax.random.randint(key, (batch,), 1, batch)
        return (jnp.arange(batch) + shift) % batch
    num_real = jnp.sum(where, dtype=jnp.int32)
    rank = jnp.cumsum(where, dtype=jnp.int32) - 1  # a real row's rank among the real rows
    real_rows = jnp.argsort(~where, stable=True)  # real rows first, in order
    shift = jax.random.randint(key, (batch,), 1, jnp.maximum(num_real, 2))
    partner = real_rows[(rank + shift) % jnp.maximum(num_real, 1)]
    return jnp.where(where & (num_real > 1), partner, jnp.arange(batch))


def _zero_masked_rows(x: jax.Array, where: jax.Array | None) -> jax.Array:
    """``x`` with the rows outside ``where`` set to 0, before any arithmetic touches them.

    A masked row is its own partner; mixed as it is, a NaN or inf in it would give its
    gradient NaN (both branches of the final ``jnp.where`` are differentiated, 0 * NaN).
    Mixing zeros instead leaves it the plain pass-through gradient of ``_keep_masked_rows``.
    """
    if where is None:
        return x
    return jnp.where(per_sample(where, x.ndim), x, jnp.zeros((), x.dtype))


def _keep_masked_rows(mixed: jax.Array, x: jax.Array, where: jax.Array | None) -> jax.Array:
    """Rows outside ``where`` are returned as they came in."""
    if where is None:
        return mixed
    return jnp.where(per_sample(where, x.ndim), mixed, x)


def _mixing_coefficients(key: jax.Array, batch: int, alpha, dtype) -> jax.Array:
    """``[batch]`` draws of ``lambda ~ U(alpha, 1)``."""
    return jax.random.uniform(key, (batch,), dtype, minval=alpha, maxval=1.0)


def _check_alpha(fn: str, alpha) -> None:
    checks.in_range(fn, "alpha", alpha, 0.0, 1.0)


def _check_rho(fn: str, rho) -> None:
    checks.in_range(fn, "rho", rho, 0.0, 1.0)


def _power(base: jax.Array, exponent: jax.Array) -> jax.Array:
    """``base ** exponent`` for ``base >= 0``, with ``0 ** 0 = 1`` and a zero gradient at 0.

    The inner ``where`` keeps ``0`` away from ``pow``, whose derivative there is infinite
    (and NaN once multiplied by the outer ``where``'s zero cotangent): the double-where trick.
    """
    positive = base > 0
    safe_base = jnp.where(positive, base, 1.0)
    at_zero = jnp.where(exponent == 0, 1.0, 0.0).astype(base.dtype)
    return jnp.where(positive, safe_base**exponent, at_zero)


def _linear(x, x_partner, lam):
    return lam * x + (1.0 - lam) * x_partner


def _geometric(x, x_partner, lam):
    magnitude = _power(jnp.abs(x), lam) * _power(jnp.abs(x_partner), 1.0 - lam)
    return jnp.sign(x) * magnitude


def _mix_with_partner(fn: str, mix, key, x, *, alpha, where) -> jax.Array:
    """``mix(x, x_partner, lam)`` with a partner and ``lam ~ U(alpha, 1)`` drawn per sample.

    The body of :func:`linear_mixup` and :func:`geometric_mixup`, which differ only in
    ``mix``; the key is split into (partner, lambda) keys.
    """
    checks.prng_key(fn, "key", key)
    x = sample_batch(fn, x, min_batch=2)
    _check_alpha(fn, alpha)
    where = row_mask(fn, where, x.shape[0])
    dtype = compute_dtype(x.dtype)
    batch = x.shape[0]
    partner_key, lam_key = jax.random.split(key)
    partners = _partners(partner_key, batch, where)
    lam = per_sample(_mixing_coefficients(lam_key, batch, alpha, dtype), x.ndim)
    xc = _zero_masked_rows(x, where).astype(dtype)
    return _keep_masked_rows(mix(xc, xc[partners], lam).astype(x.dtype), x, where)


def linear_mixup(
    key: jax.Array, x: jax.typing.ArrayLike, *, alpha, where: jax.typing.ArrayLike | None = None
) -> jax.Array:
    """Positive view by linear Mixup-noise, ``lam * x + (1 - lam) * x_partner``.

    Each sample draws its own ``lam ~ U(alpha, 1)`` and its own partner, a different sample
    of the same batch chosen uniformly at random. With ``alpha`` high (the paper uses 0.9
    on graphs and searches {0.5, ..., 0.9} elsewhere) the view stays closer to ``x`` than to
    its partner. Works the same on inputs and on hidden representations (Eq. 4).

    Args:
      key: PRNG key.
      x: ``[batch, ...]`` floating samples, ``batch >= 2``.
      alpha: lower end of the uniform law of ``lam``, in ``[0, 1]``.
      where: optional ``[batch]`` boolean mask of the real rows (padding excluded):
        partners are drawn among the other real rows, masked rows are returned unchanged.

    Returns:
      ``[batch, ...]`` mixed samples, dtype of ``x``.

    Example:
      >>> import jax, jax.numpy as jnp
      >>> from jaxcl.mixers import linear_mixup
      >>> x = jnp.arange(12.0).reshape(4, 3)
      >>> k1, k2 = jax.random.split(jax.random.key(0))
      >>> view_1 = linear_mixup(k1, x, alpha=0.9)
      >>> view_2 = linear_mixup(k2, x, alpha=0.9)
      >>> view_1.shape
      (4, 3)
      >>> real = jnp.array([True, True, True, False])  # the last row is padding
      >>> bool((linear_mixup(k1, x, alpha=0.9, where=real)[3] == x[3]).all())
      True

    References:
      Verma et al., "Towards Domain-Agnostic Contrastive Learning", ICML 2021, Eq. 3
      (Eq. 4 in hidden space) and Algorithm 1.
    """
    return _mix_with_partner("linear_mixup", _linear, key, x, alpha=alpha, where=where)


def geometric_mixup(
    key: jax.Array, x: jax.typing.ArrayLike, *, alpha, where: jax.typing.ArrayLike | None = None
) -> jax.Array:
    """Positive view by geometric Mixup-noise, ``x ** lam * x_partner ** (1 - lam)``.

    Draws ``lam ~ U(alpha, 1)`` and a partner per sample exactly as :func:`linear_mixup`
    (the paper's ``beta`` is set equal to ``alpha``, §5). Eq. 5 is undefined for negative
    entries (a negative base to a fractional power), which hidden representations and
    standardised features have. This function mixes magnitudes and keeps the anchor's
    sign::

        sign(x) * |x| ** lam * |x_partner| ** (1 - lam)

    which equals Eq. 5 wherever both entries are ``>= 0``, stays real, and keeps the view
    on the anchor's side of zero (the partner only rescales it, as in Eq. 5). Zeros follow
    ``pow``: a zero anchor entry gives 0, a zero partner entry gives 0 unless
    ``lam == 1`` (``0 ** 0 = 1``). The gradient is finite everywhere; at zero entries,
    where ``|x| ** lam`` has an infinite slope, it is defined as 0.

    Args:
      key: PRNG key.
      x: ``[batch, ...]`` floating samples, ``batch >= 2``; any sign.
      alpha: lower end of the uniform law of ``lam``, in ``[0, 1]``.
      where: optional ``[batch]`` boolean mask of the real rows (padding excluded):
        partners are drawn among the other real rows, masked rows are returned unchanged.

    Returns:
      ``[batch, ...]`` mixed samples, dtype of ``x``.

    Example:
      >>> import jax, jax.numpy as jnp
      >>> from jaxcl.mixers import geometric_mixup
      >>> x = jnp.array([[1.0, 4.0], [9.0, 16.0], [-1.0, 0.0]])
      >>> geometric_mixup(jax.random.key(0), x, alpha=0.9).shape
      (3, 2)

    References:
      Verma et al., "Towards Domain-Agnostic Contrastive Learning", ICML 2021, Eq. 5.
    """
    return _mix_with_partner("geometric_mixup", _geometric, key, x, alpha=alpha, where=where)


def binary_mixup(
    key: jax.Array, x: jax.typing.ArrayLike, *, rho, where: jax.typing.ArrayLike | None = None
) -> jax.Array:
    """Positive view by binary Mixup-noise, ``x * m + x_partner * (1 - m)``.

    ``m ~ Bernoulli(rho)`` is drawn independently for every element, so ``m`` is the KEEP
    mask: each entry is the anchor's with probability ``rho`` and the partner's otherwise.
    Note the paper is ambiguous here: §3.1 asks for a "high rho", but §5 searches
    ``rho`` in {0.1, 0.3, 0.5}, which under Eq. 6 read literally keeps at most half of the
    anchor (the view is then closer to the partner, against Fig. 1). This function follows
    Eq. 6 literally; to get the other reading (``rho`` = probability of swapping an entry)
    pass ``1 - rho``.

    Args:
      key: PRNG key.
      x: ``[batch, ...]`` floating samples, ``batch >= 2``.
      rho: probability of keeping each anchor entry, in ``[0, 1]``.
      where: optional ``[batch]`` boolean mask of the real rows (padding excluded):
        partners are drawn among the other real rows, masked rows are returned unchanged.

    Returns:
      ``[batch, ...]`` mixed samples, dtype of ``x``; every entry equals the anchor's or
      the partner's entry exactly.

    Example:
      >>> import jax, jax.numpy as jnp
      >>> from jaxcl.mixers import binary_mixup
      >>> x = jnp.arange(12.0).reshape(4, 3)
      >>> binary_mixup(jax.random.key(0), x, rho=0.9).shape
      (4, 3)

    References:
      Verma et al., "Towards Domain-Agnostic Contrastive Learning", ICML 2021, Eq. 6;
      Beckham et al., "On Adversarial Mixup Resynthesis", NeurIPS 2019.
    """
    fn = "binary_mixup"
    checks.prng_key(fn, "key", key)
    x = sample_batch(fn, x, min_batch=2)
    _check_rho(fn, rho)
    where = row_mask(fn, where, x.shape[0])
    partner_key, mask_key = jax.random.split(key)
    partners = _partners(partner_key, x.shape[0], where)
    keep = jax.random.bernoulli(mask_key, rho, x.shape)
    xz = _zero_masked_rows(x, where)
    return _keep_masked_rows(jnp.where(keep, xz, xz[partners]), x, where)


def dacl_plus_mixup(
    key: jax.Array,
    x: jax.typing.ArrayLike,
    *,
    alpha,
    rho,
    kind_key: jax.Array | None = None,
    where: jax.typing.ArrayLike | None = None,
) -> jax.Array:
    """Positive view by DACL+: per sample, linear, geometric or binary Mixup-noise.

    Each sample picks one of the three noise functions uniformly at random and applies it
    with its own partner, ``lam ~ U(alpha, 1)`` (linear and geometric, ``beta = alpha`` as
    in §5) and ``Bernoulli(rho)`` keep mask (binary); see :func:`linear_mixup`,
    :func:`geometric_mixup` (including its rule for negative entries) and
    :func:`binary_mixup`.

    The paper applies the function picked for a sample to create *both* of its positive
    views. The choice is drawn from ``kind_key`` when given: pass the same ``kind_key``
    with independent ``key`` s for the two views to follow the paper. Without it the choice
    comes from ``key``, so two views drawn with independent keys use independent choices.

    Args:
      key: PRNG key for partners, coefficients and masks (and the choice when
        ``kind_key`` is None).
      x: ``[batch, ...]`` floating samples, ``batch >= 2``.
      alpha: lower end of the uniform law of ``lam``, in ``[0, 1]``.
      rho: probability of keeping each anchor entry in binary mixing, in ``[0, 1]``.
      kind_key: optional PRNG key for the per-sample choice of noise function.
      where: optional ``[batch]`` boolean mask of the real rows (padding excluded):
        partners are drawn among the other real rows, masked rows are returned unchanged.

    Returns:
      ``[batch, ...]`` mixed samples, dtype of ``x``.

    Example:
      >>> import jax, jax.numpy as jnp
      >>> from jaxcl.mixers import dacl_plus_mixup
      >>> x = jnp.abs(jax.random.normal(jax.random.key(0), (8, 5)))
      >>> kind_key, k1, k2 = jax.random.split(jax.random.key(1), 3)
      >>> view_1 = dacl_plus_mixup(k1, x, alpha=0.9, rho=0.9, kind_key=kind_key)
      >>> view_2 = dacl_plus_mixup(k2, x, alpha=0.9, rho=0.9, kind_key=kind_key)
      >>> view_1.shape
      (8, 5)

    References:
      Verma et al., "Towards Domain-Agnostic Contrastive Learning", ICML 2021, §3.1
      (DACL+), Eqs. 3, 5 and 6.
    """
    fn = "dacl_plus_mixup"
    checks.prng_key(fn, "key", key)
    x = sample_batch(fn, x, min_batch=2)
    _check_alpha(fn, alpha)
    _check_rho(fn, rho)
    if kind_key is not None:
        checks.prng_key(fn, "kind_key", kind_key)
    where = row_mask(fn, where, x.shape[0])
    dtype = compute_dtype(x.dtype)
    batch = x.shape[0]
    partner_key, lam_key, mask_key, own_kind_key = jax.random.split(key, 4)
    kinds = jax.random.randint(own_kind_key if kind_key is None else kind_key, (batch,), 0, 3)
    partners = _partners(partner_key, batch, where)
    lam = per_sample(_mixing_coefficients(lam_key, batch, alpha, dtype), x.ndim)
    keep = jax.random.bernoulli(mask_key, rho, x.shape)
    xc = _zero_masked_rows(x, where).astype(dtype)
    xp = xc[partners]
    kinds = per_sample(kinds, x.ndim)
    mixed = jnp.where(
        kinds == _LINEAR,
        _linear(xc, xp, lam),
        jnp.where(kinds == _GEOMETRIC, _geometric(xc, xp, lam), jnp.where(keep, xc, xp)),
    )
    return _keep_masked_rows(mixed.astype(x.dtype), x, where)
