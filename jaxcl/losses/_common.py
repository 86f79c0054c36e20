"""Pieces shared by the contrastive losses: normalisation, cross-device gathers, means."""

from __future__ import annotations

import jax
import jax.numpy as jnp

from jaxcl import _checks

# Squared-norm floor for l2 normalisation: a zero embedding maps to zero instead of NaN, and
# its gradient stays finite (1 / 1e-6 at most).
_NORM_EPS_SQ = 1e-12


def at_least_float32(x: jax.Array) -> jax.Array:
    """``x`` in float32 where it is narrower (bf16, f16); float64 stays float64, so that
    gradient checks by finite differences can run in double precision."""
    return x.astype(jnp.promote_types(x.dtype, jnp.float32))


def l2_normalize(z: jax.Array) -> jax.Array:
    """Rows scaled to unit l2 norm, in float32 (float64 kept); all-zero rows stay zero.

    A row whose norm is below 1e-6 is divided by 1e-6 instead of by its norm (the squared
    norm is floored at 1e-12), so it comes out shorter than unit length: the floor keeps a
    near-zero row's gradient at most 1e6 times the incoming one. Every loss that normalises
    its embeddings is therefore scale-invariant only for rows of norm 1e-6 and above
    (PyTorch's ``F.normalize`` floors the norm at 1e-12 instead, with gradients up to 1e12).

    Example:
      >>> import jax.numpy as jnp
      >>> from jaxcl.losses import l2_normalize
      >>> z = jnp.array([[3.0, 4.0], [3e-7, 4e-7], [0.0, 0.0]])
      >>> jnp.linalg.norm(l2_normalize(z), axis=1).round(3).tolist()
      [1.0, 0.5, 0.0]
    """
    z = at_least_float32(z)
    sq = jnp.sum(z * z, axis=-1, keepdims=True)
    return z * jax.lax.rsqrt(jnp.maximum(sq, _NORM_EPS_SQ))


def check_pair(fn: str, z_a, z_b, names: tuple[str, str] = ("z_a", "z_b")):
    """Both views: non-empty ``[batch, dim]`` floating arrays of one shape (``names``: the
    caller's argument names, for the messages)."""
    z_a = _checks.embeddings(fn, names[0], z_a)
    z_b = _checks.embeddings(fn, names[1], z_b)
    _checks.same_shape(fn, names[0], z_a, names[1], z_b)
    return z_a, z_b


def check_negatives(fn: str, batch: int, axis_name) -> None:
    """A contrastive loss over one device's batch needs two rows: with one there is no
    negative, and the loss is 0 with a zero gradient (training would silently stand still)."""
    if axis_name is None and batch < 2:
        _checks.fail(
            fn,
            "a batch of one row has no negatives (the loss would be 0 with a zero gradient); "
            "pass at least 2 rows",
        )


def check_where(fn: str, where, batch: int):
    """An optional ``[batch]`` boolean mask of the rows that take part."""
    return _checks.bool_mask(fn, "where", where, batch)


def zero_masked_rows(z: jax.Array, mask) -> jax.Array:
    """``z`` with the rows outside ``mask`` set to 0, before any arithmetic touches them.

    Masked rows (padding) may hold anything, NaN and inf included. Masking them only at the
    end, with ``jnp.where`` on the per-row losses, keeps the value right but not the
    gradient: reverse mode differentiates both branches, and a NaN row's partial derivatives
    (0 * NaN) reach every real row it was multiplied with. Selecting zeros first cuts that
    path: the masked rows' gradient is exactly 0 (a select, never a multiplication by 0) and
    the real rows' gradients equal those of the batch without the masked rows.
    """
    if mask is None:
        return z
    return jnp.where(mask[:, None], z, jnp.zeros((), z.dtype))


def varying_axes(*xs) -> tuple:
    """The mesh axes along which any of ``xs`` varies inside ``shard_map`` (() outside, or
    where JAX cannot tell)."""
    axes = set()
    for x in xs:
        try:
            aval = jax.typeof(x)
        except TypeError:
            continue
        vma = getattr(aval, "vma", None)  # older JAX; 0.10: manual_axis_type.varying
        if vma is None:
            vma = getattr(getattr(aval, "manual_axis_type", None), "varying", None)
        axes |= set(vma or ())
    return tuple(sorted(axes))


def as_varying(x, axes: tuple):
    """``x`` typed as varying along ``axes`` inside ``shard_map`` (a ``lax.scan`` carry must
    have the varying axes of what the body makes of it)."""
    missing = tuple(a for a in axes if a not in varying_axes(x))
    return jax.lax.pcast(x, missing, to="varying") if missing else x


def gather_rows(x: jax.Array, axis_name) -> jax.Array:
    """All devices' rows along ``axis_name``, in device order (identity when None)."""
    if axis_name is None:
        return x
    return jax.lax.all_gather(x, axis_name, axis=0, tiled=True)


def row_offset(batch: int, axis_name):
    """Index of this device's first row in the gathered (global) batch."""
    if axis_name is None:
        return 0
    return jax.lax.axis_index(axis_name) * batch


def global_mean(total: jax.Array, count: jax.Array, axis_name) -> jax.Array:
    """``total / count`` summed over devices first, so every device returns the global mean.

    Under ``shard_map`` the gradient of this value with respect to each device's inputs equals
    the matching rows of the single-device gradient on the global batch. Under ``pmap`` (no
    varying-axis typing: the transpose of ``psum`` is again ``psum``) that gradient comes out
    multiplied by the number of devices; divide by ``jax.lax.psum(1, axis_name)`` there.
    """
    total = total.astype(jnp.float32)
    count = jnp.asarray(count, jnp.float32)
    if axis_name is not None:
        total = jax.lax.psum(total, axis_name)
        count = jax.lax.psum(count, axis_name)
    # An all-masked batch has no anchors: return 0 rather than 0/0.
    return jnp.where(count > 0, total / jnp.maximum(count, 1.0), 0.0)


def masked_logits(logits: jax.Array, valid_columns) -> jax.Array:
    """Logits with the columns of masked-out rows set to -inf (never multiplied by 0)."""
    if valid_columns is None:
        return logits
    return jnp.where(valid_columns[None, :], logits, -jnp.inf)


def anchor_sum(per_row: jax.Array, where) -> tuple[jax.Array, jax.Array]:
    """Sum of per-row losses over the valid anchors, and how many there are."""
    if where is None:
        return jnp.sum(per_row), jnp.asarray(per_row.shape[0], jnp.float32)
    return jnp.sum(jnp.where(where, per_row, 0.0)), jnp.sum(where.astype(jnp.float32))
