"""InfoNCE (ESCo Eq. 1) and SimCLR's NT-Xent (DACL Algorithm 1)."""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np
from jax.typing import ArrayLike

from jaxcl import _checks
from jaxcl.losses import _blockwise, _common


def _cross_view_terms(a, b, *, temperature, where, axis_name):
    """Sum over valid anchors a_i of ``logsumexp_j(a_i.b_j / t) - a_i.b_i / t``, and their count."""
    b_all = _common.gather_rows(b, axis_name)
    valid_all = None if where is None else _common.gather_rows(where, axis_name)
    logits = (a @ b_all.T) / temperature
    own = _common.row_offset(a.shape[0], axis_name) + jnp.arange(a.shape[0])
    positive = jnp.take_along_axis(logits, own[:, None], axis=1)[:, 0]
    per_row = jax.nn.logsumexp(_common.masked_logits(logits, valid_all), axis=1) - positive
    return _common.anchor_sum(per_row, where)


def infonce(
    z_a: ArrayLike,
    z_b: ArrayLike,
    *,
    temperature: float,
    symmetric: bool = False,
    normalize: bool = True,
    where: ArrayLike | None = None,
    axis_name: str | None = None,
    block_size: int | None = None,
) -> jax.Array:
    r"""InfoNCE with cross-view negatives, averaged over the batch.

    For anchor ``i`` of view A the positive is ``z_b[i]`` and the candidates are all rows of
    view B (ESCo Eq. 1, divided by the batch size):

    .. math::
        \ell_i = -\log \frac{\exp(a_i^\top b_i / \tau)}{\sum_j \exp(a_i^\top b_j / \tau)}

    Args:
      z_a: ``[batch, dim]`` embeddings of view A (any float dtype; computed in float32).
      z_b: ``[batch, dim]`` embeddings of view B; row ``i`` is the positive of ``z_a[i]``.
      temperature: softmax temperature ``tau > 0``.
      symmetric: if True, average the A->B and B->A directions (``(L_A + L_B) / 2``).
      normalize: l2-normalise the rows first (cosine similarity), as SimCLR and ESCo do.
      where: optional ``[batch]`` boolean mask; masked rows are neither anchors nor
        candidates (e.g. padding). They may hold anything, NaN and inf included: they are
        replaced by zeros before any arithmetic, so their gradient is exactly 0 and the
        other rows' values and gradients are those of the batch without them.
      axis_name: inside ``shard_map``/``pmap`` over a batch-sharded axis, contrast against the
        global batch (view B is all-gathered) and return the global mean on every device.
        Under ``pmap`` divide gradients by the axis size (see ``jaxcl.losses`` docs).
      block_size: None (default) holds the ``[batch, global batch]`` logits, the fastest
        while they fit; an int computes the same loss and gradients exactly in tiles of
        ``block_size`` anchors by ``block_size`` candidates (fewer where the batch is
        smaller), recomputed in the backward pass (Inf-CL's scheme): memory linear in the
        batch (see ``jaxcl.losses._blockwise``). Its gradient is a custom VJP: reverse mode
        (``jax.grad``, ``jax.vjp``) and forward-over-reverse (``jax.jacfwd(jax.grad(f))``)
        work; forward mode (``jax.jvp``, ``jax.jacfwd``, ``jax.linearize``) raises.

    Returns:
      Scalar float32 loss.

    Example:
      >>> import jax, jaxcl
      >>> z_a, z_b = jax.random.normal(jax.random.key(0), (2, 8, 4))
      >>> loss = jaxcl.losses.infonce(z_a, z_b, temperature=0.5)
      >>> tiled = jaxcl.losses.infonce(z_a, z_b, temperature=0.5, block_size=4)
      >>> bool(abs(loss - tiled) < 1e-5)
      True

    References:
      van den Oord et al., "Representation Learning with Contrastive Predictive Coding", 2018;
      ESCo (ICLR 2022 submission), Eq. 1.
    """
    fn = "infonce"
    symmetric = _checks.boolean(fn, "symmetric", symmetric)
    normalize = _checks.boolean(fn, "normalize", normalize)
    z_a, z_b = _common.check_pair(fn, z_a, z_b)
    _common.check_negatives(fn, z_a.shape[0], axis_name)
    _checks.positive(fn, "temperature", temperature)
    where = _common.check_where(fn, where, z_a.shape[0])
    z_a, z_b = _common.zero_masked_rows(z_a, where), _common.zero_masked_rows(z_b, where)
    prep = _common.l2_normalize if normalize else (lambda z: z.astype(jnp.float32))
    a, b = prep(z_a), prep(z_b)
    terms = _cross_view_terms
    if block_size is not None:
        block = _checks.positive_int(fn, "block_size", block_size)
        terms = functools.partial(_blockwise.infonce_terms, block=block)
    total, count = terms(a, b, temperature=temperature, where=where, axis_name=axis_name)
    if symmetric:
        total_b, _ = terms(b, a, temperature=temperature, where=where, axis_name=axis_name)
        total = 0.5 * (total + total_b)
    return _common.global_mean(total, count, axis_name)


