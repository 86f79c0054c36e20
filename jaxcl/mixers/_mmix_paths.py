"""The machinery of m-Mix's mixers (:mod:`jaxcl.mixers._mmix`): how a row's weights follow
from its partners' scores (the three rules), and the sparse (-wp, over edges) and dense (-op,
in row blocks) paths that apply them."""

from __future__ import annotations

import jax
import jax.numpy as jnp

from jaxcl._edge_slabs import edge_pattern
from jaxcl._slabs import sparse_matmul

# -- the weighting rules, over a "row" of candidate partners ------------------------------
#
# Each rule gets the partners' scores ``s`` (similarity / temperature), which of them count
# (``valid``), the row's own score, and reductions over a row (dense: an axis; sparse: a
# segment of the edges that share a receiver). It returns the partners' weights and the
# row's own weight.


def _row_max(s, valid, ops):
    """Per-row max over the valid partners, 0 where there are none (a safe shift)."""
    m = ops.max(jnp.where(valid, s, -jnp.inf))
    return jax.lax.stop_gradient(jnp.where(jnp.isfinite(m), m, 0.0))


def _masked_exp(x, valid):
    """``exp(x)`` where valid, else 0, with no inf (nor NaN gradient) from the others."""
    return jnp.where(valid, jnp.exp(jnp.where(valid, x, 0.0)), 0.0)


def softmax_with_self(s, valid, s_self, ops):
    # Shift by the largest score in the softmax, the row's own included. Not by the safe 0 of
    # `_row_max`: a row with no partners then has exp(s_self - 0), which underflows to 0/0 once
    # s_self < -87 (a low mixing temperature with a diversity loss that drives cos(q, k) to -1).
    partners = jnp.where(valid, s, -jnp.inf)
    m = jax.lax.stop_gradient(jnp.maximum(ops.max(partners), s_self))
    e = _masked_exp(s - ops.expand(m), valid)
    e_self = jnp.exp(s_self - m)
    den = ops.sum(e) + e_self
    return e / ops.expand(den), e_self / den


def fixed_self(self_weight):
    def rule(s, valid, s_self, ops):
        del s_self
        m = _row_max(s, valid, ops)
        e = _masked_exp(s - ops.expand(m), valid)
        den = ops.sum(e)
        has = ops.sum(valid.astype(jnp.float32)) > 0
        w = (1.0 - self_weight) * e / ops.expand(jnp.where(has, den, 1.0))
        return w, jnp.where(has, self_weight, 1.0)

    return rule


def binary(weight):
    def rule(s, valid, s_self, ops):
        del s_self
        m = ops.max(jnp.where(valid, s, -jnp.inf))
        best = valid & (s == ops.expand(m))
        big = jnp.iinfo(jnp.int32).max
        # ties: the lowest partner (node index) on both paths; then, on the sparse path, the
        # first of that partner's edges, so that a repeated edge is not picked twice
        lowest = ops.min(jnp.where(best, ops.partner, big))
        best &= ops.partner == ops.expand(lowest)
        first = ops.min(jnp.where(best, ops.index, big))
        pick = best & (ops.index == ops.expand(first))
        has = ops.sum(valid.astype(jnp.float32)) > 0
        return weight * pick.astype(s.dtype), jnp.where(has, 1.0 - weight, 1.0)

    return rule


def with_dropout(rule, key, rate: float):
    """``rule`` with every weight, the row's own included, zeroed with probability ``rate``
    and the kept ones scaled by ``1 / (1 - rate)`` (PyTorch's ``F.dropout`` on the attention
    matrix, as m-Mix's node script): a row's weights then sum to 1 only in expectation."""

    def dropped(s, valid, s_self, ops):
        w, w_self = rule(s, valid, s_self, ops)
        k_w, k_self = jax.random.split(ops.key(key))
        scale = 1.0 / (1.0 - rate)
        keep = jax.random.bernoulli(k_w, 1.0 - rate, w.shape)
        keep_self = jax.random.bernoulli(k_self, 1.0 - rate, w_self.shape)
        return jnp.where(keep, w * scale, 0.0), jnp.where(keep_self, w_self * scale, 0.0)

    return dropped


