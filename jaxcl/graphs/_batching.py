"""Host-side batching of graphs into padded ``jraph.GraphsTuple``s, and their masks.

Every ``GraphsTuple`` built here keeps one layout the encoders rely on:

- edges are ordered by receiver, then sender, across the whole batch (each graph's edges
  are sorted, graphs are concatenated in order, node ids offset), so aggregation at the
  receivers can use ``jax.ops.segment_sum(..., indices_are_sorted=True)``;
- padding follows ``jraph.pad_with_graphs``: one padding graph holding every padding node
  and edge (padding edges join the first padding node to itself, whose id is larger than
  every real node's, so the receiver order survives), then empty graphs;
- ``globals`` holds the int32 graph labels, ``-1`` on padding graphs; ``edges`` holds float32
  edge weights when given (a diffusion view), else ``None``.

For data parallelism a :class:`~jaxcl.graphs.GraphBatcher` with ``num_shards=S`` yields
*stacked* batches: each global batch split into ``S`` sub-batches of the layout above, all
padded to one budget and stacked on a new leading axis (``nodes [S, N, F]``, ``senders
[S, E]`` with node ids local to each sub-batch, ``n_node [S, G]``, ...). Sharded over a
mesh axis on that leading axis, each device holds its own sub-batch; the segment ops of
:mod:`jaxcl.graphs` and the GIN apply per sub-batch, and :func:`padding_masks` and
:func:`~jaxcl.graphs.node_graph_ids` flatten over it, so a loss written over the flattened
``[S * G]`` graphs is the loss over the global batch.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

import jax
import jax.numpy as jnp
import jraph
import numpy as np

from jaxcl.data._graph_types import Graph, NodeDataset, _frozen
from jaxcl.graphs._budgets import PaddingBudget, check_budget
from jaxcl.graphs._segments import num_nodes_of


class PaddingMasks(NamedTuple):
    """Boolean masks of the real (not padding) parts of a padded ``GraphsTuple``.

    Attributes:
      nodes: ``[n_node]`` (a stacked batch: ``[S * n_node]``).
      edges: ``[n_edge]`` (``[S * n_edge]``).
      graphs: ``[n_graph]`` (``[S * n_graph]``).
    """

    nodes: jax.Array
    edges: jax.Array
    graphs: jax.Array


def padding_masks(graph: jraph.GraphsTuple) -> PaddingMasks:
    """Masks of the real nodes, edges and graphs of a graph padded by ``pad_with_graphs``.

    Works under ``jax.jit`` (the masks are computed from ``n_node``/``n_edge``). Only for
    padded graphs: on an unpadded one the last graph would be taken for padding; a
    :func:`node_graph` has no padding and needs no mask.

    Args:
      graph: a ``GraphsTuple`` from :func:`batch_graphs` / :class:`GraphBatcher` (or any
        graph padded with ``jraph.pad_with_graphs``), or a stacked batch of ``S`` such
        sub-batches (``n_node`` ``[S, G]``, from :class:`GraphBatcher` with ``num_shards``).

    Returns:
      :class:`PaddingMasks` with ``True`` on real entries; flattened over the sub-batches
      of a stacked batch (``[S * n_node]``, ...), in the order of ``reshape(-1)``.

    Example:
      >>> import numpy as np
      >>> from jaxcl.data import Graph
      >>> from jaxcl.graphs import PaddingBudget, batch_graphs, padding_masks
      >>> g = Graph(senders=[0, 1], receivers=[1, 0], node_features=np.ones((2, 1)), label=0)
      >>> masks = padding_masks(batch_graphs([g], PaddingBudget(4, 4, 3)))
      >>> masks.nodes.tolist(), masks.graphs.tolist()
      ([True, True, False, False], [True, False, False])

    References:
      jraph ``get_node_padding_mask``, ``get_edge_padding_mask``, ``get_graph_padding_mask``.
    """
    # jraph indexes ``n_node`` with a traced index: make it a jax array even when the graph
    # is a NumPy constant closed over by a jitted function.
    num_nodes = num_nodes_of(graph, "padding_masks")
    n_node = jnp.asarray(graph.n_node)
    # jraph reads the node count from the first leaf of ``nodes`` (of a SparseMatrix: its
    # slabs, not its rows): give it an empty array of the right leading shape instead.
    graph = graph._replace(
        nodes=np.zeros((*n_node.shape[:-1], num_nodes, 0), np.bool_),
        edges=None,
        receivers=None,
        globals=None,
        n_node=n_node,
        n_edge=jnp.asarray(graph.n_edge),
    )
    if n_node.ndim == 2:  # stacked sub-batches: every array left has the leading axis
        return PaddingMasks(*(m.reshape(-1) for m in jax.vmap(_masks)(graph)))
    return _masks(graph)


def _masks(graph: jraph.GraphsTuple) -> PaddingMasks:
    return PaddingMasks(
        nodes=jraph.get_node_padding_mask(graph),
        edges=jraph.get_edge_padding_mask(graph),
        graphs=jraph.get_graph_padding_mask(graph),
    )


def receiver_order(senders: np.ndarray, receivers: np.ndarray) -> np.ndarray:
    """The permutation that sorts edges by receiver, then sender (host-side NumPy)."""
    return np.lexsort((np.asarray(senders), np.asarray(receivers)))


def graph_parts(fn: str, graphs: Sequence[Graph], edge_weights) -> list[jraph.GraphsTuple]:
    """Each graph as a ``GraphsTuple`` (with its weights), checked to be batchable with the
    others: graph 0's node-feature width and weight shape per edge, else an error naming
    the first graph that differs (rather than NumPy's, from the concatenation mid-epoch)."""
    if edge_weights is not None and len(edge_weights) != len(graphs):
        raise ValueError(
            f"{fn}: got {len(edge_weights)} edge-weight arrays for {len(graphs)} graphs"
        )
    weights = edge_weights if edge_weights is not None else [None] * len(graphs)
    parts = [
        _graphs_tuple(fn, i, g, w) for i, (g, w) in enumerate(zip(graphs, weights, strict=True))
    ]

    def per_edge(part) -> str:
        edges = part.edges
        return (
            "none" if edges is None else f"[num_edges{''.join(f', {k}' for k in edges.shape[1:])}]"
        )

    width, kind = parts[0].nodes.shape[1], per_edge(parts[0])
    for i, part in enumerate(parts):
        if part.nodes.shape[1] != width:
            raise ValueError(
                f"{fn}: graph {i} has {part.nodes.shape[1]} node features, graph 0 has "
                f"{width}; the graphs of a batch must share their feature width"
            )
        if per_edge(part) != kind:
            raise ValueError(
                f"{fn}: graph {i} has edge weights {per_edge(part)}, graph 0 {kind}; the "
                "graphs of a batch must share the shape of their weights per edge"
            )
    return parts


def _graphs_tuple(fn: str, index: int, graph: Graph, weights) -> jraph.GraphsTuple:
    """One graph as a ``GraphsTuple`` with receiver-sorted edges."""
    order = receiver_order(graph.senders, graph.receivers)
    edges = None
    if weights is not None:
        weights = np.asarray(weights, np.float32)
        if weights.shape[:1] != (graph.num_edges,) or weights.ndim > 2:
            raise ValueError(
                f"{fn}: the edge weights of graph {index} must have shape [num_edges]="
                f"({graph.num_edges},) or [num_edges, k], got {weights.shape}"
            )
        edges = weights[order]
    return jraph.GraphsTuple(
        nodes=graph.node_features,
        edges=edges,
        senders=graph.senders[order],
        receivers=graph.receivers[order],
        globals=np.array([graph.label], np.int32),
        n_node=np.array([graph.num_nodes], np.int32),
        n_edge=np.array([graph.num_edges], np.int32),
    )


def _batch_padded(parts: Sequence[jraph.GraphsTuple], budget: PaddingBudget) -> jraph.GraphsTuple:
    batch = jraph.batch_np(parts)
    num_graphs = batch.n_node.shape[0]
    padded = jraph.pad_with_graphs(batch, budget.n_node, budget.n_edge, budget.n_graph)
    labels = np.array(padded.globals, np.int32)
    labels[num_graphs:] = -1
    return padded._replace(
        globals=labels,
        n_node=padded.n_node.astype(np.int32),
        n_edge=padded.n_edge.astype(np.int32),
        senders=padded.senders.astype(np.int32),
        receivers=padded.receivers.astype(np.int32),
    )


def batch_graphs(
    graphs: Sequence[Graph],
    budget: PaddingBudget | None = None,
    *,
    edge_weights: Sequence[np.ndarray] | None = None,
) -> jraph.GraphsTuple:
    """Concatenates graphs into one ``GraphsTuple`` padded to ``budget``.

    Args:
      graphs: the graphs of the batch, in order (at least one).
      budget: the padded size; ``None`` pads minimally (one padding node and graph, no
        padding edge), which compiles a new shape per batch: use a budget from
        :func:`padding_budgets` inside a training loop.
      edge_weights: optional ``[num_edges]`` (or ``[num_edges, k]``: ``k`` values per edge)
        weights per graph, aligned with each graph's edges (e.g. PPR diffusion weights);
        stored in ``edges``, padding edges weigh 0.

    Returns:
      A ``jraph.GraphsTuple``: ``nodes`` float32 ``[n_node, F]``, ``senders``/``receivers``
      int32 ``[n_edge]`` sorted by receiver then sender, ``globals`` int32 ``[n_graph]``
      labels (``-1`` for padding graphs), ``edges`` the weights or ``None``.

    Raises:
      ValueError: ``graphs`` is empty or the batch does not fit ``budget``.

    Example:
      >>> import numpy as np
      >>> from jaxcl.data import Graph
      >>> from jaxcl.graphs import PaddingBudget, batch_graphs
      >>> g = Graph(senders=[0, 1], receivers=[1, 0], node_features=np.ones((2, 1)), label=1)
      >>> b = batch_graphs([g, g], PaddingBudget(n_node=8, n_edge=8, n_graph=4))
      >>> b.n_node.tolist(), b.receivers.tolist(), b.globals.tolist()
      ([2, 2, 4, 0], [0, 1, 2, 3, 4, 4, 4, 4], [1, 1, -1, -1])

    References:
      jraph ``batch_np`` and ``pad_with_graphs`` (used here).
    """
    graphs = list(graphs)
    if not graphs:
        raise ValueError("batch_graphs: `graphs` is empty; need at least one graph")
    parts = graph_parts("batch_graphs", graphs, edge_weights)
    n_node = sum(g.num_nodes for g in graphs)
    n_edge = sum(g.num_edges for g in graphs)
    if budget is None:
        budget = PaddingBudget(n_node + 1, n_edge, len(graphs) + 1)
    elif not check_budget("batch_graphs", "budget", budget).fits(n_node, n_edge, len(graphs)):
        raise ValueError(
            f"batch_graphs: {len(graphs)} graphs with {n_node} nodes and {n_edge} edges do "
            f"not fit {budget} (padding needs one more node and graph)"
        )
    return _batch_padded(parts, budget)


def _edge_ids(name: str, ids) -> np.ndarray:
    """``ids`` as int32 ``[E]``, refused (not cast) when they are not integers or do not fit
    int32: a cast would truncate ``1.7`` to 1 and wrap ``2**32`` to 0, a valid-looking id."""
    try:
        return _frozen(name, ids, np.int32, 1)
    except ValueError as err:
        raise ValueError(f"node_graph: {err}") from None


def node_graph(
    dataset: NodeDataset,
    *,
    senders: np.ndarray | None = None,
    receivers: np.ndarray | None = None,
    edge_weights: np.ndarray | None = None,
) -> jraph.GraphsTuple:
    """A node-classification data set as one unpadded ``GraphsTuple``.

    The whole graph is one batch (GRACE and MVGRL train full-batch), so it needs no
    padding and no masks; its one shape compiles once.

    Args:
      dataset: a :class:`~jaxcl.data.NodeDataset` (e.g. from :func:`jaxcl.data.load_planetoid`).
      senders, receivers: optional replacement edges (e.g. a PPR diffusion's support from
        :func:`ppr_diffusion`); default the data set's own.
      edge_weights: optional ``[num_edges]`` weights of those edges, stored in ``edges``.

    Returns:
      A ``GraphsTuple`` with ``nodes`` ``[N, F]``, receiver-sorted int32 edges,
      ``n_node = [N]``, ``n_edge = [E]``, ``globals = None``.

    Example:
      >>> import numpy as np
      >>> from jaxcl.data import NodeDataset
      >>> from jaxcl.graphs import node_graph
      >>> m = np.array([True, False])
      >>> ds = NodeDataset("toy", [0, 1], [1, 0], np.eye(2), [0, 1], 2, m, ~m, ~m)
      >>> node_graph(ds).receivers.tolist()
      [0, 1]
    """
    s = dataset.senders if senders is None else _edge_ids("senders", senders)
    r = dataset.receivers if receivers is None else _edge_ids("receivers", receivers)
    if s.shape != r.shape:
        raise ValueError(f"node_graph: senders {s.shape} and receivers {r.shape} must be [E]")
    for name, ids in (("senders", s), ("receivers", r)):
        bad = np.flatnonzero((ids < 0) | (ids >= dataset.num_nodes))
        if bad.size:
            raise ValueError(
                f"node_graph: `{name}` must hold node ids in [0, {dataset.num_nodes}), got "
                f"{name}[{bad[0]}] = {ids[bad[0]]} ({bad.size} out of range)"
            )
    order = receiver_order(s, r)
    edges = None
    if edge_weights is not None:
        edges = np.asarray(edge_weights, np.float32)
        if edges.shape != s.shape:
            raise ValueError(
                f"node_graph: `edge_weights` must have shape {s.shape}, got {edges.shape}"
            )
        edges = edges[order]
    return jraph.GraphsTuple(
        nodes=np.asarray(dataset.node_features),
        edges=edges,
        senders=s[order].astype(np.int32),
        receivers=r[order].astype(np.int32),
        globals=None,
        n_node=np.array([dataset.num_nodes], np.int32),
        n_edge=np.array([s.size], np.int32),
    )
