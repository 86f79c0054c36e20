"""Sparse node features: a fixed-pattern sparse matrix and its product with dense weights
(public as :mod:`jaxcl.graphs`' ``SparseMatrix``, ``sparse_matmul``, ``adjacency_pattern``).

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


def _take_rows(values: jax.Array, indices: jax.Array) -> jax.Array:
    """``values[indices]`` for indices known to be in range (as
    :func:`jaxcl.graphs.gather_nodes`, kept here so that this layer imports no subpackage)."""
    return values.at[indices].get(mode="promise_in_bounds")


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
            got = _take_rows(padded, slabs.entries)
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
    # bfloat16/float16 rows are summed in float32 (a high-degree node's many terms would
    # lose the small ones in 8 bits of mantissa) and rounded once at the end.
    narrow = jnp.issubdtype(dense.dtype, jnp.floating) and jnp.finfo(dense.dtype).bits < 32
    out_dtype, dense = dense.dtype, dense.astype(jnp.float32) if narrow else dense
    idx, val = slabs.indices, slabs.values.astype(dense.dtype)

    def term(k):
        return val[:, k, None] * _take_rows(dense, idx[:, k])

    out = term(0)
    for k in range(1, idx.shape[1]):  # unrolled: XLA fuses the K gathers into one loop
        out = out + term(k)
    # Always a segment sum, even when every row fits in one slab: XLA does not fuse a
    # scatter into its consumers, so the gathers run once per slab rather than once per
    # element a consumer reads (a GCN's per-edge messages would redo them for every edge).
    return jax.ops.segment_sum(out, slabs.rows, num_rows, indices_are_sorted=True).astype(out_dtype)


def _value_grad(slabs: Slabs, dense: jax.Array, g: jax.Array) -> jax.Array:
    """d(sum(g * (M @ dense))) / d values: ``<g[row], dense[col]>`` per stored entry."""
    g_rows = _take_rows(g, slabs.rows)
    cols = [
        jnp.sum(g_rows * _take_rows(dense, slabs.indices[:, k]), axis=1)
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
