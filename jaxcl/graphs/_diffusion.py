"""Personalised-PageRank (PPR) diffusion, MVGRL's second view of a graph (host-side).

MVGRL (Hassani & Khasahmadi, 2020, Eq. 3; code ``utils.compute_ppr``) uses the closed form

    S = alpha * (I - (1 - alpha) * T)^-1,   T = D^-1/2 (A + I) D^-1/2,   alpha = 0.2,

with ``D`` the degrees of ``A + I``. It is dense, so it is computed here once, before
training, in NumPy/SciPy: exactly (a dense inverse, for graphs up to a few thousand nodes)
or, for larger graphs, as the series ``S = alpha * sum_k ((1 - alpha) T)^k`` accumulated
with a sparse residual whose entries below ``eps`` are dropped after every step (a push
from all sources at once, in the spirit of Andersen et al.'s approximate PPR and GDC's
sparsification). The dropped residual makes it an under-estimate; on Cora with
``eps = 1e-4`` its largest entry error is about 1e-3 and it takes about 0.5 s (CPU). Both return a
weighted edge list, ``S[i, j]`` on the edge ``j -> i`` (``i`` receives), sorted by
receiver then sender, which the GCN encoder propagates with ``normalize=False`` (MVGRL
multiplies by ``S`` directly).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import scipy.sparse as sp

from jaxcl._checks import is_integer as _integer
from jaxcl._checks import is_real as _real
from jaxcl.data._graph_types import GraphDataset, trusted_graph

# Largest graph the "auto" method inverts densely: a 4096^2 float64 inverse takes a few
# seconds on one CPU core and 130 MB (Cora's 2708 nodes: about 1 s).
DENSE_DIFFUSION_LIMIT = 4096


class Diffusion(NamedTuple):
    """A sparse diffusion matrix as a weighted edge list (``weights[e] = S[receivers[e],
    senders[e]]``), sorted by receiver then sender; diagonal entries are self-loop edges.

    Attributes:
      senders: int32 ``[num_entries]``.
      receivers: int32 ``[num_entries]``.
      weights: float32 ``[num_entries]``.
    """

    senders: np.ndarray
    receivers: np.ndarray
    weights: np.ndarray


def _check_num_nodes(fn: str, num_nodes) -> None:
    if (
        isinstance(num_nodes, bool)
        or not isinstance(num_nodes, (int, np.integer))
        or num_nodes <= 0
    ):
        raise ValueError(f"{fn}: `num_nodes` must be a positive int, got {num_nodes!r}")


def _check(fn: str, senders, receivers, num_nodes, alpha):
    senders, receivers = np.asarray(senders), np.asarray(receivers)
    if senders.shape != receivers.shape or senders.ndim != 1:
        raise ValueError(
            f"{fn}: `senders` {senders.shape} and `receivers` {receivers.shape} must be 1-D "
            "and of the same length"
        )
    _check_num_nodes(fn, num_nodes)
    for name, ids in (("senders", senders), ("receivers", receivers)):
        if ids.size and ids.dtype.kind not in "iu":  # a cast would truncate 1.7 to 1
            raise ValueError(
                f"{fn}: `{name}` must be an integer array of node ids, got {ids.dtype}"
            )
        bad = np.flatnonzero((ids < 0) | (ids >= num_nodes))
        if bad.size:
            raise ValueError(
                f"{fn}: `{name}` must hold node ids in [0, {num_nodes}) (`num_nodes`), got "
                f"{name}[{bad[0]}] = {ids[bad[0]]} ({bad.size} out of range)"
            )
    if not (_real(alpha) and 0 < alpha <= 1):
        raise ValueError(f"{fn}: `alpha` (teleport probability) must lie in (0, 1], got {alpha!r}")
    senders, receivers = senders.astype(np.int64), receivers.astype(np.int64)
    _check_undirected(fn, senders, receivers, num_nodes)
    return senders, receivers


def _check_undirected(fn: str, senders, receivers, num_nodes) -> None:
    """The diffusion is of an undirected graph: ``A`` (edge counts) must equal ``A.T``."""
    a = sp.csr_matrix((np.ones(senders.size), (receivers, senders)), (num_nodes, num_nodes))
    differ = (a != a.T).nnz  # each differing pair {i, j} twice
    if differ:
        forward, backward = senders * num_nodes + receivers, receivers * num_nodes + senders
        lone = np.flatnonzero(~np.isin(forward, backward))
        at = (
            f"edge {lone[0]} ({senders[lone[0]]} -> {receivers[lone[0]]}) has no reverse"
            if lone.size
            else "some edges appear more often in one direction than in the other"
        )
        raise ValueError(
            f"{fn}: the graph must be undirected, each edge given in both directions (j -> i "
            f"as often as i -> j); {at} ({differ // 2} pair(s) differ)"
        )


def _transition(senders, receivers, num_nodes, self_loops) -> sp.csr_matrix:
    """``T = D^-1/2 (A + I) D^-1/2`` (float64 CSR), ``A[i, j]`` = edges ``j -> i``."""
    a = sp.csr_matrix((np.ones(senders.size), (receivers, senders)), shape=(num_nodes, num_nodes))
    if self_loops:
        a = a + sp.identity(num_nodes, format="csr")
    degree = np.asarray(a.sum(axis=1)).ravel()
    inv_sqrt = np.zeros_like(degree)
    np.divide(1.0, np.sqrt(degree), out=inv_sqrt, where=degree > 0)
    d = sp.diags(inv_sqrt)
    return (d @ a @ d).tocsr()


def ppr_matrix(
    senders: np.ndarray,
    receivers: np.ndarray,
    num_nodes: int,
    *,
    alpha: float = 0.2,
    self_loops: bool = True,
) -> np.ndarray:
    """The exact, dense PPR diffusion matrix of MVGRL.

    Args:
      senders, receivers: int ``[num_edges]``; every undirected edge in both directions
        (checked: a one-way edge raises, as it would make the diffusion directed).
      num_nodes: number of nodes.
      alpha: teleport probability (MVGRL: 0.2).
      self_loops: use ``A + I`` (MVGRL's ``compute_ppr(self_loop=True)``).

    Returns:
      float64 ``[num_nodes, num_nodes]``
      ``S = alpha (I - (1 - alpha) D^-1/2 (A + I) D^-1/2)^-1``.

    Example:
      >>> import numpy as np
      >>> s = ppr_matrix(np.array([0, 1]), np.array([1, 0]), 2)
      >>> np.allclose(s.sum(axis=1), 1.0)  # a regular graph keeps the mass
      True

    References:
      Hassani & Khasahmadi, "Contrastive Multi-View Representation Learning on Graphs"
      (MVGRL), ICML 2020, Eq. 3; code: kavehhassani/mvgrl ``utils.compute_ppr``.
    """
    senders, receivers = _check("ppr_matrix", senders, receivers, num_nodes, alpha)
    return _dense_ppr(senders, receivers, num_nodes, alpha, self_loops)


def _dense_ppr(senders, receivers, num_nodes, alpha, self_loops) -> np.ndarray:
    t = _transition(senders, receivers, num_nodes, self_loops).toarray()
    return alpha * np.linalg.inv(np.eye(num_nodes) - (1.0 - alpha) * t)


def _to_diffusion(s: sp.csr_matrix) -> Diffusion:
    s = s.tocsr()
    s.sort_indices()
    receivers = np.repeat(np.arange(s.shape[0], dtype=np.int32), np.diff(s.indptr))
    return Diffusion(s.indices.astype(np.int32), receivers, s.data.astype(np.float32))


def _top_k_per_row(s: sp.csr_matrix, k: int) -> sp.csr_matrix:
    rows = np.repeat(np.arange(s.shape[0]), np.diff(s.indptr))
    order = np.lexsort((-s.data, rows))  # by row, largest first
    rank = np.arange(order.size) - s.indptr[rows[order]]
    keep = order[rank < k]
    return sp.csr_matrix((s.data[keep], (rows[keep], s.indices[keep])), shape=s.shape)


def _truncated_series(t: sp.csr_matrix, alpha, eps, max_iterations) -> sp.csr_matrix:
    """``S = alpha * sum_k ((1 - alpha) T)^k`` summed with a sparse residual whose entries
    below ``eps`` are dropped after each step (a synchronous push over all sources)."""
    n = t.shape[0]
    residual = sp.identity(n, format="csr")
    s = sp.csr_matrix((n, n))
    for _ in range(max_iterations):
        s = s + alpha * residual
        residual = ((1.0 - alpha) * (t @ residual)).tocsr()
        residual.data[residual.data < eps] = 0.0
        residual.eliminate_zeros()
        if residual.nnz == 0:
            break
    return s.tocsr()


def ppr_diffusion(
    senders: np.ndarray,
    receivers: np.ndarray,
    num_nodes: int,
    *,
    alpha: float = 0.2,
    eps: float = 1e-4,
    top_k: int | None = None,
    method: str = "auto",
    self_loops: bool = True,
    max_iterations: int = 200,
) -> Diffusion:
    """MVGRL's PPR diffusion as a sparse weighted edge list.

    Args:
      senders, receivers: int ``[num_edges]``; every undirected edge in both directions
        (checked: a one-way edge raises, as it would make the diffusion directed).
      num_nodes: number of nodes.
      alpha: teleport probability (MVGRL: 0.2).
      eps: entries ``< eps`` are dropped (GDC's sparsification; PyGCL's default 1e-4);
        ``0`` keeps every positive entry of the exact matrix (MVGRL's dense view).
      top_k: keep at most the ``top_k`` largest entries per receiving node (row).
      method: ``"exact"`` (dense inverse, then sparsified), ``"sparse"`` (truncated series,
        for large graphs; needs ``eps > 0``), or ``"auto"`` (exact up to 4096 nodes).
      self_loops: use ``A + I`` as MVGRL does.
      max_iterations: bound on the terms of the ``"sparse"`` series; it normally stops
        earlier, once every residual entry has fallen below ``eps`` (about 40 terms on Cora
        at ``eps = 1e-4``).

    Returns:
      :class:`Diffusion`, receiver-sorted, float32 weights, diagonal included.

    Example:
      >>> import numpy as np
      >>> d = ppr_diffusion(np.array([0, 1]), np.array([1, 0]), 2, eps=0.0)
      >>> d.receivers.tolist(), d.senders.tolist()
      ([0, 0, 1, 1], [0, 1, 0, 1])

    References:
      Hassani & Khasahmadi, MVGRL, ICML 2020, Eq. 3; Klicpera et al., "Diffusion Improves
      Graph Learning" (GDC), NeurIPS 2019, §3 (sparsification by threshold or top-k).
    """
    fn = "ppr_diffusion"
    senders, receivers = _check(fn, senders, receivers, num_nodes, alpha)
    if not (_real(eps) and eps >= 0):
        raise ValueError(f"{fn}: `eps` must be a number >= 0, got {eps!r}")
    if top_k is not None and not (_integer(top_k) and top_k > 0):
        raise ValueError(f"{fn}: `top_k` must be a positive int or None, got {top_k!r}")
    if not (_integer(max_iterations) and max_iterations > 0):
        raise ValueError(f"{fn}: `max_iterations` must be a positive int, got {max_iterations!r}")
    if method not in ("auto", "exact", "sparse"):
        raise ValueError(f"{fn}: `method` must be 'auto', 'exact' or 'sparse', got {method!r}")
    if method == "auto":
        method = "exact" if num_nodes <= DENSE_DIFFUSION_LIMIT else "sparse"
    if method == "exact":
        dense = _dense_ppr(senders, receivers, num_nodes, alpha, self_loops)
        dense[dense < eps] = 0.0
        dense[dense < 0] = 0.0  # round-off between disconnected components
        s = sp.csr_matrix(dense)
    else:
        if eps <= 0:
            raise ValueError(f"{fn}: method='sparse' needs eps > 0 to stay sparse, got {eps!r}")
        t = _transition(senders, receivers, num_nodes, self_loops)
        s = _truncated_series(t, alpha, eps, max_iterations)
        s.data[s.data < eps] = 0.0
        s.eliminate_zeros()
    if top_k is not None:
        s = _top_k_per_row(s, top_k)
    return _to_diffusion(s)


# MVGRL's code (``node/dataset.py``, Citeseer only) tries these thresholds.
DEGREE_MATCH_EPS = (1e-5, 1e-4, 1e-3, 1e-2)


def degree_matched_eps(
    diffusion: Diffusion,
    num_nodes: int,
    mean_degree: float,
    candidates: tuple[float, ...] = DEGREE_MATCH_EPS,
) -> float:
    """The threshold among ``candidates`` that keeps, per node, the number of diffusion
    entries closest to ``mean_degree`` (MVGRL's code on Citeseer: of ``1e-5 ... 1e-2``, the
    ``eps`` minimising ``|mean_degree - #{S_ij >= eps} / N|``; the first such on a tie).

    Args:
      diffusion: the diffusion's entries (zeros need not be stored: none is ``>= eps``).
      num_nodes: ``N``.
      mean_degree: the graph's mean degree (MVGRL: ``sum(A) / N``, no self loops).
      candidates: positive thresholds.

    Example:
      >>> import numpy as np
      >>> d = Diffusion(np.arange(4), np.arange(4), np.array([0.5, 0.05, 5e-3, 5e-4]))
      >>> degree_matched_eps(d, 2, 1.0)  # 1e-2 keeps 2 entries (1 per node)
      0.01
    """
    fn = "degree_matched_eps"
    if not candidates or any(not (_real(e) and e > 0) for e in candidates):
        raise ValueError(f"{fn}: `candidates` must be positive numbers, got {candidates!r}")
    if not (_real(mean_degree) and mean_degree >= 0):
        raise ValueError(f"{fn}: `mean_degree` must be a number >= 0, got {mean_degree!r}")
    _check_num_nodes(fn, num_nodes)
    w = np.asarray(diffusion.weights)
    gaps = [abs(mean_degree - np.count_nonzero(w >= e) / num_nodes) for e in candidates]
    return float(candidates[int(np.argmin(gaps))])


def minmax_columns(diffusion: Diffusion, num_nodes: int) -> Diffusion:
    """Each column of ``S`` (the entries one sender gives) scaled to ``[0, 1]``, as
    scikit-learn's ``MinMaxScaler`` fitted on the dense ``S`` (MVGRL's code on Citeseer):
    ``(S_ij - min_i S_ij) / (max_i S_ij - min_i S_ij)``, where a column's unstored entries
    are zeros (so its minimum is 0 unless all ``N`` entries are stored) and a constant column
    is only shifted. Entries that become 0 stay in the edge list.

    Example:
      >>> import numpy as np
      >>> d = Diffusion(np.array([0, 0, 1]), np.array([0, 1, 1]), np.array([0.2, 0.1, 0.4]))
      >>> minmax_columns(d, 3).weights.tolist()  # row 2 unstored: each column's minimum is 0
      [1.0, 0.5, 1.0]
    """
    fn = "minmax_columns"
    _check_num_nodes(fn, num_nodes)
    senders = np.asarray(diffusion.senders, np.int64)
    w = np.asarray(diffusion.weights, np.float64)
    if senders.size and (senders.min() < 0 or senders.max() >= num_nodes):
        raise ValueError(
            f"{fn}: sender ids must lie in [0, {num_nodes}), got {senders.min()}..{senders.max()}"
        )
    count = np.bincount(senders, minlength=num_nodes)
    high = np.full(num_nodes, -np.inf)
    np.maximum.at(high, senders, w)
    low = np.full(num_nodes, np.inf)
    np.minimum.at(low, senders, w)
    # a column with unstored (zero) entries has its minimum at 0, or below for a negative entry
    low = np.where(count < num_nodes, np.minimum(low, 0.0), low)
    high = np.where(count < num_nodes, np.maximum(high, 0.0), high)
    span = high - low
    span = np.where(span > 0, span, 1.0)  # scikit-learn's rule for a constant column
    scaled = (w - low[senders]) / span[senders]
    return Diffusion(diffusion.senders, diffusion.receivers, scaled.astype(np.float32))


def ppr_dataset(
    dataset: GraphDataset, *, alpha: float = 0.2, eps: float = 1e-4
) -> tuple[GraphDataset, tuple[np.ndarray, ...]]:
    """The PPR diffusion view of every graph of a graph-classification data set.

    Args:
      dataset: the data set.
      alpha: teleport probability (MVGRL: 0.2).
      eps: sparsification threshold (``0`` for MVGRL's dense per-graph matrices).

    Returns:
      ``(diffused, weights)``: a data set with the same labels and node features whose
      edges are the diffusion's support (self loops included), and each graph's
      ``[num_edges]`` float32 weights, aligned with its edges. Pass both to
      :class:`GraphBatcher` (``edge_weights=weights``); with the seed of the adjacency
      view's batcher it yields the same graphs in the same order.

    Example:
      >>> import numpy as np
      >>> from jaxcl.data import Graph, GraphDataset
      >>> g = Graph(senders=[0, 1], receivers=[1, 0], node_features=np.eye(2), label=0)
      >>> ds, w = ppr_dataset(GraphDataset("toy", (g,), np.array([0]), 1, 2), eps=0.0)
      >>> ds.graphs[0].num_edges, w[0].shape
      (4, (4,))

    References:
      Hassani & Khasahmadi, MVGRL, ICML 2020, §4 (graph classification uses the PPR view
      of each graph); code: kavehhassani/mvgrl ``graph/dataset.py``.
    """
    if not (_real(alpha) and 0 < alpha <= 1):  # checked here too: a graph may be empty
        raise ValueError(f"ppr_dataset: `alpha` must lie in (0, 1], got {alpha!r}")
    if not (_real(eps) and eps >= 0):
        raise ValueError(f"ppr_dataset: `eps` must be a number >= 0, got {eps!r}")
    graphs, weights = [], []
    for i, g in enumerate(dataset.graphs):
        if g.num_nodes == 0:  # an empty graph's diffusion is empty
            d = Diffusion(g.senders, g.receivers, np.zeros(0, np.float32))
        else:
            try:
                d = ppr_diffusion(
                    g.senders, g.receivers, g.num_nodes, alpha=alpha, eps=eps, method="exact"
                )
            except ValueError as err:
                raise ValueError(f"ppr_dataset: graph {i} of {dataset.name!r}: {err}") from None
        graphs.append(trusted_graph(d.senders, d.receivers, g.node_features, g.label))
        weights.append(d.weights)
    diffused = GraphDataset(
        dataset.name, tuple(graphs), dataset.labels, dataset.num_classes, dataset.num_features
    )
    return diffused, tuple(weights)
