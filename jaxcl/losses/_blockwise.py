"""Exact InfoNCE-type losses whose memory is linear in the batch (blockwise, as Inf-CL).

The dense losses hold the ``[batch, candidates]`` logits, and reverse mode keeps them (or
their softmax) for the backward pass: quadratic memory, 40 GB at 10^5 x 10^5 in float32.
Here the only thing a loss needs from those logits, each anchor's log-partition
``lse_i = log sum_j exp(a_i . c_j / t)``, is accumulated one tile of at most
``[block, block]`` (no larger than the batch: :func:`tile_size`) at a time (an online
logsumexp over candidate blocks, for one block of anchors after another), and the backward
pass recomputes every tile from ``a``, ``c`` and the saved ``lse`` instead of storing it
(``p_ij = exp(a_i . c_j / t - lse_i)``; ``dA = P C / t``, ``dC = P^T A / t``). Memory: the
inputs, their gradients and ``lse`` (O((N + M) d)) plus one tile; time: the dense product
once forward and three times backward (the tile recomputed, then ``P C`` and ``P^T A``), in
tiles. The gradient is a custom VJP: reverse mode (``jax.grad``, ``jax.vjp``, also
forward-over-reverse such as ``jax.jacfwd(jax.grad(f))``) works; forward mode on the loss
itself (``jax.jvp``, ``jax.jacfwd``, ``jax.linearize``) raises.

Reference: Cheng et al., "Breaking the Memory Barrier: Near Infinite Batch Size Scaling for
Contrastive Loss" (Inf-CL), 2024, whose tiling across and within devices this follows on one
device (across devices, the candidates are all-gathered first, as the dense losses do).
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp

from jaxcl.losses import _common


def _pad_rows(x, rows: int, value=0):
    extra = rows - x.shape[0]
    if extra == 0:
        return x
    return jnp.concatenate([x, jnp.full((extra,) + x.shape[1:], value, x.dtype)], axis=0)


def _tiles(x, block: int):
    return x.reshape((x.shape[0] // block, block) + x.shape[1:])


def tile_size(size: int, block: int) -> int:
    """Rows per tile of ``size`` rows: at most ``block``, in as few tiles as that allows, of
    sizes as even as possible, so that little is padded (8 rows with ``block`` 4096: one tile
    of 8, not 4096; 1025 rows with ``block`` 1024: two tiles of 513, not 2 x 1024)."""
    count = -(-size // block)
    return -(-size // count)


def _tile_mask(valid_j, exclude_i, j0):
    """Which of a tile's logits count: a valid candidate that is not the anchor's excluded
    column (itself, for NT-Xent's same-view candidates)."""
    cols = j0 + jnp.arange(valid_j.shape[0])
    return valid_j[None, :] & (cols[None, :] != exclude_i[:, None])


def _row_lse(a_i, exclude_i, c_tiles, valid_tiles, starts, inv_t):
    """Log-partition of one block of anchors over all candidate tiles (online logsumexp)."""

    def step(carry, tile):
        m, s = carry
        c_j, valid_j, j0 = tile
        mask = _tile_mask(valid_j, exclude_i, j0)
        logits = jnp.where(mask, (a_i @ c_j.T) * inv_t, -jnp.inf)
        m_new = jnp.maximum(m, jnp.max(logits, axis=1))
        shift = jnp.where(jnp.isfinite(m_new), m_new, 0.0)
        s = s * jnp.exp(m - shift) + jnp.sum(jnp.exp(logits - shift[:, None]), axis=1)
        return (m_new, s), None

    init = (jnp.full(a_i.shape[:1], -jnp.inf, a_i.dtype), jnp.zeros(a_i.shape[:1], a_i.dtype))
    init = jax.tree.map(functools.partial(_common.as_varying, axes=_common.varying_axes(a_i)), init)
    (m, s), _ = jax.lax.scan(step, init, (c_tiles, valid_tiles, starts))
    return jnp.where(s > 0, jnp.where(jnp.isfinite(m), m, 0.0) + jnp.log(s), -jnp.inf)


def _lse_all(a, c, valid, exclude, inv_t, tiles):
    row_block, col_block = tiles
    c_tiles, valid_tiles = _tiles(c, col_block), _tiles(valid, col_block)
    starts = jnp.arange(c_tiles.shape[0]) * col_block

    def one(args):
        a_i, exclude_i = args
        return _row_lse(a_i, exclude_i, c_tiles, valid_tiles, starts, inv_t)

    return jax.lax.map(one, (_tiles(a, row_block), _tiles(exclude, row_block))).reshape(-1)


@functools.partial(jax.custom_vjp, nondiff_argnums=(6,))
def _weighted_lse_sum(a, c, weights, valid, exclude, inv_t, tiles):
    """``sum_i weights_i * lse_i`` (rows with weight 0 add nothing, whatever their lse)."""
    lse = _lse_all(a, c, valid, exclude, inv_t, tiles)
    return jnp.sum(jnp.where(weights > 0, weights * lse, 0.0))


def _fwd(a, c, weights, valid, exclude, inv_t, tiles):
    lse = _lse_all(a, c, valid, exclude, inv_t, tiles)
    total = jnp.sum(jnp.where(weights > 0, weights * lse, 0.0))
    return total, (a, c, weights, valid, exclude, inv_t, lse)


def _bwd(tiles, res, g):
    a, c, weights, valid, exclude, inv_t, lse = res
    row_block, col_block = tiles
    c_tiles, valid_tiles = _tiles(c, col_block), _tiles(valid, col_block)
    starts = jnp.arange(c_tiles.shape[0]) * col_block

    def row_step(carry, row):
        d_c, d_inv_t = carry
        a_i, w_i, lse_i, exclude_i = row
        scale = g * jnp.where(w_i > 0, w_i, 0.0)

        def col_step(carry_i, tile):
            d_a_i, d_inv = carry_i
            c_j, valid_j, j0 = tile
            s = a_i @ c_j.T
            mask = _tile_mask(valid_j, exclude_i, j0) & (w_i > 0)[:, None]
            p = jnp.where(mask, jnp.exp(s * inv_t - lse_i[:, None]), 0.0)
            weighted = scale[:, None] * p  # d total / d logit_ij
            d_a_i = d_a_i + inv_t * (weighted @ c_j)
            d_inv = d_inv + jnp.sum(weighted * s)
            return (d_a_i, d_inv), inv_t * (weighted.T @ a_i)

        (d_a_i, d_inv_t), d_c_tiles = jax.lax.scan(
            col_step,
            (_common.as_varying(jnp.zeros_like(a_i), axes), d_inv_t),
            (c_tiles, valid_tiles, starts),
        )
        return (d_c + d_c_tiles.reshape(d_c.shape), d_inv_t), d_a_i

    rows = tuple(_tiles(x, row_block) for x in (a, weights, lse, exclude))
    axes = _common.varying_axes(a, g)
    init = (
        _common.as_varying(jnp.zeros_like(c), axes),
        _common.as_varying(jnp.zeros((), a.dtype), axes),
    )
    (d_c, d_inv_t), d_a = jax.lax.scan(row_step, init, rows)
    # weights, valid and exclude are masks: not differentiated
    return d_a.reshape(a.shape), d_c, None, None, None, d_inv_t.astype(inv_t.dtype)


_weighted_lse_sum.defvjp(_fwd, _bwd)


def weighted_lse_sum(a, c, weights, valid=None, exclude=None, *, inv_t, block: int):
    """``sum_i weights_i * logsumexp_j(a_i . c_j * inv_t)`` over the valid candidates ``j``
    other than ``exclude[i]``, in tiles of at most ``block`` x ``block`` (:func:`tile_size`:
    no larger than the batch) recomputed in the backward pass.

    ``a``: ``[n, d]`` float32 (or float64) anchors; ``c``: ``[m, d]`` candidates of the same
    dtype, in which everything is computed; ``weights``:
    ``[n]`` (0 drops an anchor: its gradient is exactly 0); ``valid``: optional ``[m]`` bool;
    ``exclude``: optional ``[n]`` int column per anchor left out (-1: none). Differentiable in
    ``a``, ``c`` and ``inv_t``. Rows are padded to whole tiles (padded anchors get weight 0,
    padded candidates are invalid).
    """
    n, m = a.shape[0], c.shape[0]
    tiles = (tile_size(n, block), tile_size(m, block))
    rows, cols = -(-n // tiles[0]) * tiles[0], -(-m // tiles[1]) * tiles[1]
    valid = jnp.ones((m,), bool) if valid is None else valid
    exclude = jnp.full((n,), -1, jnp.int32) if exclude is None else exclude.astype(jnp.int32)
    args = (
        _pad_rows(a, rows),
        _pad_rows(c, cols),
        _pad_rows(weights.astype(a.dtype), rows),
        _pad_rows(valid, cols, False),
        _pad_rows(exclude, rows, -1),
        jnp.asarray(inv_t, a.dtype),
    )
    # inside shard_map every input is made to vary alike (pcast transposes to psum)
    axes = _common.varying_axes(*args)
    return _weighted_lse_sum(*(_common.as_varying(x, axes) for x in args), tiles)


def _weights(where, n: int):
    return jnp.ones((n,), jnp.float32) if where is None else where.astype(jnp.float32)


def _positive_sum(a, b, where, inv_t):
    per_row = jnp.sum(a * b, axis=1)
    return inv_t * jnp.sum(per_row if where is None else jnp.where(where, per_row, 0.0))


def infonce_terms(a, b, *, temperature, where, axis_name, block: int):
    """:func:`jaxcl.losses.infonce`'s ``(sum over valid anchors, their count)`` for A -> B,
    blockwise: candidates are all of view B (all-gathered along ``axis_name``)."""
    inv_t = 1.0 / temperature
    b_all = _common.gather_rows(b, axis_name)
    valid_all = None if where is None else _common.gather_rows(where, axis_name)
    weights = _weights(where, a.shape[0])
    lse = weighted_lse_sum(a, b_all, weights, valid_all, inv_t=inv_t, block=block)
    return lse - _positive_sum(a, b, where, inv_t), jnp.sum(weights)


def nt_xent_terms(a, b, a_all, b_all, valid_all, *, temperature, where, axis_name, block: int):
    """:func:`jaxcl.losses.nt_xent`'s terms for anchors ``a``, blockwise: candidates are both
    views' global rows except the anchor itself."""
    inv_t = 1.0 / temperature
    n, m = a.shape[0], b_all.shape[0]
    candidates = jnp.concatenate([b_all, a_all], axis=0)
    valid = None if valid_all is None else jnp.concatenate([valid_all, valid_all])
    itself = m + _common.row_offset(n, axis_name) + jnp.arange(n)
    weights = _weights(where, n)
    lse = weighted_lse_sum(a, candidates, weights, valid, itself, inv_t=inv_t, block=block)
    return lse - _positive_sum(a, b, where, inv_t), jnp.sum(weights)
