"""i-Mix's input mixing: Mixup and CutMix of a batch with a permutation of itself.

Unlike DACL, i-Mix pairs samples through a random permutation (which may map a sample to
itself) and, in the paper's Algorithm 1, draws one coefficient for the whole batch; the loss
then needs both ``lam`` and ``perm`` to build the virtual soft labels
``lam * onehot(i) + (1 - lam) * onehot(perm[i])``. The official code (kibok90/imix,
``builder.py``'s ``mixup``) instead draws one coefficient per sample and folds it to
``max(lam, 1 - lam)``; ``imix_mixup(per_sample=True)`` does that. Its ``cutmix`` folds its
coefficient the same way before drawing the box; ``cutmix`` here does not, so when
``lam < 0.5`` the partner fills most of the image (the virtual labels use the area actually
kept either way).

How a key is used: ``imix_mixup`` splits it into (lambda, permutation) keys and ``cutmix``
into (lambda, permutation, box centre) keys.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Sequence

import jax
import jax.numpy as jnp

from jaxcl import _checks as checks
from jaxcl.mixers._common import compute_dtype, sample_batch


def _batch_coefficient(key: jax.Array, alpha) -> jax.Array:
    """One scalar ``lam ~ Beta(alpha, alpha)``, float32."""
    return jax.random.beta(key, alpha, alpha, dtype=jnp.float32)


def _permutation(key: jax.Array, batch: int) -> jax.Array:
    return jax.random.permutation(key, batch).astype(jnp.int32)


def imix_mixup(key: jax.Array, x: jax.typing.ArrayLike, *, alpha, per_sample: bool = False):
    """i-Mix input Mixup: ``lam * x + (1 - lam) * x[perm]``, one ``lam`` per batch or sample.

    Mix only the query (anchor) view; the key view stays clean. Train with the N-pair loss
    on virtual soft labels, ``lam * CE(logits, i) + (1 - lam) * CE(logits, perm[i])``.

    Args:
      key: PRNG key.
      x: ``[batch, ...]`` floating samples (one augmented view).
      alpha: Beta concentration, ``> 0`` (``lam ~ Beta(alpha, alpha)``).
      per_sample: ``False`` (the paper's Algorithm 1): one ``lam`` for the batch. ``True``
        (the official code's ``mixup``): one ``lam_i ~ Beta(alpha, alpha)`` per sample,
        folded to ``max(lam_i, 1 - lam_i)`` so that each sample keeps the larger share of
        itself. The losses take either (``jaxcl.losses.imix_npair_loss``,
        ``imix_byol_loss``).

    Returns:
      ``(x_mix, lam, perm)``: ``x_mix`` ``[batch, ...]`` in the dtype of ``x``; ``lam`` a
      float32 scalar in ``[0, 1]`` (``[batch]`` in ``[0.5, 1]`` with ``per_sample``);
      ``perm`` an int32 ``[batch]`` permutation of ``arange(batch)``, the index of each
      sample's mixing partner.

    Example:
      >>> import jax, jax.numpy as jnp
      >>> from jaxcl.mixers import imix_mixup
      >>> x = jnp.arange(12.0).reshape(4, 3)
      >>> x_mix, lam, perm = imix_mixup(jax.random.key(0), x, alpha=1.0)
      >>> x_mix.shape, lam.shape, perm.shape
      ((4, 3), (), (4,))

    References:
      Lee et al., "i-Mix: A Domain-Agnostic Strategy for Contrastive Representation
      Learning", ICLR 2021: ``Mix(x_i, x_j; lam) = lam * x_i + (1 - lam) * x_j`` and
      Algorithm 1 (N-pair loss with virtual labels).
    """
    fn = "imix_mixup"
    checks.prng_key(fn, "key", key)
    x = sample_batch(fn, x, min_batch=1)
    checks.positive(fn, "alpha", alpha)
    per_sample = checks.boolean(fn, "per_sample", per_sample)
    lam_key, perm_key = jax.random.split(key)
    if per_sample:
        lam = jax.random.beta(lam_key, alpha, alpha, (x.shape[0],), dtype=jnp.float32)
        lam = jnp.maximum(lam, 1.0 - lam)
    else:
        lam = _batch_coefficient(lam_key, alpha)
    perm = _permutation(perm_key, x.shape[0])
    dtype = compute_dtype(x.dtype)
    xc = x.astype(dtype)
    lam_c = lam.astype(dtype).reshape(lam.shape + (1,) * (x.ndim - lam.ndim))
    x_mix = lam_c * xc + (1.0 - lam_c) * xc[perm]
    return x_mix.astype(x.dtype), lam, perm


def _normalise_axes(fn: str, axes, shape: tuple[int, ...]) -> tuple[int, ...]:
    """Sample axes as non-negative ints, each in ``[1, ndim)``, distinct, non-empty."""
    if isinstance(axes, numbers.Integral) and not isinstance(axes, bool):
        axes = (axes,)
    if not isinstance(axes, Sequence) or len(axes) == 0:
        checks.fail(fn, f"`axes` must be a non-empty sequence of ints, got {axes!r}")
    ndim = len(shape)
    normalised = []
    for axis in axes:
        if isinstance(axis, bool) or not isinstance(axis, numbers.Integral):
            checks.fail(fn, f"`axes` must hold ints, got {axes!r}")
        a = int(axis) + ndim if axis < 0 else int(axis)
        if not 1 <= a < ndim:
            checks.fail(
                fn,
                f"`axes` {tuple(axes)!r}: axis {axis} is not a sample axis of `x` with shape "
                f"{shape}; expected axes in [1, {ndim - 1}] (axis 0 is the batch)",
            )
        if shape[a] == 0:
            checks.fail(fn, f"`axes` {tuple(axes)!r}: axis {axis} of `x` {shape} has size 0")
        normalised.append(a)
    if len(set(normalised)) != len(normalised):
        checks.fail(fn, f"`axes` must be distinct, got {tuple(axes)!r} for `x` of rank {ndim}")
    return tuple(normalised)


def cutmix(key: jax.Array, x: jax.typing.ArrayLike, *, alpha, axes: Sequence[int] = (1, 2)):
    """i-Mix CutMix: paste a box of ``x[perm]`` into ``x``, one box and ``lam`` per batch.

    Draws ``lam0 ~ Beta(alpha, alpha)`` and a box over ``axes`` whose side along each of the
    ``k`` axes is ``floor(size * (1 - lam0) ** (1 / k))`` (area fraction ``1 - lam0``),
    centred at a uniformly random position and clipped to the sample. Inside the box the
    sample is replaced by its partner's. Because of the clipping and the flooring, the
    returned ``lam`` is the fraction of each sample that is actually kept,
    ``1 - box_volume / prod(sizes)``, which is what the virtual labels must use.

    Args:
      key: PRNG key.
      x: ``[batch, ...]`` floating samples (one augmented view), e.g. ``[N, H, W, C]``
        images or ``[N, L]`` / ``[N, L, D]`` sequences.
      alpha: Beta concentration, ``> 0``.
      axes: sample axes the box spans, distinct ints in ``[1, x.ndim)`` (negative ones
        count from the end); ``(1, 2)`` is H, W of NHWC images, ``(1,)`` a sequence axis.

    Returns:
      ``(x_mix, lam, perm)``: ``x_mix`` ``[batch, ...]`` in the dtype of ``x``; ``lam`` a
      float32 scalar, the kept fraction; ``perm`` an int32 ``[batch]`` permutation.

    Example:
      >>> import jax, jax.numpy as jnp
      >>> from jaxcl.mixers import cutmix
      >>> images = jnp.zeros((4, 8, 8, 3))
      >>> x_mix, lam, perm = cutmix(jax.random.key(0), images, alpha=1.0)
      >>> x_mix.shape, lam.dtype
      ((4, 8, 8, 3), dtype('float32'))

    References:
      Lee et al., "i-Mix: A Domain-Agnostic Strategy for Contrastive Representation
      Learning", ICLR 2021: ``CutMix(x_i, x_j; lam) = M_lam * x_i + (1 - M_lam) * x_j``;
      Yun et al., "CutMix", ICCV 2019, §3.1 (Eq. 1 and the box sampling after it).
    """
    fn = "cutmix"
    checks.prng_key(fn, "key", key)
    x = sample_batch(fn, x, min_batch=1)
    checks.positive(fn, "alpha", alpha)
    axes = _normalise_axes(fn, axes, tuple(x.shape))
    lam_key, perm_key, centre_key = jax.random.split(key, 3)
    lam0 = _batch_coefficient(lam_key, alpha)
    perm = _permutation(perm_key, x.shape[0])
    sizes = [x.shape[a] for a in axes]
    side_fraction = (1.0 - lam0) ** (1.0 / len(axes))
    centres = jax.random.randint(centre_key, (len(axes),), 0, jnp.asarray(sizes))

    in_box = jnp.ones((), bool)
    box_volume = jnp.ones((), jnp.int32)
    for i, (axis, size) in enumerate(zip(axes, sizes, strict=True)):
        side = jnp.floor(size * side_fraction).astype(jnp.int32)
        start = centres[i] - side // 2
        low = jnp.clip(start, 0, size)
        high = jnp.clip(start + side, 0, size)
        box_volume = box_volume * (high - low)
        position = jax.lax.broadcasted_iota(jnp.int32, (1,) * axis + (size,), axis)
        position = position.reshape(position.shape + (1,) * (x.ndim - axis - 1))
        in_box = in_box & (position >= low) & (position < high)

    lam = 1.0 - box_volume.astype(jnp.float32) / math.prod(sizes)
    x_mix = jnp.where(in_box, x[perm], x)
    return x_mix, lam, perm
