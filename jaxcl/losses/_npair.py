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
        JAX's gather: a negative index counts from the end, one past the end reads NaN.
      temperature: ``tau > 0``.
      normalize: l2-normalise rows first (cosine similarity).
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
    lam = _check_lam(fn, lam, batch)
    perm = _checks.index_array(
        fn, "perm", perm, (batch,), size=batch, what="row indices of this batch (or shard)"
    )
    prep = _common.l2_normalize if normalize else (lambda z: z.astype(jnp.float32))
    q, k = prep(z_mix), prep(z_b)
    k_all = _common.gather_rows(k, axis_name)
    log_p = jax.nn.log_softmax((q @ k_all.T) / temperature, axis=1)
    offset = _common.row_offset(batch, axis_name)
    own = offset + jnp.arange(batch)
    partner = offset + perm.astype(jnp.int32)
    log_p_own = jnp.take_along_axis(log_p, own[:, None], axis=1)[:, 0]
    log_p_partner = jnp.take_along_axis(log_p, partner[:, None], axis=1)[:, 0]
    per_row = -(lam * log_p_own + (1.0 - lam) * log_p_partner)
    total, count = _common.anchor_sum(per_row, None)
    return _common.global_mean(total, count, axis_name)
