"""Epochs of padded graph batches: :class:`GraphBatcher`, stacked for data parallelism.

A batcher fixes a data set's padding ladder once (:func:`~jaxcl.graphs.padding_budgets`), so
a jitted step compiles once per budget. With ``num_shards=S`` each global batch is split
into ``S`` sub-batches padded to one common budget (each laid out as
:func:`~jaxcl.graphs.batch_graphs` lays out a batch) and stacked on a leading axis: sharded
on that axis, every device holds its own sub-batch.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import jax
import jraph
import numpy as np

from jaxcl._checks import is_integer
from jaxcl.data._graph_types import Graph, GraphDataset
from jaxcl.graphs._batching import _batch_padded, graph_parts
from jaxcl.graphs._budgets import (
    DEFAULT_ANCHORS,
    PaddingBudget,
    check_budget,
    first_fit,
    padding_budgets,
)


def _stack(batches: Sequence[jraph.GraphsTuple]) -> jraph.GraphsTuple:
    return jax.tree.map(lambda *xs: np.stack(xs), *batches)


def _no_graphs(part: jraph.GraphsTuple) -> jraph.GraphsTuple:
    """A batch of zero graphs with the arrays (trailing shapes, dtypes) of ``part``."""
    return jax.tree.map(lambda x: np.zeros((0, *np.shape(x)[1:]), np.asarray(x).dtype), part)


class GraphBatcher:
    """Shuffled, padded batches of a graph data set; one compile per padding budget.

    The order of epoch ``e`` is the permutation of ``np.random.default_rng([seed, e])``
    (as :func:`jaxcl.data.iterate_batches`), so batches are the same on every host and
    after a restart. Each batch is padded to the smallest budget of :attr:`budgets` it
    fits; a jitted step then compiles once per budget used, however many batches.

    With ``num_shards=S > 1`` (data parallelism over ``S`` devices) each global batch, the
    same graphs as with one shard, is split into ``S`` contiguous groups of
    ``batch_size // S`` graphs (the last, partial batch as evenly as possible, in order; a
    group may be empty), every group is padded to one budget (the smallest that fits them
    all; the ladder is made for groups of ``batch_size // S`` graphs) and the ``S`` padded
    sub-batches are stacked on a leading axis: ``nodes [S, N, F]``, ``senders``/
    ``receivers [S, E]`` (node ids local to each sub-batch), ``n_node``/``n_edge``/
    ``globals [S, G]``, ``edges [S, E]`` or ``None``. Sharded with
    ``PartitionSpec('data')``, each device holds one sub-batch; see :mod:`jaxcl.graphs` for
    the ops that take stacked batches. The graph rows of a stacked batch's outputs
    (flattened ``[S * G]``) map back to the batch's graphs with :meth:`graph_rows`.

    Args:
      graphs: a :class:`~jaxcl.data.GraphDataset` or a sequence of graphs.
      batch_size: graphs per (global) batch.
      num_shards: sub-batches per batch, a divisor of ``batch_size``; 1 gives unstacked
        batches.
      shuffle: shuffle per epoch; if not, batches follow the data set order.
      seed: the data seed.
      drop_remainder: drop the last, partial batch.
      budgets: the padding ladder (of a sub-batch when ``num_shards > 1``); default
        :func:`padding_budgets` with ``anchors`` and ``growth``.
      anchors, growth: shape of the default ladder, see :func:`padding_budgets`.
      edge_weights: optional per-graph ``[num_edges]`` or ``[num_edges, k]`` weights (see
        :func:`batch_graphs`).

    Example:
      >>> import numpy as np
      >>> from jaxcl.data import Graph
      >>> from jaxcl.graphs import GraphBatcher
      >>> g = Graph(senders=[0, 1], receivers=[1, 0], node_features=np.ones((2, 1)), label=0)
      >>> batcher = GraphBatcher([g] * 10, batch_size=4, seed=0)
      >>> [int(b.nodes.shape[0]) for b in batcher.epoch(0)], len(batcher)
      ([16, 16, 8], 3)
      >>> stacked = GraphBatcher([g] * 10, batch_size=4, num_shards=2, seed=0)
      >>> [b.nodes.shape[:2] for b in stacked.epoch(0)]  # [S, N]: 2 sub-batches of 2, 2, 1
      [(2, 8), (2, 8), (2, 8)]
      >>> [b.n_node.tolist() for b in stacked.epoch(0)][-1]  # the last batch: 1 graph each
      [[2, 6, 0], [2, 6, 0]]
    """

    def __init__(
        self,
        graphs: GraphDataset | Sequence[Graph],
        batch_size: int,
        *,
        num_shards: int = 1,
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
        if not (is_integer(batch_size) and batch_size > 0):
            raise ValueError(
                f"GraphBatcher: `batch_size` must be a positive int, got {batch_size!r}"
            )
        if not (is_integer(num_shards) and num_shards > 0):
            raise ValueError(
                f"GraphBatcher: `num_shards` must be a positive int, got {num_shards!r}"
            )
        if batch_size % num_shards:
            raise ValueError(
                f"GraphBatcher: `batch_size`={batch_size} must be a multiple of "
                f"`num_shards`={num_shards} (graphs per sub-batch)"
            )
        if drop_remainder and len(graphs) < batch_size:
            raise ValueError(
                f"GraphBatcher: {len(graphs)} graphs < batch_size={batch_size} with "
                "drop_remainder=True leaves no batch"
            )
        if not graphs:
            raise ValueError("GraphBatcher: `graphs` is empty")
        if not (is_integer(seed) and seed >= 0):
            raise ValueError(f"GraphBatcher: `seed` must be an int >= 0, got {seed!r}")
        self._parts = graph_parts("GraphBatcher", graphs, edge_weights)
        self.batch_size = int(batch_size)
        self.num_shards = int(num_shards)
        self.shuffle = shuffle
        self.seed = seed
        self.drop_remainder = drop_remainder
        if budgets is None:
            # The last, partial batch's largest group: the ladder's rungs for it.
            last = -(-(len(graphs) % batch_size) // num_shards)
            budgets = padding_budgets(
                graphs,
                batch_size // num_shards,
                anchors=anchors,
                growth=growth,
                drop_remainder=drop_remainder,
                last_batch_size=last,
            )
        self.budgets = tuple(
            check_budget("GraphBatcher", f"budgets[{i}]", b) for i, b in enumerate(budgets)
        )
        self._no_graphs = _no_graphs(self._parts[0])
        self._nodes = np.array([g.num_nodes for g in graphs], np.int64)
        self._edges = np.array([g.num_edges for g in graphs], np.int64)

    def __len__(self) -> int:
        full, rest = divmod(len(self._parts), self.batch_size)
        return full + (1 if rest and not self.drop_remainder else 0)

    def order(self, epoch: int) -> np.ndarray:
        """The graph indices of epoch ``epoch``, in batch order."""
        if not (is_integer(epoch) and epoch >= 0):
            raise ValueError(f"GraphBatcher: `epoch` must be an int >= 0, got {epoch!r}")
        n = len(self._parts)
        if not self.shuffle:
            return np.arange(n)
        return np.random.default_rng([self.seed, epoch]).permutation(n)

    def batch_indices(self, epoch: int) -> list[np.ndarray]:
        """The graph indices of each (global) batch of epoch ``epoch``; the same for any
        ``num_shards``."""
        order = self.order(epoch)
        return [
            order[i : i + self.batch_size]
            for i in range(0, len(self) * self.batch_size, self.batch_size)
        ]

    def shard_indices(self, indices: np.ndarray) -> list[np.ndarray]:
        """The graph indices of each of the ``num_shards`` sub-batches of a batch: contiguous
        groups of ``indices``, as even as possible (the first ones larger), maybe empty."""
        return np.array_split(np.asarray(indices), self.num_shards)

    def budget_for(self, indices: np.ndarray) -> PaddingBudget:
        """The budget a batch of these graphs is padded to (every sub-batch of it, when
        ``num_shards > 1``)."""
        groups = self.shard_indices(indices)
        return first_fit(  # budgets checked once, when the batcher was built
            self.budgets,
            max(int(self._nodes[g].sum()) for g in groups),
            max(int(self._edges[g].sum()) for g in groups),
            max(len(g) for g in groups),
        )

    def graph_rows(self, indices: np.ndarray) -> np.ndarray:
        """Where the graphs of a batch are among the graph rows of its padded batch.

        Row ``k`` of the result is the row of graph ``indices[k]`` in a per-graph output of
        the batch (``[n_graph, ...]``; for a stacked batch flattened ``[S * n_graph, ...]``,
        as the GIN's graph embeddings): ``outputs[batcher.graph_rows(indices)]`` are the
        batch's graphs in the order of ``indices``.
        """
        groups = self.shard_indices(indices)
        n_graph = self.budget_for(indices).n_graph
        return np.concatenate(
            [s * n_graph + np.arange(len(g), dtype=np.int64) for s, g in enumerate(groups)]
        )

    def epoch(self, epoch: int, *, shards: slice | None = None) -> Iterator[jraph.GraphsTuple]:
        """Yields the padded batches of epoch ``epoch`` (host NumPy ``GraphsTuple``s).

        Args:
          epoch: the epoch.
          shards: only these sub-batches of each batch (a slice of ``range(num_shards)``),
            e.g. those whose devices belong to this process when each host feeds its own
            devices (``jax.make_array_from_process_local_data``); they are padded to the
            budget of the whole batch, so every process gets the same shapes. Default all.

        Yields:
          ``GraphsTuple``s: unstacked with ``num_shards == 1``, else stacked, with as many
          sub-batches as ``shards`` selects.
        """
        selected = range(self.num_shards)
        if shards is not None:
            if not isinstance(shards, slice) or not selected[shards]:
                raise ValueError(
                    f"GraphBatcher.epoch: `shards` must be a slice selecting some of the "
                    f"{self.num_shards} sub-batches, got {shards!r}"
                )
            selected = selected[shards]
        for indices in self.batch_indices(epoch):
            budget = self.budget_for(indices)
            if self.num_shards == 1:
                yield _batch_padded([self._parts[i] for i in indices], budget)
                continue
            groups = self.shard_indices(indices)
            yield _stack([self._sub_batch(groups[s], budget) for s in selected])

    def _sub_batch(self, indices: np.ndarray, budget: PaddingBudget) -> jraph.GraphsTuple:
        parts = [self._parts[i] for i in indices] if len(indices) else [self._no_graphs]
        return _batch_padded(parts, budget)