def _nt_xent_terms(a, b, a_all, b_all, valid_all, *, temperature, where, axis_name):
    """Sum over valid anchors ``a_i`` of l(i, positive) against both views minus self."""
    own = _common.row_offset(a.shape[0], axis_name) + jnp.arange(a.shape[0])
    cross = (a @ b_all.T) / temperature
    same = (a @ a_all.T) / temperature
    is_self = own[:, None] == jnp.arange(a_all.shape[0])[None, :]
    same = jnp.where(is_self, -jnp.inf, same)
    logits = jnp.concatenate(
        [_common.masked_logits(cross, valid_all), _common.masked_logits(same, valid_all)], axis=1
    )
    positive = jnp.take_along_axis(cross, own[:, None], axis=1)[:, 0]
    per_row = jax.nn.logsumexp(logits, axis=1) - positive
    return _common.anchor_sum(per_row, where)


@jax.custom_jvp
def _gram(x: jax.Array) -> jax.Array:
    """``x @ x.T``, whose reverse-mode gradient takes one product instead of two.

    The tangent ``dx x^T + x dx^T`` is written as ``p + p.T`` with ``p = dx @ x.T``; its
    transpose is ``(g + g.T) @ x``, a single product. A JVP rule rather than a VJP rule, so
    forward mode and higher derivatives (MetAug's second-order step) work as usual.
    """
    return x @ x.T


@_gram.defjvp
def _gram_jvp(primals, tangents):
    (x,), (dx,) = primals, tangents
    p = dx @ x.T
    return x @ x.T, p + p.T


# Embedding width from which the Gram matrices' gradient is taken as one product with
# ``g + g.T`` rather than two products: below it, on CPU, materialising the transposed sum of
# a large ``[batch, batch]`` matrix costs more than the product it saves (measured on 2 cores:
# batch 4096 x 128 faster with two products, 2708 x 512 faster with one).
_SYMMETRIC_GRAM_MIN_DIM = 256


def _nt_xent_local(a, b, *, temperature, where):
    """Both directions' sums over valid anchors, and their count, on one device.

    The same terms as two calls of :func:`_nt_xent_terms`, with what the two directions
    share computed once: view B's cross-view similarities are the columns of ``a @ b.T``
    (reduced along axis 0, never transposed), and for wide embeddings each view's
    self-similarity is a symmetric Gram matrix with a one-product gradient. Each logsumexp
    runs over the cross-view and the same-view logits separately and the two are combined,
    rather than over their concatenation (which would be copied). Three ``[batch, batch]``
    products forward and four to six backward instead of four and eight.
    """
    n = a.shape[0]
    gram = _gram if a.shape[1] >= _SYMMETRIC_GRAM_MIN_DIM else (lambda x: x @ x.T)
    cross = (a @ b.T) / temperature  # cross[i, j] = a_i . b_j / t
    positive = jnp.diagonal(cross)
    is_self = jnp.eye(n, dtype=bool)

    def same_view(x):
        same = jnp.where(is_self, -jnp.inf, gram(x) / temperature)
        return jax.nn.logsumexp(_common.masked_logits(same, where), axis=1)

    # Anchor a_i: candidates b_j (row i of cross) and a_j; anchor b_i: a_j (column i), b_j.
    from_a = jax.nn.logsumexp(_common.masked_logits(cross, where), axis=1)
    rows = cross if where is None else jnp.where(where[:, None], cross, -jnp.inf)
    from_b = jax.nn.logsumexp(rows, axis=0)
    total_a, count = _common.anchor_sum(jnp.logaddexp(from_a, same_view(a)) - positive, where)
    total_b, _ = _common.anchor_sum(jnp.logaddexp(from_b, same_view(b)) - positive, where)
    return total_a + total_b, count


