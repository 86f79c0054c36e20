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
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import NamedTuple

import jax
import jax.numpy as jnp
import jraph
import numpy as np

from jaxcl.data._graph_types import Graph, GraphDataset, NodeDataset
from jaxcl.graphs._budgets import (
    DEFAULT_ANCHORS,
    PaddingBudget,
    padding_budgets,
    select_budget,
)


class PaddingMasks(NamedTuple):
    """Boolean masks of the real (not padding) parts of a padded ``GraphsTuple``.

    Attributes:
      nodes: ``[n_node]``.
      edges: ``[n_edge]``.
      graphs: ``[n_graph]``.
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
        graph padded with ``jraph.pad_with_graphs``).

    Returns:
      :class:`PaddingMasks` with ``True`` on real entries.

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
    graph = graph._replace(n_node=jnp.asarray(graph.n_node), n_edge=jnp.asarray(graph.n_edge))
    return PaddingMasks(
        nodes=jraph.get_node_padding_mask(graph),
        edges=jraph.get_edge_padding_mask(graph),
        graphs=jraph.get_graph_padding_mask(graph),
    )


def receiver_order(senders: np.ndarray, receivers: np.ndarray) -> np.ndarray:
    """The permutation that sorts edges by receiver, then sender (host-side NumPy)."""
    return np.lexsort((np.asarray(senders), np.asarray(receivers)))


def _graphs_tuple(graph: Graph, weights: np.ndarray | None) -> jraph.GraphsTuple:
    """One graph as a ``GraphsTuple`` with receiver-sorted edges."""
    order = receiver_order(graph.senders, graph.receivers)
    edges = None
    if weights is not None:
        weights = np.asarray(weights, np.float32)
        if weights.shape != (graph.num_edges,):
            raise ValueError(
                f"edge weights must have shape [num_edges]=({graph.num_edges},), got "
                f"{weights.shape}"
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
    padded = jraph.pad_with_graphs(batch, budget.n_node, budget.n_edge, budget.n_graph)
    labels = np.array(padded.globals, np.int32)
    labels[len(parts) :] = -1
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
      edge_weights: optional ``[num_edges]`` weights per graph, aligned with each graph's
        edges (e.g. PPR diffusion weights); stored in ``edges``, padding edges weigh 0.

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
    if edge_weights is not None and len(edge_weights) != len(graphs):
        raise ValueError(
            f"batch_graphs: got {len(edge_weights)} edge-weight arrays for {len(graphs)} graphs"
        )
    weights = edge_weights if edge_weights is not None else [None] * len(graphs)
    parts = [_graphs_tuple(g, w) for g, w in zip(graphs, weights, strict=True)]
    n_node = sum(g.num_nodes for g in graphs)
    n_edge = sum(g.num_edges for g in graphs)
    if budget is None:
        budget = PaddingBudget(n_node + 1, n_edge, len(graphs) + 1)
    elif not budget.fits(n_node, n_edge, len(graphs)):
        raise ValueError(
            f"batch_graphs: {len(graphs)} graphs with {n_node} nodes and {n_edge} edges do "
            f"not fit {budget} (padding needs one more node and graph)"
        )
    return _batch_padded(parts, budget)


class GraphBatcher:
    """Shuffled, padded batches of a graph data set; one compile per padding budget.

    The order of epoch ``e`` is the permutation of ``np.random.default_rng([seed, e])``
    (as :func:`jaxcl.data.iterate_batches`), so batches are the same on every host and
    after a restart. Each batch is padded to the smallest budget of :attr:`budgets` it
    fits; a jitted step then compiles once per budget used, however many batches.

    Args:
      graphs: a :class:`~jaxcl.data.GraphDataset` or a sequence of graphs.
      batch_size: graphs per batch.
      shuffle: shuffle per epoch; if not, batches follow the data set order.
      seed: the data seed.
      drop_remainder: drop the last, partial batch.
      budgets: the padding ladder; default :func:`padding_budgets` with ``anchors`` and
        ``growth``.
      anchors, growth: shape of the default ladder, see :func:`padding_budgets`.
      edge_weights: optional per-graph ``[num_edges]`` weights (see :func:`batch_graphs`).

    Example:
      >>> import numpy as np
      >>> from jaxcl.data import Graph
      >>> from jaxcl.graphs import GraphBatcher
      >>> g = Graph(senders=[0, 1], receivers=[1, 0], node_features=np.ones((2, 1)), label=0)
      >>> batcher = GraphBatcher([g] * 10, batch_size=4, seed=0)
      >>> [int(b.nodes.shape[0]) for b in batcher.epoch(0)], len(batcher)
      ([16, 16, 8], 3)
    """

    def __init__(
        self,
        graphs: GraphDataset | Sequence[Graph],
        batch_size: int,
        *,
        shuffle: bool = True,
        seed: int = 0,
        drop_remainder: bool = False,
        budgets: Sequence[PaddingBudget] | None = None,
        anchors: Sequence[float] = DEFAULT_ANCHORS,
        growth: float = 1.5,
        edge_weights: Sequence[np.ndarray] | None = None,
    ):
        if isinstance(graphs, GraphDataset):
            graphs = graphs.graphs
        graphs = tuple(graphs)
        if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size <= 0:
            raise ValueError(
                f"GraphBatcher: `batch_size` must be a positive int, got {batch_size!r}"
            )
        if drop_remainder and len(graphs) < batch_size:
            raise ValueError(
                f"GraphBatcher: {len(graphs)} graphs < batch_size={batch_size} with "
                "drop_remainder=True leaves no batch"
            )
        if not graphs:
            raise ValueError("GraphBatcher: `graphs` is empty")
        if edge_weights is not None and len(edge_weights) != len(graphs):
            raise ValueError(
                f"GraphBatcher: got {len(edge_weights)} edge-weight arrays for {len(graphs)} graphs"
            )
        self.batch_size = batch_size
        self.shuffle = shuffle
        self.seed = seed
        self.drop_remainder = drop_remainder
        self.budgets = tuple(
            budgets
            if budgets is not None
            else padding_budgets(
                graphs,
                batch_size,
                anchors=anchors,
                growth=growth,
                drop_remainder=drop_remainder,
            )
        )
        weights = edge_weights if edge_weights is not None else [None] * len(graphs)
        self._parts = [_graphs_tuple(g, w) for g, w in zip(graphs, weights, strict=True)]
        self._nodes = np.array([g.num_nodes for g in graphs], np.int64)
        self._edges = np.array([g.num_edges for g in graphs], np.int64)

    def __len__(self) -> int:
        full, rest = divmod(len(self._parts), self.batch_size)
        return full + (1 if rest and not self.drop_remainder else 0)

    def order(self, epoch: int) -> np.ndarray:
        """The graph indices of epoch ``epoch``, in batch order."""
        n = len(self._parts)
        if not self.shuffle:
            return np.arange(n)
        return np.random.default_rng([self.seed, epoch]).permutation(n)

    def batch_indices(self, epoch: int) -> list[np.ndarray]:
        """The graph indices of each batch of epoch ``epoch``."""
        order = self.order(epoch)
        return [
            order[i : i + self.batch_size]
            for i in range(0, len(self) * self.batch_size, self.batch_size)
        ]

    def budget_for(self, indices: np.ndarray) -> PaddingBudget:
        """The budget a batch of these graphs is padded to."""
        return select_budget(
            self.budgets,
            int(self._nodes[indices].sum()),
            int(self._edges[indices].sum()),
            len(indices),
        )

    def epoch(self, epoch: int) -> Iterator[jraph.GraphsTuple]:
        """Yields the padded batches of epoch ``epoch`` (host NumPy ``GraphsTuple``s)."""
        for indices in self.batch_indices(epoch):
            budget = self.budget_for(indices)
            yield _batch_padded([self._parts[i] for i in indices], budget)


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
    s = dataset.senders if senders is None else np.asarray(senders, np.int32)
    r = dataset.receivers if receivers is None else np.asarray(receivers, np.int32)
    if s.shape != r.shape or s.ndim != 1:
        raise ValueError(f"node_graph: senders {s.shape} and receivers {r.shape} must be [E]")
    if s.size and (min(s.min(), r.min()) < 0 or max(s.max(), r.max()) >= dataset.num_nodes):
        raise ValueError(f"node_graph: edge endpoints must lie in [0, {dataset.num_nodes})")
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
