"""Sparse node features: a fixed-pattern sparse matrix and its product with dense weights.

Bag-of-words node features are mostly zeros (Cora: 1.3% of its 2,708 x 1,433 entries), and
a GCN's first layer multiplies them by a wide dense kernel. :class:`SparseMatrix` stores
such a matrix as *slabs*: rows of at most ``K`` ``(column, value)`` pairs, zero-padded, with
the output row of each slab. ``M @ D`` is then ``K`` gathers of rows of ``D``, each scaled
and added, which XLA fuses into one loop over the slabs (no ``[nnz, d]`` intermediate), and
a sorted segment sum of the slabs' partial rows into the rows they belong to (a long row is
split over several slabs). The transpose is stored too, in the same form, so the gradient
with respect to ``D`` (``M.T @ G``) is again a gather-and-add instead of a scatter.

Measured on 2 CPU cores (AMD EPYC, jax 0.10.2), Cora's row-normalised features times a
``[1433, 1024]`` kernel: 3.8 ms against 39 ms for the dense product; ``M.T @ G`` with
``G`` ``[2708, 1024]``: 3.8 ms against 42 ms (``experiments/benchmarks/grace_benchmark.py``
times the whole GRACE step). A gather-and-reduce over a ``[S, K, d]`` gather instead of the
unrolled sum was 30x slower here, and scatter-adds for the transpose 25x.
"""

from __future__ import annotations

import dataclasses
import functools

import jax
import jax.numpy as jnp
import numpy as np

from jaxcl.graphs._segments import gather_nodes


@jax.tree_util.register_dataclass
@dataclasses.dataclass(frozen=True)
class Slabs:
    """One layout of a sparse matrix: rows of at most ``K`` stored entries.

    Attributes:
      indices: int32 ``[S, K]``, the column of each entry (padding entries: 0).
      values: ``[S, K]``, the entries (padding entries: 0).
      rows: int32 ``[S]``, sorted: the output row of each slab.
      entries: int32 ``[S, K]``: which coordinate entry (its position in
        :meth:`SparseMatrix.from_coo`'s arrays) each slot holds; ``nnz`` for padding.
        :meth:`SparseMatrix.with_values` gathers new values through it.
    """

    indices: jax.Array
    values: jax.Array
    rows: jax.Array
    entries: jax.Array