# With unit-norm rows every logit lies in [-1/t, 1/t], so each logsumexp can be shifted by the
# constant 1/t instead of its row's maximum: exp(s/t - 1/t) >= exp(-2/t) stays a normal float32
# (> 1e-38, exp(-87)) while 2/t <= 80, i.e. t >= 0.025; below that the generic path is used.
_BOUNDED_MIN_TEMPERATURE = 0.025


# Rows per block of the same-view similarity matrices on the bounded path. ``x @ x.T`` is
# symmetric, so only its blocks on and above the diagonal are computed (``B (B + 1) / 2`` of
# ``B^2``); each block's row sums go to its rows' partition sums and its column sums to its
# columns'. Measured on 2 CPU cores (loss and gradients, one block -> blocks of ~768 rows):
# 2708 x 512 332 -> 280 ms (4 blocks), 4096 x 128 292 -> 256 ms (5), 2048 x 128 72 -> 65 ms
# (3); blocks of 512 rows were no better, and a batch below ~1150 rows stays one block.
_GRAM_BLOCK_ROWS = 768


def _row_blocks(n: int) -> tuple[tuple[int, int], ...]:
    """Static ``(start, stop)`` row ranges of about ``_GRAM_BLOCK_ROWS`` rows covering ``n``."""
    count = max(1, round(n / _GRAM_BLOCK_ROWS))
    edges = np.linspace(0, n, count + 1).round().astype(int).tolist()
    return tuple(zip(edges[:-1], edges[1:], strict=True))


def _same_view_blocks(x, where, blocks, inv_t):
    """The upper blocks of ``exp((x @ x.T - 1) / t)``, zero off the valid pairs and on the
    diagonal.

    Returns ``{(i, j): e_ij}`` for ``i <= j`` and the row sums of the whole symmetric matrix.
    """
    parts = [x[start:stop] for start, stop in blocks]
    exps, sums = {}, [jnp.zeros((stop - start,), jnp.float32) for start, stop in blocks]
    for i, x_i in enumerate(parts):
        for j in range(i, len(parts)):
            e = jnp.exp((x_i @ parts[j].T - 1.0) * inv_t)
            if where is not None:
                (i0, i1), (j0, j1) = blocks[i], blocks[j]
                e = jnp.where(where[i0:i1, None] & where[None, j0:j1], e, 0.0)
            if i == j:
                e = jnp.where(jnp.eye(x_i.shape[0], dtype=bool), 0.0, e)
            sums[i] = sums[i] + jnp.sum(e, axis=1)
            if i != j:
                sums[j] = sums[j] + jnp.sum(e, axis=0)
            exps[i, j] = e
    return exps, jnp.concatenate(sums)


def _same_view_grad(exps, x, r, blocks, inv_t):
    """``M @ x`` for the symmetric ``M = e * (r[:, None] + r[None, :]) / t`` held as the upper
    blocks ``exps`` of ``e``: block ``(i, j)`` serves rows ``i`` and, transposed, rows ``j``."""
    parts = [x[start:stop] for start, stop in blocks]
    scales = [r[start:stop] for start, stop in blocks]
    out = [jnp.zeros_like(part) for part in parts]
    for (i, j), e in exps.items():
        m = e * (scales[i][:, None] + scales[j][None, :]) * inv_t
        out[i] = out[i] + m @ parts[j]
        if i != j:
            out[j] = out[j] + m.T @ parts[i]
    return jnp.concatenate(out)


def _bounded_terms(a, b, where, temperature):
    """Per-anchor pieces of :func:`_nt_xent_bounded` (unit rows ``a``, ``b``).

    Returns the cross-view similarities, their shifted exponentials (zero off the valid
    pairs), each view's same-view exponentials as upper blocks (:func:`_same_view_blocks`),
    the partition sums ``z_a``, ``z_b`` of every anchor, and the valid-anchor indicator ``v``
    (float).
    """
    n = a.shape[0]
    inv_t = 1.0 / temperature
    v = jnp.ones((n,), jnp.float32) if where is None else where.astype(jnp.float32)
    blocks = _row_blocks(n)
    cross = a @ b.T  # cross[i, j] = a_i . b_j
    e_ab = jnp.exp((cross - 1.0) * inv_t)  # exp(s/t - 1/t), in (0, 1]
    if where is not None:
        e_ab = jnp.where(where[:, None] & where[None, :], e_ab, 0.0)
    e_aa, same_a = _same_view_blocks(a, where, blocks, inv_t)
    e_bb, same_b = _same_view_blocks(b, where, blocks, inv_t)
    # Anchor a_i: candidates b_j (row i of cross) and a_j (j != i); anchor b_j: a_i (column j)
    # and b_i (i != j).
    z_a = jnp.sum(e_ab, axis=1) + same_a
    z_b = jnp.sum(e_ab, axis=0) + same_b
    return cross, e_ab, e_aa, e_bb, z_a, z_b, v