class _DenseOps:
    """Reductions over the last axis of a ``[rows, N]`` block (``first``: its first row)."""

    def __init__(self, n_cols: int, first=0):
        self.index = jnp.arange(n_cols, dtype=jnp.int32)[None, :]
        self.partner = self.index  # the column is the partner
        self.first = first

    def key(self, key):
        """The block's own key (a block's draws depend on its rows)."""
        return jax.random.fold_in(key, self.first)

    max = staticmethod(lambda x: jnp.max(x, axis=-1))
    min = staticmethod(lambda x: jnp.min(x, axis=-1))
    sum = staticmethod(lambda x: jnp.sum(x, axis=-1))
    expand = staticmethod(lambda v: v[:, None])


class _SegmentOps:
    """Reductions over the edges that share a receiver (``partner``: each edge's sender)."""

    def __init__(self, senders, receivers, n: int):
        self.receivers, self.n = receivers, n
        self.index = jnp.arange(receivers.shape[0], dtype=jnp.int32)
        self.partner = senders.astype(jnp.int32)

    @staticmethod
    def key(key):
        return key

    def max(self, x):
        return jax.ops.segment_max(x, self.receivers, self.n)

    def min(self, x):
        return jax.ops.segment_min(x, self.receivers, self.n)

    def sum(self, x):
        return jax.ops.segment_sum(x, self.receivers, self.n)

    def expand(self, v):
        return v[self.receivers]


# -- the two paths --------------------------------------------------------------------------


def mix_sparse(
    z,
    senders,
    receivers,
    edge_mask,
    where,
    pair_sim,
    self_sim,
    rule,
    threshold,
    temperature,
    *,
    slabs=False,
):
    """``pair_sim(receivers, senders, pattern)``: the edges' similarities, from the slab
    ``pattern`` of the partner edges when ``slabs`` (else ``pattern`` is None)."""
    n = z.shape[0]
    valid = senders != receivers
    if edge_mask is not None:
        valid &= edge_mask
    if where is not None:
        valid &= where[senders] & where[receivers]
    pattern = edge_pattern(senders, receivers, n, edge_mask=valid) if slabs else None
    sim = pair_sim(receivers, senders, pattern)
    if threshold is not None:
        valid &= sim >= threshold
    ops = _SegmentOps(senders, receivers, n)
    w, w_self = rule(sim / temperature, valid, self_sim / temperature, ops)
    if where is not None:
        w_self = jnp.where(where, w_self, 1.0)
    if slabs:
        mixed = sparse_matmul(pattern.with_values(w), z)
    else:
        mixed = jax.ops.segment_sum(w[:, None] * z[senders], receivers, n)
    return mixed + w_self[:, None] * z


def mix_dense(z, where, block_sim, rule, threshold, temperature, block_size):
    n = z.shape[0]
    cols = jnp.arange(n)

    def block(rows):
        ops = _DenseOps(n, rows[0])
        # rows past N pad the last block: they read row N - 1 and are dropped at the end
        clipped = jnp.minimum(rows, n - 1)
        sim = block_sim(clipped)  # [B, N]
        self_sim = jnp.take_along_axis(sim, clipped[:, None], axis=1)[:, 0]
        valid = (rows[:, None] != cols[None, :]) & (rows[:, None] < n)
        if where is not None:
            inside = where[clipped] & (rows < n)
            valid &= inside[:, None] & where[None, :]
        if threshold is not None:
            valid &= sim >= threshold
        w, w_self = rule(sim / temperature, valid, self_sim / temperature, ops)
        if where is not None:
            w_self = jnp.where(inside, w_self, 1.0)
        return w @ z + w_self[:, None] * z[clipped]

    if block_size is None or block_size >= n:
        return block(cols)
    blocks = -(-n // block_size)
    rows = jnp.arange(blocks * block_size).reshape(blocks, block_size)
    out = jax.lax.map(jax.checkpoint(block), rows)
    return out.reshape(blocks * block_size, -1)[:n]