@jax.tree_util.register_dataclass
@dataclasses.dataclass(frozen=True)
class SparseMatrix:
    """A sparse ``[n, m]`` matrix with a fixed pattern, for products with dense matrices.

    Build it on the host with :meth:`from_dense` or :meth:`from_coo`; it is a pytree (place
    it on devices, pass it through ``jit``), and :func:`sparse_matmul` (or ``M @ D``)
    multiplies it with a dense ``[m, d]`` matrix, differentiably in ``D`` and in the stored
    values. GCN layers accept it as node features (:class:`jaxcl.models.GCN`), and
    :func:`~jaxcl.graphs.mask_features` masks its columns.

    Attributes:
      by_row: the matrix as slabs of its rows (for ``M @ D``).
      by_col: its transpose as slabs (for the gradient ``M.T @ G``); it holds the same
        values, and products read only ``by_row``'s (gradients flow to those).
      column_keep: optional bool ``[m]``: the columns where it is False count as zero
        (:meth:`mask_columns`). Applied to the dense factor's rows at product time, so two
        maskings of one matrix multiply different dense matrices: XLA then does not merge
        their gathers into one shared, materialised array.
      shape: ``(n, m)``, static.
      nnz: the number of coordinate entries it was built from, static.

    Example:
      >>> import numpy as np
      >>> x = np.array([[0.0, 2.0, 0.0], [1.0, 0.0, 3.0]], np.float32)
      >>> m = SparseMatrix.from_dense(x)
      >>> m.shape, m.nnz
      ((2, 3), 3)
      >>> (m @ np.eye(3, dtype=np.float32)).tolist()
      [[0.0, 2.0, 0.0], [1.0, 0.0, 3.0]]
    """

    by_row: Slabs
    by_col: Slabs
    column_keep: jax.Array | None = None
    shape: tuple[int, int] = dataclasses.field(default=(0, 0), metadata=dict(static=True))
    nnz: int = dataclasses.field(default=0, metadata=dict(static=True))

    @property
    def dtype(self):
        return self.by_row.values.dtype

    @classmethod
    def from_coo(
        cls,
        rows,
        cols,
        values,
        shape: tuple[int, int],
        *,
        slab_width: int = 16,
        dtype=np.float32,
    ) -> SparseMatrix:
        """From coordinates: entry ``values[k]`` at ``(rows[k], cols[k])``; duplicates add.

        Every entry keeps its slot, zeros and duplicates included, so that
        :meth:`with_values` can later give the same pattern other values (a GCN's edge
        coefficients, which change with every dropped edge).

        Args:
          rows, cols: int ``[nnz]``, in ``[0, shape[0])`` and ``[0, shape[1])``.
          values: ``[nnz]`` entries.
          shape: ``(n, m)``.
          slab_width: entries per slab; a longer row is split over several slabs (16:
            fastest for Cora's features and their transpose on CPU, whose rows hold up to
            30 and 1,083 entries).
          dtype: of the stored values.
        """
        fn = "SparseMatrix.from_coo"
        if (
            len(shape) != 2
            or any(isinstance(s, bool) or not isinstance(s, (int, np.integer)) for s in shape)
            or min(shape) < 0
        ):
            raise ValueError(f"{fn}: `shape` must be two non-negative ints, got {shape!r}")
        if isinstance(slab_width, bool) or not isinstance(slab_width, int) or slab_width < 1:
            raise ValueError(f"{fn}: `slab_width` must be a positive int, got {slab_width!r}")
        rows, cols = np.asarray(rows), np.asarray(cols)
        values = np.asarray(values, dtype)
        if not (rows.ndim == cols.ndim == values.ndim == 1) or not (
            rows.shape == cols.shape == values.shape
        ):
            raise ValueError(
                f"{fn}: `rows`, `cols` and `values` must be 1-D of one length, got shapes "
                f"{rows.shape}, {cols.shape}, {values.shape}"
            )
        for name, idx, size in (("rows", rows, shape[0]), ("cols", cols, shape[1])):
            if idx.size and not np.issubdtype(idx.dtype, np.integer):
                raise ValueError(f"{fn}: `{name}` must be integers, got dtype {idx.dtype}")
            if idx.size and (idx.min() < 0 or idx.max() >= size):
                raise ValueError(
                    f"{fn}: `{name}` must lie in [0, {size}), got values in "
                    f"[{idx.min()}, {idx.max()}]"
                )
        n, m = (int(s) for s in shape)
        by_row = _slabs(rows, cols, values, n, slab_width, dtype)
        by_col = _slabs(cols, rows, values, m, slab_width, dtype)
        return cls(by_row=by_row, by_col=by_col, shape=(n, m), nnz=int(values.size))

    @classmethod
    def from_dense(cls, x, *, slab_width: int = 16) -> SparseMatrix:
        """From a dense ``[n, m]`` array (its nonzero entries)."""
        x = np.asarray(x)
        if x.ndim != 2:
            raise ValueError(f"SparseMatrix.from_dense: `x` must be 2-D, got shape {x.shape}")
        dtype = x.dtype if np.issubdtype(x.dtype, np.floating) else np.float32
        r, c = np.nonzero(x)
        return cls.from_coo(r, c, x[r, c], x.shape, slab_width=slab_width, dtype=dtype)

    def with_values(self, values) -> SparseMatrix:
        """The same pattern holding ``values`` (``[nnz]``, in :meth:`from_coo`'s entry order).

        Differentiable in ``values`` (under ``jit`` too: only gathers).
        """
        values = jnp.asarray(values)
        if values.shape != (self.nnz,):
            raise ValueError(
                f"SparseMatrix.with_values: `values` must have shape ({self.nnz},), got "
                f"{values.shape}"
            )
        padded = jnp.concatenate([values, jnp.zeros((1,), values.dtype)])

        def fill(slabs):
            got = gather_nodes(padded, slabs.entries)
            return dataclasses.replace(slabs, values=got)

        return dataclasses.replace(self, by_row=fill(self.by_row), by_col=fill(self.by_col))

    def todense(self) -> jax.Array:
        """The ``[n, m]`` dense array (for tests and small matrices)."""
        s = self.by_row
        dense = jnp.zeros(self.shape, s.values.dtype)
        rows = jnp.broadcast_to(s.rows[:, None], s.indices.shape)
        dense = dense.at[rows, s.indices].add(s.values)
        if self.column_keep is None:
            return dense
        return jnp.where(self.column_keep[None, :], dense, jnp.zeros((), dense.dtype))

    def mask_columns(self, keep: jax.Array) -> SparseMatrix:
        """The matrix with the columns where ``keep`` (bool ``[m]``) is False set to zero."""
        keep = jnp.asarray(keep)
        if keep.shape != (self.shape[1],) or keep.dtype != jnp.bool_:
            raise ValueError(
                f"SparseMatrix.mask_columns: `keep` must be bool of shape ({self.shape[1]},), "
                f"got {keep.dtype} {keep.shape}"
            )
        if self.column_keep is not None:
            keep = keep & self.column_keep
        return dataclasses.replace(self, column_keep=keep)

    def __matmul__(self, dense) -> jax.Array:
        return sparse_matmul(self, dense)