def _bounded_total(cross, z_a, z_b, v, temperature):
    """The sum of both directions' losses over the valid anchors, and their count."""
    valid = v > 0
    # log of the partition sums (1 for a masked anchor, which then adds 0).
    log_z = jnp.log(jnp.where(valid, z_a, 1.0)) + jnp.log(jnp.where(valid, z_b, 1.0))
    positive = jnp.diagonal(cross)
    per_anchor = log_z + 2.0 * (1.0 - positive) / temperature  # the shifts 1/t added back
    return jnp.sum(jnp.where(valid, per_anchor, 0.0)), jnp.sum(v)


@functools.partial(jax.custom_jvp, nondiff_argnums=(3,))
def _nt_xent_bounded(a, b, where, temperature):
    """``(sum of both directions' losses over valid anchors, their count)`` for unit rows."""
    cross, _, _, _, z_a, z_b, v = _bounded_terms(a, b, where, temperature)
    return _bounded_total(cross, z_a, z_b, v, temperature)


@_nt_xent_bounded.defjvp
def _nt_xent_bounded_jvp(temperature, primals, tangents):
    """Tangent of the total through the softmax weights computed once in the primal pass.

    With ``r = v / z`` per anchor, the total's derivative in the similarities is
    ``M_ab = (e_ab * (r_a[:, None] + r_b[None, :]) - 2 diag(v)) / t`` for ``a @ b.T`` and
    ``M_aa = e_aa * (r_a[:, None] + r_a[None, :]) / t`` for the symmetric ``a @ a.T`` (its
    two triangles' contributions already summed, as ``e_aa`` is symmetric; ``M_bb``
    likewise, both applied from their upper blocks), so
    ``d total = <da, M_ab b + M_aa a> + <db, M_ab^T a + M_bb b>``: one elementwise pass per
    matrix and four products' worth of work, whatever transformation follows (reverse mode
    transposes the inner products, forward mode evaluates them; both differentiable again,
    for MetAug's second-order step).
    """
    a, b, where = primals
    da, db, _ = tangents
    cross, e_ab, e_aa, e_bb, z_a, z_b, v = _bounded_terms(a, b, where, temperature)
    valid = v > 0
    inv_t = 1.0 / temperature
    r_a = jnp.where(valid, 1.0 / jnp.where(valid, z_a, 1.0), 0.0)
    r_b = jnp.where(valid, 1.0 / jnp.where(valid, z_b, 1.0), 0.0)
    n = a.shape[0]
    diag = jnp.where(jnp.eye(n, dtype=bool), 2.0 * v[:, None], 0.0)
    m_ab = (e_ab * (r_a[:, None] + r_b[None, :]) - diag) * inv_t
    blocks = _row_blocks(n)
    grad_a = m_ab @ b + _same_view_grad(e_aa, a, r_a, blocks, inv_t)
    grad_b = m_ab.T @ a + _same_view_grad(e_bb, b, r_b, blocks, inv_t)
    total, count = _bounded_total(cross, z_a, z_b, v, temperature)
    d_total = jnp.sum(da * grad_a) + jnp.sum(db * grad_b)
    return (total, count), (d_total, jnp.zeros_like(count))


