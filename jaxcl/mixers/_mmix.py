"""m-Mix's hard negatives: each embedding replaced by a weighted mix of many (Zhang et al., 2022).

``z_hat_i = sum_j lambda_ij z_j`` (Eq. 2), with the weights from similarity (mo-mix, Eq. 3 and
5), from similarity in two learned projections (mp-mix, Eq. 4), from Gaussian draws
(random-mix) or the single most similar partner at 0.5 (binary-mix). The partners of ``i`` are
either its graph neighbours (``-wp``, the ``senders``/``receivers`` edges: sparse, never an
``N x N`` array) or every other row (``-op``), optionally only those with similarity at least
``threshold`` (the paper's theta). The dense path can run in row blocks of ``block_size``
(recomputed in the backward pass) so that memory is ``O(block_size * N)``, not ``O(N^2)``.

How the weights are normalised, our reading of Eq. 3-5 (the paper's sums are garbled):

* ``self_weight=C`` (mo-mix): ``lambda_ii = C`` and the partners share ``1 - C`` in proportion
  to ``exp(H_ij / temperature)``; the softmax runs over the partners only, so the weights sum
  to 1. A row with no partner (isolated node, nothing above ``threshold``) keeps itself.
* ``self_weight=None`` (mp-mix, random-mix): one softmax over the partners and ``i`` itself
  (Eq. 4 sums over all ``k``); ``i`` is always kept, whatever ``threshold`` says.
* binary-mix: ``lambda_ii = 1 - weight`` and the most similar partner gets ``weight`` (ties:
  the partner of lowest node index, on the dense and the sparse path alike); no partner: the
  row keeps itself.

With ``dropout`` (the official node script's dropout on its attention, for training) each
weight is dropped or scaled by ``1 / (1 - dropout)``: a row's weights sum to 1 only in
expectation.

Only the edges in ``edge_mask`` (when given) count. A self-loop edge ``(i, i)`` is ignored
(``i`` is handled as above); a repeated edge counts once per copy. Rows outside ``where``
(padding) neither mix nor are mixed in; they come back unchanged.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from jaxcl import _checks as checks
from jaxcl._edge_slabs import edge_dots
from jaxcl.mixers import _mmix_paths as _paths
from jaxcl.mixers._common import compute_dtype, row_mask, unit_rows


def _check_rows(fn: str, z):
    z = jnp.asarray(checks.floating_array(fn, "z", z, ndim=2))
    if z.shape[0] == 0:
        checks.fail(fn, f"`z` is empty (shape {z.shape}); need at least one row")
    return z


def _check_edges(fn: str, senders, receivers, n: int):
    if (senders is None) != (receivers is None):
        checks.fail(fn, "`senders` and `receivers` go together: give both (-wp) or neither (-op)")
    if senders is None:
        return None, None
    s = jnp.asarray(senders)
    shape = tuple(s.shape)
    if len(shape) != 1:
        checks.fail(fn, f"`senders` must be a 1-d integer array, got shape {shape}")
    s = checks.index_array(fn, "senders", s, shape, size=n, what="row indices of z")
    r = checks.index_array(fn, "receivers", receivers, shape, size=n, what="row indices of z")
    return s, r


def _common_args(fn, z, senders, receivers, edge_mask, where, block_size, temperature):
    z = _check_rows(fn, z)
    n = z.shape[0]
    senders, receivers = _check_edges(fn, senders, receivers, n)
    if edge_mask is not None:
        if senders is None:
            checks.fail(fn, "`edge_mask` selects among `senders`/`receivers`: give them too")
        edge_mask = checks.bool_mask(fn, "edge_mask", edge_mask, senders.shape[0])
    where = row_mask(fn, where, n)
    if block_size is not None:
        block_size = checks.positive_int(fn, "block_size", block_size)
        if senders is not None:
            checks.fail(fn, "`block_size` is for the dense (-op) path; the -wp path is sparse")
    checks.positive(fn, "temperature", temperature)
    return z, senders, receivers, edge_mask, where, block_size


def _check_slabs(fn: str, slabs, senders) -> bool:
    slabs = checks.boolean(fn, "slabs", slabs)
    if slabs and senders is None:
        checks.fail(fn, "`slabs=True` lays out the -wp edges: give `senders` and `receivers`")
    return slabs


def _dropped(fn: str, rule, dropout, dropout_key):
    """``rule`` with ``dropout`` of its weights dropped (:func:`_paths.with_dropout`)."""
    checks.in_range(fn, "dropout", dropout, 0.0, 1.0, high_open=True)
    rate = checks.concrete_array(dropout)  # None when traced: then taken as switched on
    if rate is not None and not rate:
        return rule
    if dropout_key is None:
        checks.fail(fn, f"`dropout` = {dropout!r} draws its masks from `dropout_key`: give one")
    checks.prng_key(fn, "dropout_key", dropout_key)
    return _paths.with_dropout(rule, dropout_key, dropout)


def _mix(fn, z, edges, where, block_size, temperature, threshold, rule, q, k):
    """Mixes the rows of ``z`` with weights from the cosine similarity of ``q_i`` and ``k_j``."""
    if threshold is not None:
        checks.number(fn, "threshold", threshold)
    dtype = z.dtype
    zf = z.astype(compute_dtype(dtype))
    if where is not None:
        zf = jnp.where(where[:, None], zf, 0.0)
        q = jnp.where(where[:, None], q, 0.0)
        k = jnp.where(where[:, None], k, 0.0)
    qn, kn = unit_rows(q), unit_rows(k)
    senders, receivers, edge_mask, slabs = edges
    if senders is not None:
        out = _paths.mix_sparse(
            zf,
            senders,
            receivers,
            edge_mask,
            where,
            lambda r, s, pattern: (
                jnp.sum(qn[r] * kn[s], axis=-1) if pattern is None else edge_dots(pattern, qn, kn)
            ),
            jnp.sum(qn * kn, axis=-1),
            rule,
            threshold,
            temperature,
            slabs=slabs,
        )
    else:

        def block_sim(rows):
            return qn[rows] @ kn.T

        out = _paths.mix_dense(zf, where, block_sim, rule, threshold, temperature, block_size)
    if where is not None:
        out = jnp.where(where[:, None], out, z.astype(out.dtype))
    return out.astype(dtype)


def mo_mix(
    z: jax.Array,
    *,
    self_weight: float = 0.2,
    threshold: float | None = None,
    temperature: float = 1.0,
    senders: jax.Array | None = None,
    receivers: jax.Array | None = None,
    edge_mask: jax.Array | None = None,
    where: jax.Array | None = None,
    block_size: int | None = None,
    slabs: bool = False,
    dropout: float = 0.0,
    dropout_key: jax.Array | None = None,
) -> jax.Array:
    r"""mo-mix: each row mixed with its partners weighted by cosine similarity (Eq. 3, 5).

    .. math::
        \hat z_i = C z_i + (1 - C) \sum_{j \in P(i)}
        \frac{\exp(\cos(z_i, z_j)/t)}{\sum_{k \in P(i)} \exp(\cos(z_i, z_k)/t)} z_j

    with ``P(i)`` the partners of ``i``: its neighbours ``j`` (edges ``j -> i``:
    ``senders[e] = j``, ``receivers[e] = i``) for m-mix-wp, else every other row (m-mix-op),
    restricted to ``cos(z_i, z_j) >= threshold`` when one is given. The paper's ``t`` is 1.

    Args:
      z: ``[N, F]`` embeddings (any float dtype; mixed in at least float32).
      self_weight: ``C`` in ``[0, 1]`` (the paper's default 0.2, App. A).
      threshold: theta, or None for no threshold.
      temperature: ``t > 0`` dividing the similarities (1 in the paper).
      senders, receivers: ``[E]`` edges (both or neither): the -wp neighbourhoods.
      edge_mask: optional ``[E]`` boolean: only these edges make partners (e.g. the
        adjacency edges among a two-view graph's, or the real edges of a padded batch).
      where: optional ``[N]`` boolean mask of the real rows (padding stays unchanged).
      block_size: dense path only: rows per block, recomputed in the backward pass (memory
        ``O(block_size * N)``); None: one ``N x N`` block.
      slabs: sparse path only: lay the partner edges out as slabs
        (:func:`jaxcl.graphs.edge_pattern`, built under ``jit``) and compute the
        similarities and the weighted sums as slab products, instead of gathering
        ``[E, F]`` arrays and summing them per receiver (on 2 CPU cores, mp-mix's value and
        gradient at N = 20,000, 3.9 edges per node: 586 ms and 619 MiB of temporaries
        instead of 700 ms and 842 MiB, ``mmix_benchmark.py``). Same result up to float32
        rounding.
      dropout: each weight, the row's own included, zeroed with this probability and the
        kept ones scaled by ``1 / (1 - dropout)``, as the official node script's
        ``F.dropout(attention, 0.1)``; 0 (the default, and the paper) keeps them all.
      dropout_key: the key of the dropout masks (needed when ``dropout > 0``; the dense
        path draws each row block's masks from its own fold of it).

    Returns:
      ``[N, F]`` mixed embeddings, in ``z``'s dtype.

    Example:
      >>> import jax, jaxcl
      >>> z = jax.random.normal(jax.random.key(0), (6, 4))
      >>> hard = jaxcl.mixers.mo_mix(z, self_weight=0.2)  # every other row is a partner

    References:
      Zhang et al., "m-Mix: Generating Hard Negatives via Multi-sample Mixing for
      Contrastive Learning", KDD 2022, Eq. 2, 3, 5 and Section 3.2 (-wp, -op).
    """
    fn = "mo_mix"
    z, senders, receivers, edge_mask, where, block_size = _common_args(
        fn, z, senders, receivers, edge_mask, where, block_size, temperature
    )
    checks.in_range(fn, "self_weight", self_weight, 0.0, 1.0)
    edges = (senders, receivers, edge_mask, _check_slabs(fn, slabs, senders))
    rule = _dropped(fn, _paths.fixed_self(self_weight), dropout, dropout_key)
    return _mix(fn, z, edges, where, block_size, temperature, threshold, rule, z, z)


def mp_mix(
    z: jax.Array,
    p_m: jax.Array,
    p_n: jax.Array,
    *,
    threshold: float | None = None,
    temperature: float = 1.0,
    senders: jax.Array | None = None,
    receivers: jax.Array | None = None,
    edge_mask: jax.Array | None = None,
    where: jax.Array | None = None,
    block_size: int | None = None,
    slabs: bool = False,
    dropout: float = 0.0,
    dropout_key: jax.Array | None = None,
) -> jax.Array:
    r"""mp-mix: weights from the similarity of two learned projections (Eq. 4).

    .. math::
        \lambda_{ij} = \operatorname{softmax}_{j \in P(i) \cup \{i\}}
        \cos(z_i^\top p_m,\ z_j^\top p_n) / t

    The row's own weight comes out of the same softmax; the diversity loss
    (:func:`jaxcl.losses.mmix_diversity_loss`, Eq. 6) pushes ``z_i p_m`` and ``z_i p_n`` apart
    to keep it small. Partners, ``threshold`` (on the projected similarity), ``where``,
    ``block_size``, ``slabs`` and ``dropout`` as :func:`mo_mix`; gradients reach ``p_m``
    and ``p_n`` through the weights.

    Args:
      z: ``[N, F]`` embeddings.
      p_m, p_n: ``[F, P]`` projection matrices (the query and the key side).

    Example:
      >>> import jax, jaxcl
      >>> kz, km, kn = jax.random.split(jax.random.key(0), 3)
      >>> z = jax.random.normal(kz, (6, 4))
      >>> p_m, p_n = jax.random.normal(km, (4, 4)), jax.random.normal(kn, (4, 4))
      >>> hard = jaxcl.mixers.mp_mix(z, p_m, p_n)
    """
    fn = "mp_mix"
    z, senders, receivers, edge_mask, where, block_size = _common_args(
        fn, z, senders, receivers, edge_mask, where, block_size, temperature
    )
    p_m = checks.floating_array(fn, "p_m", p_m, ndim=2)
    p_n = checks.floating_array(fn, "p_n", p_n, ndim=2)
    for name, p in (("p_m", p_m), ("p_n", p_n)):
        if p.shape[0] != z.shape[1] or p.shape != p_m.shape:
            checks.fail(
                fn,
                f"`{name}` must have shape [{z.shape[1]}, P] (z has {z.shape[1]} columns) and "
                f"match the other projection, got p_m {tuple(p_m.shape)}, p_n "
                f"{tuple(p_n.shape)}",
            )
    zf = z.astype(compute_dtype(z.dtype))
    if where is not None:  # padding may hold NaN: zero it before it meets p_m, p_n
        zf = jnp.where(where[:, None], zf, 0.0)
    rule = _dropped(fn, _paths.softmax_with_self, dropout, dropout_key)
    edges = (senders, receivers, edge_mask, _check_slabs(fn, slabs, senders))
    q, k = zf @ p_m, zf @ p_n
    return _mix(fn, z, edges, where, block_size, temperature, threshold, rule, q, k)


def binary_mix(
    z: jax.Array,
    *,
    weight: float = 0.5,
    threshold: float | None = None,
    senders: jax.Array | None = None,
    receivers: jax.Array | None = None,
    edge_mask: jax.Array | None = None,
    where: jax.Array | None = None,
    block_size: int | None = None,
    slabs: bool = False,
    dropout: float = 0.0,
    dropout_key: jax.Array | None = None,
) -> jax.Array:
    """binary-mix: each row mixed with its single most similar partner (the paper's baseline).

    ``z_hat_i = (1 - weight) z_i + weight z_j*``, ``j* = argmax_{j in P(i)} cos(z_i, z_j)``
    (m-Mix Section 4.2: "the most similar negative ... with mixing weight 0.5"). Partners,
    ``threshold``, ``where``, ``block_size``, ``slabs`` and ``dropout`` as :func:`mo_mix`.
    """
    fn = "binary_mix"
    z, senders, receivers, edge_mask, where, block_size = _common_args(
        fn, z, senders, receivers, edge_mask, where, block_size, 1.0
    )
    checks.in_range(fn, "weight", weight, 0.0, 1.0)
    edges = (senders, receivers, edge_mask, _check_slabs(fn, slabs, senders))
    rule = _dropped(fn, _paths.binary(weight), dropout, dropout_key)
    return _mix(fn, z, edges, where, block_size, 1.0, threshold, rule, z, z)


def random_mix(
    key: jax.Array,
    z: jax.Array,
    *,
    senders: jax.Array | None = None,
    receivers: jax.Array | None = None,
    edge_mask: jax.Array | None = None,
    where: jax.Array | None = None,
    block_size: int | None = None,
    slabs: bool = False,
    dropout: float = 0.0,
    dropout_key: jax.Array | None = None,
) -> jax.Array:
    """random-mix: the softmax of standard-normal scores over the partners and the row itself.

    m-Mix's baseline for its weights (Section 4.3: weights "from Gaussian distribution ...
    regularized with Softmax"), a fresh draw per call. The dense path draws row ``i``'s
    scores from ``fold_in(key, i)``, so the result does not depend on ``block_size``; the
    sparse (-wp) path draws one score per edge and per row, so the two paths' draws differ
    (``slabs`` as :func:`mo_mix`: the same draws either way; ``dropout`` as :func:`mo_mix`:
    its masks are drawn block by block, so with ``dropout > 0`` the dense result does depend
    on ``block_size``).
    """
    fn = "random_mix"
    checks.prng_key(fn, "key", key)
    z, senders, receivers, edge_mask, where, block_size = _common_args(
        fn, z, senders, receivers, edge_mask, where, block_size, 1.0
    )
    slabs = _check_slabs(fn, slabs, senders)
    rule = _dropped(fn, _paths.softmax_with_self, dropout, dropout_key)
    n = z.shape[0]
    zf = z.astype(compute_dtype(z.dtype))
    if where is not None:
        zf = jnp.where(where[:, None], zf, 0.0)
    if senders is not None:
        k_edge, k_self = jax.random.split(key)
        scores = jax.random.normal(k_edge, senders.shape)
        self_scores = jax.random.normal(k_self, (n,))
        out = _paths.mix_sparse(
            zf, senders, receivers, edge_mask, where, lambda r, s, pattern: scores, self_scores,
            rule, None, 1.0, slabs=slabs,
        )  # fmt: skip
    else:

        def block_sim(rows):
            keys = jax.vmap(lambda i: jax.random.fold_in(key, i))(rows)
            return jax.vmap(lambda k: jax.random.normal(k, (n,)))(keys)

        out = _paths.mix_dense(zf, where, block_sim, rule, None, 1.0, block_size)
    if where is not None:
        out = jnp.where(where[:, None], out, z.astype(out.dtype))
    return out.astype(z.dtype)
