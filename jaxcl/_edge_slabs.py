"""Slab patterns built under ``jit`` (public in :mod:`jaxcl.graphs`): :func:`edge_pattern`, a
padded batch's edges as a :class:`~jaxcl.graphs.SparseMatrix` whose shapes depend only on the
padded shapes, and :func:`edge_dots`, per-edge dot products through such a pattern. Kept below
the subpackages so that the mixers (m-Mix's -wp path) can use them too."""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np

from jaxcl._slabs import (
    Slabs,
    SparseMatrix,
    _float0_like,
    _slab_product,
    _value_grad,
)


def _max_slabs(num_edges: int, num_rows: int, slab_width: int) -> int:
    """The most slabs ``num_edges`` entries over ``num_rows`` rows can need: each nonempty
    row wastes at most ``slab_width - 1`` slots, and at most ``min(rows, edges)`` are
    nonempty."""
    return max((num_edges + (slab_width - 1) * min(num_rows, num_edges)) // slab_width, 1)


def _default_slab_width(num_edges: int, num_nodes: int) -> int:
    """The power of two at most the mean edges per node, in [1, 8]."""
    mean = num_edges / max(num_nodes, 1)
    return int(min(8, 2 ** int(np.floor(np.log2(max(mean, 1.0))))))


def _traced_slabs(rows, cols, keep, num_rows: int, slab_width: int, num_slabs: int, presorted):
    """:func:`_slabs` under ``jit``: the entries where ``keep`` grouped by row into
    ``num_slabs`` slabs (the unused ones empty, attached to the last row)."""
    num_edges = rows.shape[0]
    if presorted:
        order = jnp.arange(num_edges, dtype=jnp.int32)
    else:
        # Stable: entries of a row keep their order (a receiver-sorted batch's transpose is
        # then ordered by sender, then receiver). Dropped entries sort last. One packed int32
        # key where it fits: one sorted operand instead of (row, position) pairs.
        key = jnp.where(keep, rows, num_rows)
        if (num_rows + 1) * num_edges <= np.iinfo(np.int32).max:
            position = jnp.arange(num_edges, dtype=jnp.int32)
            order = jnp.sort(key * num_edges + position) % num_edges
        else:
            order = jnp.argsort(key, stable=True).astype(jnp.int32)
    kept = keep[order]
    rank = jnp.cumsum(kept, dtype=jnp.int32) - 1  # position among the kept entries
    compact = (
        jnp.full((num_edges,), num_edges, jnp.int32)
        .at[jnp.where(kept, rank, num_edges)]
        .set(order, mode="drop")
    )
    counts = jax.ops.segment_sum(
        kept.astype(jnp.int32), rows[order], num_rows, indices_are_sorted=presorted
    )
    start = jnp.cumsum(counts) - counts  # first kept position of each row
    per_row = -(-counts // slab_width)
    slab_end = jnp.cumsum(per_row)
    slab = jnp.arange(num_slabs, dtype=jnp.int32)
    row = jnp.minimum(jnp.searchsorted(slab_end, slab, side="right"), num_rows - 1)
    offset = (slab - (slab_end[row] - per_row[row])) * slab_width  # slot 0's place in the row
    offset = offset[:, None] + jnp.arange(slab_width, dtype=jnp.int32)
    used = (slab < slab_end[-1])[:, None] & (offset < counts[row][:, None])
    # One padding element at the end of each array read below: no edges is a valid batch.
    compact = jnp.concatenate([compact, jnp.full((1,), num_edges, jnp.int32)])
    cols = jnp.concatenate([cols, jnp.zeros((1,), jnp.int32)])
    position = jnp.clip(start[row][:, None] + offset, 0, num_edges)
    entries = jnp.where(used, compact[position], num_edges)
    return Slabs(
        indices=jnp.where(used, cols[entries], 0).astype(jnp.int32),
        values=used.astype(jnp.float32),
        rows=row.astype(jnp.int32),
        entries=entries.astype(jnp.int32),
    )


def edge_pattern(
    senders,
    receivers,
    num_nodes: int,
    *,
    edge_mask=None,
    sorted_receivers: bool = False,
    slab_width: int | None = None,
) -> SparseMatrix:
    """:func:`adjacency_pattern` under ``jit``: the pattern of a padded batch's edges.

    Built on the device from the (traced) edge arrays, so that a batch of graphs, whose
    structure changes every step, can propagate through sparse slab products instead of a
    gather of ``[num_edges, d]`` messages and a segment sum (on 2 CPU cores, MVGRL's graph
    pretraining on IMDB-BINARY, 4 GCN layers of 512 per view: 308 graphs/s instead of 185,
    ``experiments/benchmarks/mmix_graph_benchmark.py``). Entry ``e``
    is edge ``e`` (``senders[e] -> receivers[e]``, receivers as rows), as in
    :func:`adjacency_pattern`: ``pattern.with_values(coef)`` gives the propagation matrix,
    and :class:`jaxcl.models.GCN` takes it as ``adjacency=``. Edges where ``edge_mask`` is
    False get no slot (they count as zero whatever value they are given), so padding edges
    and dropped edges cost nothing in the products.

    Args:
      senders, receivers: int ``[num_edges]`` (one graph or one padded batch, not stacked),
        each in ``[0, num_nodes)``.
      num_nodes: static number of nodes.
      edge_mask: optional bool ``[num_edges]``: the edges to keep (default all).
      sorted_receivers: ``receivers`` is non-decreasing (every :mod:`jaxcl.graphs` batch),
        which skips one of the two sorts; wrong results may follow if it is set otherwise.
      slab_width: entries per slab; default the power of two at most the mean number of
        edges per node (``num_edges / num_nodes``, from the padded shapes), between 1 and 8
        (a narrower slab wastes fewer slots on sparse graphs). Each layout holds the most
        slabs the edges can need (at most ``num_edges / slab_width + num_nodes``), so its
        shapes depend only on the padded shapes.

    Returns:
      A :class:`SparseMatrix` of shape ``(num_nodes, num_nodes)`` with ``nnz = num_edges``
      and value 1 at every kept edge.

    Example:
      >>> import jax, jax.numpy as jnp
      >>> senders, receivers = jnp.array([1, 0, 2, 1]), jnp.array([0, 1, 1, 2])
      >>> pattern = jax.jit(edge_pattern, static_argnums=2)(senders, receivers, 3)
      >>> pattern.todense().tolist()
      [[0.0, 1.0, 0.0], [1.0, 0.0, 1.0], [0.0, 1.0, 0.0]]
    """
    fn = "edge_pattern"
    senders, receivers = jnp.asarray(senders), jnp.asarray(receivers)
    if senders.ndim != 1 or senders.shape != receivers.shape:
        raise ValueError(
            f"{fn}: `senders` and `receivers` must be 1-D of one length (one graph or one "
            f"unstacked batch), got shapes {senders.shape} and {receivers.shape}"
        )
    if slab_width is None and isinstance(num_nodes, (int, np.integer)) and num_nodes > 0:
        slab_width = _default_slab_width(int(senders.shape[0]), int(num_nodes))
    for name, value in (("num_nodes", num_nodes), ("slab_width", slab_width)):
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
            raise ValueError(f"{fn}: `{name}` must be a positive int, got {value!r}")
    num_edges = int(senders.shape[0])
    if edge_mask is None:
        keep = jnp.ones(senders.shape, jnp.bool_)
    else:
        keep = jnp.asarray(edge_mask)
        if keep.shape != senders.shape or keep.dtype != jnp.bool_:
            raise ValueError(
                f"{fn}: `edge_mask` must be bool of shape {senders.shape}, got {keep.dtype} "
                f"{keep.shape}"
            )
    senders, receivers = senders.astype(jnp.int32), receivers.astype(jnp.int32)
    n, k = int(num_nodes), int(slab_width)
    s = _max_slabs(num_edges, n, k)
    by_row = _traced_slabs(receivers, senders, keep, n, k, s, sorted_receivers)
    by_col = _traced_slabs(senders, receivers, keep, n, k, s, False)
    return SparseMatrix(by_row=by_row, by_col=by_col, shape=(n, n), nnz=num_edges)


def _edge_values(slabs: Slabs, slots: jax.Array, num_edges: int) -> jax.Array:
    """Per-slot values ``[S, K]`` back in edge order ``[num_edges]`` (0 for edges without a
    slot)."""
    # Slots without an edge name entry num_edges: one extra element takes them.
    out = jnp.zeros((num_edges + 1,), slots.dtype).at[slabs.entries.ravel()].set(slots.ravel())
    return out[:num_edges]


@functools.partial(jax.custom_vjp, nondiff_argnums=(2, 3))
def _edge_dots(by_row: Slabs, by_col: Slabs, shape: tuple[int, int], nnz: int, a, b):
    return _value_grad(by_row, b, a)


def _edge_dots_fwd(by_row, by_col, shape, nnz, a, b):
    return _edge_dots(by_row, by_col, shape, nnz, a, b), (by_row, by_col, a, b)


def _edge_dots_bwd(shape, nnz, res, g):
    r, c, a, b = res
    # The slots' cotangents back in edge order, then into both layouts: the matrix G.
    m = SparseMatrix(by_row=r, by_col=c, shape=shape, nnz=nnz)
    m = m.with_values(_edge_values(r, g, nnz))
    d_a = _slab_product(m.by_row, shape[0], b).astype(a.dtype)  # sum_j g_ij b_j
    d_b = _slab_product(m.by_col, shape[1], a).astype(b.dtype)  # sum_i g_ij a_i
    ints = lambda s: dict(  # noqa: E731
        indices=_float0_like(s.indices), rows=_float0_like(s.rows), entries=_float0_like(s.entries)
    )
    zeros = lambda s: Slabs(values=jnp.zeros_like(s.values), **ints(s))  # noqa: E731
    return zeros(r), zeros(c), d_a, d_b


_edge_dots.defvjp(_edge_dots_fwd, _edge_dots_bwd)


def edge_dots(pattern: SparseMatrix, a, b) -> jax.Array:
    """``<a[receivers[e]], b[senders[e]]>`` for every edge ``e`` of a pattern (a sampled
    dense-dense product), 0 for edges it holds no slot for.

    The per-edge similarities of attention-like weights (m-Mix's mixers) without gathering
    two ``[num_edges, d]`` arrays: each slab reads its row of ``a`` once and the ``K`` rows
    of ``b`` it names. Reverse-mode differentiable in ``a`` and ``b``, as slab products
    (``d a = G @ b``, ``d b = G.T @ a`` for the matrix ``G`` of the edges' cotangents), no
    scatter of ``[num_edges, d]`` rows; the pattern's stored values are not read.

    Args:
      pattern: an ``[n, m]`` :class:`SparseMatrix` from :func:`edge_pattern` or
        :func:`adjacency_pattern` (entry ``e`` is edge ``e``, rows are receivers).
      a: ``[n, d]`` (the receivers' side), b: ``[m, d]`` (the senders' side), floating.

    Returns:
      ``[pattern.nnz]`` in the product's dtype.

    Example:
      >>> import jax.numpy as jnp
      >>> p = edge_pattern(jnp.array([1, 0]), jnp.array([0, 1]), 2)
      >>> edge_dots(p, jnp.array([[1.0, 2.0], [3.0, 4.0]]), jnp.array([[5.0, 6.0], [7.0, 8.0]]))
      Array([23., 39.], dtype=float32)
    """
    if not isinstance(pattern, SparseMatrix):
        raise TypeError(
            f"edge_dots: `pattern` must be a SparseMatrix, got {type(pattern).__name__}"
        )
    a, b = jnp.asarray(a), jnp.asarray(b)
    n, m = pattern.shape
    if a.ndim != 2 or b.ndim != 2 or a.shape[0] != n or b.shape[0] != m or a.shape[1] != b.shape[1]:
        raise ValueError(
            f"edge_dots: `a` must be [{n}, d] and `b` [{m}, d] for a {pattern.shape} pattern, got "
            f"{a.shape} and {b.shape}"
        )
    dtype = jnp.result_type(a.dtype, b.dtype)
    if not jnp.issubdtype(dtype, jnp.floating):
        raise ValueError(f"edge_dots: `a` and `b` must be floating, got {a.dtype} and {b.dtype}")
    slots = _edge_dots(
        pattern.by_row, pattern.by_col, pattern.shape, pattern.nnz, a.astype(dtype), b.astype(dtype)
    )
    return _edge_values(pattern.by_row, slots.astype(dtype), pattern.nnz)
