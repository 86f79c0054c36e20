"""The N-pair loss with i-Mix's virtual soft labels."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from jax.typing import ArrayLike

from jaxcl import _checks
from jaxcl.losses import _common


def _check_lam(fn: str, lam, batch: int) -> jax.Array:
    """``lam`` as float32, a scalar or ``[batch]``, its concrete values in ``[0, 1]``."""
    if not hasattr(lam, "dtype"):
        try:
            lam = np.asarray(lam)
        except Exception:  # noqa: BLE001 - refused just below, whatever it is
            lam = np.asarray(None)
    numeric = jnp.issubdtype(lam.dtype, jnp.floating) or jnp.issubdtype(lam.dtype, jnp.integer)
    if not numeric or tuple(lam.shape) not in ((), (batch,)):
        _checks.fail(
            fn,
            f"`lam` must be a real scalar or a [{batch}] float array, got {lam.dtype} with "
            f"shape {tuple(lam.shape)}",
        )
    values = _checks.concrete_array(lam)
    if values is not None:
        bad = np.flatnonzero(~((values >= 0.0) & (values <= 1.0)))  # NaN is out of range too
        if bad.size and lam.ndim == 0:
            _checks.fail(fn, f"`lam` must lie in [0.0, 1.0], got {values.item()!r}")
        if bad.size:
            i = int(bad[0])
            _checks.fail(
                fn,
                f"`lam` must lie in [0.0, 1.0] for every sample, got lam[{i}] = {values[i]!s} "
                f"({bad.size} out of range)",
            )
    return jnp.asarray(lam, jnp.float32)


def imix_npair_loss(
    z_mix: ArrayLike,
    z_b: ArrayLike,
    *,
    lam: ArrayLike,
    perm: ArrayLike,
    temperature: float,
    negatives: ArrayLike | None = None,
    negatives_where: ArrayLike | None = None,
    normalize: bool = True,
    axis_name: str | None = None,
) -> jax.Array:
    r"""N-pair contrastive loss on mixed queries with i-Mix's virtual soft labels.

    Sample ``i`` of the first view was mixed as ``lam * x_i + (1 - lam) * x_perm[i]``; its
    virtual label is ``lam`` on key ``i`` and ``1 - lam`` on key ``perm[i]``:

    .. math::
        \ell_i = -\lambda \log p_{i,i} - (1-\lambda) \log p_{i,\pi(i)},\qquad
        p_{i,n} = \mathrm{softmax}_n(s(z_i, \tilde z_n)/\tau).

    With ``lam = 1`` this is one-directional InfoNCE (the plain N-pair loss).

    MoCo (v2) with i-Mix: ``z_b`` are the momentum encoder's keys of this batch and
    ``negatives`` its queue of ``K`` past keys. The logits are ``[batch, batch + K]``: the
    batch's own keys stay among them, so that the virtual label's ``1 - lam`` has a target
    (key ``perm[i]`` of this batch). With ``lam = 1`` this is MoCo's loss with the batch's
    other keys as extra negatives.

    Args:
      z_mix: ``[batch, dim]`` embeddings of the mixed view (queries).
      z_b: ``[batch, dim]`` embeddings of the other, unmixed view (keys).
      lam: mixing coefficient in ``[0, 1]``: a scalar (one per batch, as in the paper's
        Algorithm 1; a Python int such as ``1`` is fine) or ``[batch]`` (one per sample).
        Checked when concrete (outside ``jit``); under ``jit`` a value outside ``[0, 1]``
        is used as given.
      perm: ``[batch]`` integer permutation used for mixing (``jaxcl.mixers.imix_mixup``).
        Under ``axis_name`` it indexes this device's rows, since mixing happens per shard.
        Checked when concrete: an entry outside ``[0, batch)`` raises ``ValueError``. Under
        ``jit`` it cannot be checked, and the partner index into the (global) keys follows
        JAX's gather: on one device a negative index counts from the end (under
        ``axis_name`` it reads the previous device's rows), one past the end reads NaN.
      temperature: ``tau > 0``.
      negatives: optional ``[K, dim]`` extra keys (MoCo's queue), never positives. Inside
        ``shard_map`` pass the whole queue on every device (it is not gathered).
      negatives_where: optional ``[K]`` booleans, the rows of ``negatives`` that count (a
        queue not yet filled); the others are left out of the softmax.
      normalize: l2-normalise rows first (cosine similarity); ``negatives`` too.
      axis_name: contrast against the global batch of keys inside ``shard_map``/``pmap``.

    Returns:
      Scalar float32 loss, the mean over the (global) batch.

    Example:
      >>> import jax, jaxcl
      >>> x = jax.random.normal(jax.random.key(0), (8, 5))
      >>> x_mix, lam, perm = jaxcl.mixers.imix_mixup(jax.random.key(1), x, alpha=1.0)
      >>> z_mix, z_b = x_mix[:, :4], x[:, :4]   # stand-ins for encoder outputs
      >>> loss = jaxcl.losses.imix_npair_loss(z_mix, z_b, lam=lam, perm=perm, temperature=0.2)

    References:
      Lee et al., "i-Mix: A Domain-Agnostic Strategy for Contrastive Representation
      Learning", ICLR 2021, Algorithm 1; Sohn, "Improved Deep Metric Learning with Multi-class
      N-pair Loss Objective", NeurIPS 2016.
    """
    fn = "imix_npair_loss"
    z_mix = _checks.embeddings(fn, "z_mix", z_mix)
    z_b = _checks.embeddings(fn, "z_b", z_b)
    _checks.same_shape(fn, "z_mix", z_mix, "z_b", z_b)
    _checks.positive(fn, "temperature", temperature)
    batch = z_mix.shape[0]
    if negatives is None:
        _common.check_negatives(fn, batch, axis_name)
    lam = _check_lam(fn, lam, batch)
    perm = _checks.index_array(
        fn, "perm", perm, (batch,), size=batch, what="row indices of this batch (or shard)"
    )
    normalize = _checks.boolean(fn, "normalize", normalize)
    prep = _common.l2_normalize if normalize else (lambda z: z.astype(jnp.float32))
    q, k = prep(z_mix), prep(z_b)
    k_all = _common.gather_rows(k, axis_name)
    logits = (q @ k_all.T) / temperature
    if negatives is not None:
        negatives = _checks.embeddings(fn, "negatives", negatives)
        if negatives.shape[1] != q.shape[1]:
            _checks.fail(
                fn,
                f"`negatives` must have the embeddings' width {q.shape[1]}, got shape "
                f"{tuple(negatives.shape)}",
            )
        valid = _checks.bool_mask(fn, "negatives_where", negatives_where, negatives.shape[0])
        negatives = _common.zero_masked_rows(negatives, valid)
        extra = (q @ prep(negatives).T) / temperature
        if valid is not None:
            extra = jnp.where(valid[None, :], extra, -jnp.inf)
        logits = jnp.concatenate([logits, extra], axis=1)
    elif negatives_where is not None:
        _checks.fail(fn, "`negatives_where` was given without `negatives`")
    log_p = jax.nn.log_softmax(logits, axis=1)
    offset = _common.row_offset(batch, axis_name)
    own = offset + jnp.arange(batch)
    partner = offset + perm.astype(jnp.int32)
    log_p_own = jnp.take_along_axis(log_p, own[:, None], axis=1)[:, 0]
    log_p_partner = jnp.take_along_axis(log_p, partner[:, None], axis=1)[:, 0]
    per_row = -(lam * log_p_own + (1.0 - lam) * log_p_partner)
    total, count = _common.anchor_sum(per_row, None)
    return _common.global_mean(total, count, axis_name)


def imix_byol_loss(
    p: ArrayLike,
    z: ArrayLike,
    *,
    lam: ArrayLike,
    perm: ArrayLike,
    axis_name: str | None = None,
) -> jax.Array:
    r"""BYOL's regression loss on mixed queries with i-Mix's virtual target.

    The online network's prediction ``p_i`` of the mixed input ``lam * x_i + (1 - lam) *
    x_perm[i]`` is pulled towards the target network's projections of both sources:

    .. math::
        \ell_i = 2 - 2\,\big(\lambda\, s(p_i, z_i) + (1-\lambda)\, s(p_i, z_{\pi(i)})\big),

    ``s`` the cosine similarity (the i-Mix code's ``lam * logits.diag() + (1 - lam) *
    logits[i, perm[i]]`` with ``logits = normalize(p) @ normalize(z).T``). With ``lam = 1``
    this is BYOL's loss of one direction; symmetrise by swapping the views.

    Args:
      p: ``[batch, dim]`` online predictions of the mixed view.
      z: ``[batch, dim]`` target projections of the other, unmixed view (no gradient is
        taken through them by BYOL; stop it before the call).
      lam: mixing coefficient in ``[0, 1]``: a scalar or ``[batch]`` (checked when concrete).
      perm: ``[batch]`` permutation used for mixing; under ``axis_name`` it indexes this
        device's rows (mixing happens per shard), so no gather is needed. Checked when
        concrete; under ``jit`` an entry past the end reads NaN, so the loss is NaN rather
        than silently clamped, and a negative one counts from the end (as in
        :func:`imix_npair_loss`).
      axis_name: average over the global batch inside ``shard_map``.

    Returns:
      Scalar float32 loss, the mean over the (global) batch.

    Example:
      >>> import jax, jax.numpy as jnp, jaxcl
      >>> p = jax.random.normal(jax.random.key(0), (8, 4))
      >>> round(float(jaxcl.losses.imix_byol_loss(p, p, lam=1, perm=jnp.arange(8))), 5)
      0.0

    References:
      Grill et al., "Bootstrap Your Own Latent", NeurIPS 2020, Eq. 2; Lee et al., i-Mix,
      ICLR 2021 (BYOL variant, code kibok90/imix).
    """
    fn = "imix_byol_loss"
    p = _checks.embeddings(fn, "p", p)
    z = _checks.embeddings(fn, "z", z)
    _checks.same_shape(fn, "p", p, "z", z)
    batch = p.shape[0]
    lam = _check_lam(fn, lam, batch)
    perm = _checks.index_array(
        fn, "perm", perm, (batch,), size=batch, what="row indices of this batch (or shard)"
    )
    p, z = _common.l2_normalize(p), _common.l2_normalize(z)
    own = jnp.sum(p * z, axis=-1)
    partners = jnp.take(z, perm.astype(jnp.int32), axis=0, mode="fill", fill_value=jnp.nan)
    partner = jnp.sum(p * partners, axis=-1)
    per_row = 2.0 - 2.0 * (lam * own + (1.0 - lam) * partner)
    total, count = _common.anchor_sum(per_row, None)
    return _common.global_mean(total, count, axis_name)