def _slabs(rows, cols, values, num_rows, slab_width, dtype) -> Slabs:
    """Slabs holding the entries ``(rows[k], cols[k], values[k])`` grouped by row (host)."""
    order = np.lexsort((cols, rows))  # by row, then column; stable
    rows = rows[order]
    counts = np.bincount(rows, minlength=num_rows) if rows.size else np.zeros(num_rows, int)
    start = np.concatenate([[0], np.cumsum(counts)])[:-1]
    position = np.arange(rows.size) - np.repeat(start, counts)  # index within its row
    per_row = -(-counts // slab_width)  # slabs per row (0 for an empty row)
    first = np.concatenate([[0], np.cumsum(per_row)])[:-1]
    slab = np.repeat(first, counts) + position // slab_width
    slot = position % slab_width
    num_slabs = max(int(per_row.sum()), 1)  # an empty matrix keeps one empty slab
    indices = np.zeros((num_slabs, slab_width), np.int32)
    vals = np.zeros(indices.shape, dtype)
    entries = np.full(indices.shape, rows.size, np.int32)
    indices[slab, slot] = cols[order]
    vals[slab, slot] = values[order]
    entries[slab, slot] = order
    slab_rows = np.zeros(num_slabs, np.int32)
    slab_rows[: per_row.sum()] = np.repeat(np.arange(num_rows, dtype=np.int32), per_row)
    return Slabs(*(jnp.asarray(x) for x in (indices, vals, slab_rows, entries)))


def _slab_product(slabs: Slabs, num_rows: int, dense: jax.Array) -> jax.Array:
    """``[num_rows, d]``: each slab's entries times the rows of ``dense`` they name, summed."""
    idx, val = slabs.indices, slabs.values.astype(dense.dtype)

    def term(k):
        return val[:, k, None] * gather_nodes(dense, idx[:, k])

    out = term(0)
    for k in range(1, idx.shape[1]):  # unrolled: XLA fuses the K gathers into one loop
        out = out + term(k)
    # Always a segment sum, even when every row fits in one slab: XLA does not fuse a
    # scatter into its consumers, so the gathers run once per slab rather than once per
    # element a consumer reads (a GCN's per-edge messages would redo them for every edge).
    return jax.ops.segment_sum(out, slabs.rows, num_rows, indices_are_sorted=True)


def _value_grad(slabs: Slabs, dense: jax.Array, g: jax.Array) -> jax.Array:
    """d(sum(g * (M @ dense))) / d values: ``<g[row], dense[col]>`` per stored entry."""
    g_rows = gather_nodes(g, slabs.rows)
    cols = [
        jnp.sum(g_rows * gather_nodes(dense, slabs.indices[:, k]), axis=1)
        for k in range(slabs.indices.shape[1])
    ]
    return jnp.stack(cols, axis=1).astype(slabs.values.dtype)


def _float0_like(x):
    return np.zeros(np.shape(x), jax.dtypes.float0)


@functools.partial(jax.custom_vjp, nondiff_argnums=(2,))
def _matmul(by_row: Slabs, by_col: Slabs, shape: tuple[int, int], dense: jax.Array):
    return _slab_product(by_row, shape[0], dense)


def _matmul_fwd(by_row, by_col, shape, dense):
    return _matmul(by_row, by_col, shape, dense), (by_row, by_col, dense)


def _matmul_bwd(shape, res, g):
    r, c, dense = res
    d_dense = _slab_product(c, shape[1], g).astype(dense.dtype)
    ints = dict(indices=_float0_like(r.indices), rows=_float0_like(r.rows))
    return (
        Slabs(values=_value_grad(r, dense, g), entries=_float0_like(r.entries), **ints),
        # The product never reads the transposed layout's values: no gradient flows there.
        Slabs(
            indices=_float0_like(c.indices),
            values=jnp.zeros_like(c.values),
            rows=_float0_like(c.rows),
            entries=_float0_like(c.entries),
        ),
        d_dense,
    )


_matmul.defvjp(_matmul_fwd, _matmul_bwd)


def sparse_matmul(m: SparseMatrix, dense) -> jax.Array:
    """``m @ dense`` for a :class:`SparseMatrix` ``[n, k]`` and a dense ``[k, d]`` array.

    Reverse-mode differentiable in ``dense`` (through ``m``'s stored transpose, no scatter)
    and in ``m.by_row.values``; forward mode is not defined (a custom VJP).

    Args:
      m: the sparse matrix.
      dense: ``[k, d]`` floating array.

    Returns:
      ``[n, d]``, in ``dense``'s dtype.

    Example:
      >>> import numpy as np
      >>> m = SparseMatrix.from_dense(np.array([[0.0, 1.0], [2.0, 0.0]]))
      >>> sparse_matmul(m, np.array([[1.0, 2.0], [3.0, 4.0]])).tolist()
      [[3.0, 4.0], [2.0, 4.0]]
    """
    if not isinstance(m, SparseMatrix):
        raise TypeError(f"sparse_matmul: `m` must be a SparseMatrix, got {type(m).__name__}")
    dense = jnp.asarray(dense)
    if not jnp.issubdtype(dense.dtype, jnp.floating):
        dense = dense.astype(jnp.float32)
    if dense.ndim != 2 or dense.shape[0] != m.shape[1]:
        raise ValueError(
            f"sparse_matmul: `dense` must have shape ({m.shape[1]}, d) for a {m.shape} "
            f"matrix, got {dense.shape}"
        )
    if m.column_keep is not None:
        dense = jnp.where(m.column_keep[:, None], dense, jnp.zeros((), dense.dtype))
    return _matmul(m.by_row, m.by_col, m.shape, dense)


def adjacency_pattern(graph, *, slab_width: int = 16) -> SparseMatrix:
    """The ``[N, N]`` pattern of a graph's edges, receivers as rows, in edge order.

    Built on the host from a concrete ``GraphsTuple`` (e.g. :func:`node_graph`'s); entry
    ``e`` is edge ``e`` (``senders[e] -> receivers[e]``), so ``pattern.with_values(coef)``
    is the matrix whose row ``r`` sums ``coef[e] * x[senders[e]]`` over the edges into
    ``r``. :class:`jaxcl.models.GCN` takes it as ``adjacency=`` and propagates through it.

    Example:
      >>> import numpy as np
      >>> from jaxcl.data import NodeDataset
      >>> from jaxcl.graphs import node_graph
      >>> m = np.array([True, False, False])
      >>> ds = NodeDataset("toy", [0, 1, 1, 2], [1, 0, 2, 1], np.eye(3), [0, 1, 0], 2, m, m, m)
      >>> adjacency_pattern(node_graph(ds)).todense().tolist()
      [[0.0, 1.0, 0.0], [1.0, 0.0, 1.0], [0.0, 1.0, 0.0]]
    """
    senders, receivers = np.asarray(graph.senders), np.asarray(graph.receivers)
    n = int(np.asarray(graph.n_node).sum())
    ones = np.ones(senders.shape, np.float32)
    return SparseMatrix.from_coo(receivers, senders, ones, (n, n), slab_width=slab_width)


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
        # key where it fits: on CPU 3.4x faster than sorting (row, position) pairs.
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
        (8: the fastest of 4-32 for the case above; a narrower slab wastes fewer slots on
        sparse graphs). Each layout holds the most slabs the edges can need (at most
        ``num_edges / slab_width + num_nodes``), so its shapes depend only on the padded
        shapes.

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


@functools.partial(jax.custom_vjp, nondiff_argnums=(2,))
def _edge_dots(by_row: Slabs, by_col: Slabs, shape: tuple[int, int], a, b):
    return _value_grad(by_row, b, a)


def _edge_dots_fwd(by_row, by_col, shape, a, b):
    return _edge_dots(by_row, by_col, shape, a, b), (by_row, by_col, a, b)


def _edge_dots_bwd(shape, res, g):
    r, c, a, b = res
    edges = _edge_values(r, g, r.entries.size)
    padded = jnp.concatenate([edges, jnp.zeros((1,), edges.dtype)])
    r_g = dataclasses.replace(r, values=gather_nodes(padded, jnp.minimum(r.entries, edges.size)))
    c_g = dataclasses.replace(c, values=gather_nodes(padded, jnp.minimum(c.entries, edges.size)))
    d_a = _slab_product(r_g, shape[0], b).astype(a.dtype)  # sum_j g_ij b_j
    d_b = _slab_product(c_g, shape[1], a).astype(b.dtype)  # sum_i g_ij a_i
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
      >>> edge_dots(p, jnp.array([[1.0, 0.0], [0.0, 2.0]]), jnp.array([[3.0, 0.0], [0.0, 5.0]]))
      Array([10.,  0.], dtype=float32)
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
        pattern.by_row, pattern.by_col, pattern.shape, a.astype(dtype), b.astype(dtype)
    )
    return _edge_values(pattern.by_row, slots.astype(dtype), pattern.nnz)