def nt_xent(
    z_a: ArrayLike,
    z_b: ArrayLike,
    *,
    temperature: float,
    normalize: bool = True,
    where: ArrayLike | None = None,
    axis_name: str | None = None,
    block_size: int | None = None,
) -> jax.Array:
    r"""SimCLR's normalised temperature-scaled cross entropy over the 2N views.

    Exactly DACL Algorithm 1, lines 17–21: with the 2N views ``z_1..z_2N`` (view pairs
    ``(2k-1, 2k)``), ``s_ij`` their cosine similarity and

    .. math::
        \ell(i, j) = -\log \frac{\exp(s_{ij}/\tau)}{\sum_{k \ne i} \exp(s_{ik}/\tau)},\qquad
        L = \frac{1}{2N} \sum_{k=1}^{N} [\ell(2k-1, 2k) + \ell(2k, 2k-1)].

    Each anchor is contrasted with its positive and the other ``2N - 2`` views (both views'
    negatives), never with itself.

    Args:
      z_a: ``[batch, dim]`` embeddings of the first views.
      z_b: ``[batch, dim]`` embeddings of the second views; row ``i`` pairs with ``z_a[i]``.
      temperature: ``tau > 0``.
      normalize: l2-normalise rows first, giving cosine similarity (True in Algorithm 1).
      where: optional ``[batch]`` boolean mask of the pairs that take part. Masked pairs
        may hold anything, NaN and inf included; they get a zero gradient and leave the
        value and the other rows' gradients as if they were not in the batch.
      axis_name: contrast against the global batch inside ``shard_map``/``pmap`` (both views
        are all-gathered); every device returns the global mean.
      block_size: None (default): the dense path; an int: the same loss, exact, in tiles of
        ``block_size`` x ``block_size`` logits (fewer where the batch is smaller) recomputed
        in the backward pass, with memory linear in the batch (as :func:`infonce`'s
        ``block_size``). Reverse mode (``jax.grad``, ``jax.vjp``) and forward-over-reverse
        (``jax.jacfwd(jax.grad(f))``) work there; forward mode (``jax.jvp``, ``jax.jacfwd``,
        ``jax.linearize``), which the dense path supports, raises (a custom VJP).

    Returns:
      Scalar float32 loss.

    Example:
      >>> import jax, jaxcl
      >>> z_a, z_b = jax.random.normal(jax.random.key(0), (2, 8, 4))
      >>> loss = jaxcl.losses.nt_xent(z_a, z_b, temperature=0.5)

    References:
      Chen et al., "A Simple Framework for Contrastive Learning of Visual Representations",
      ICML 2020; Verma et al., "Towards Domain-Agnostic Contrastive Learning", ICML 2021,
      Algorithm 1.
    """
    fn = "nt_xent"
    normalize = _checks.boolean(fn, "normalize", normalize)
    z_a, z_b = _common.check_pair(fn, z_a, z_b)
    _common.check_negatives(fn, z_a.shape[0], axis_name)
    _checks.positive(fn, "temperature", temperature)
    where = _common.check_where(fn, where, z_a.shape[0])
    z_a, z_b = _common.zero_masked_rows(z_a, where), _common.zero_masked_rows(z_b, where)
    prep = _common.l2_normalize if normalize else (lambda z: z.astype(jnp.float32))
    a, b = prep(z_a), prep(z_b)
    if block_size is not None:
        block = _checks.positive_int(fn, "block_size", block_size)
        a_all, b_all = _common.gather_rows(a, axis_name), _common.gather_rows(b, axis_name)
        valid_all = None if where is None else _common.gather_rows(where, axis_name)
        kw = dict(temperature=temperature, where=where, axis_name=axis_name, block=block)
        total_a, count = _blockwise.nt_xent_terms(a, b, a_all, b_all, valid_all, **kw)
        total_b, _ = _blockwise.nt_xent_terms(b, a, b_all, a_all, valid_all, **kw)
        return _common.global_mean(total_a + total_b, 2.0 * count, axis_name)
    if axis_name is None:
        if (
            normalize
            and isinstance(temperature, (int, float, np.floating, np.integer))
            and temperature >= _BOUNDED_MIN_TEMPERATURE
        ):
            total, count = _nt_xent_bounded(a, b, where, float(temperature))
        else:
            total, count = _nt_xent_local(a, b, temperature=temperature, where=where)
        return _common.global_mean(total, 2.0 * count, None)
    a_all = _common.gather_rows(a, axis_name)
    b_all = _common.gather_rows(b, axis_name)
    valid_all = None if where is None else _common.gather_rows(where, axis_name)
    kw = dict(temperature=temperature, where=where, axis_name=axis_name)
    total_a, count = _nt_xent_terms(a, b, a_all, b_all, valid_all, **kw)
    total_b, _ = _nt_xent_terms(b, a, b_all, a_all, valid_all, **kw)
    return _common.global_mean(total_a + total_b, 2.0 * count, axis_name)
