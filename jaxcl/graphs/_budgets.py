"""Padding budgets: a few fixed ``(num_nodes, num_edges, num_graphs)`` shapes per data set.

``jax.jit`` compiles once per input shape. Batches of whole graphs vary in their node and
edge counts, so every batch is padded (``jraph.pad_with_graphs``) up to one of a small,
ascending ladder of budgets chosen once per data set; a data set then compiles once per
budget it actually uses, not once per batch.

The ladder is geometric with ratio ``growth``, anchored where nearly every full batch
fits: at ``batch_size * mean + 3 * std * sqrt(batch_size * (N - batch_size) / (N - 1))``
nodes (and the same for edges), the normal approximation to the total of a batch drawn
without replacement from ``N`` graphs. Rungs above it reach up to the exact worst case
(the ``batch_size`` largest graphs, so every batch fits somewhere). The last, partial
batch of an epoch (``N mod batch_size`` graphs) gets a second anchor of its own, with
rungs up to the first one. A typical epoch uses one rung for its full batches and one for
the partial batch; heavy-tailed data sets spill a few batches onto a rung above.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import NamedTuple

import numpy as np

from jaxcl.data._graph_types import Graph, GraphDataset

# Standard deviations above the mean total of a batch at which the ladder is anchored: with
# a normal total, about 1 full batch in 700 spills over to the next rung (per node/edge).
_ANCHOR_SIGMAS = 3.0


class PaddingBudget(NamedTuple):
    """The static shape a batch of graphs is padded to.

    Attributes:
      n_node: total nodes after padding; at least one more than the real nodes (the
        padding graph of ``jraph.pad_with_graphs`` holds at least one node).
      n_edge: total edges after padding (at least the real edges).
      n_graph: total graphs after padding; at least one more than the real graphs.
    """

    n_node: int
    n_edge: int
    n_graph: int

    def fits(self, num_nodes: int, num_edges: int, num_graphs: int) -> bool:
        """Whether a batch with these real counts can be padded to this budget."""
        return (
            num_nodes + 1 <= self.n_node
            and num_edges <= self.n_edge
            and num_graphs + 1 <= self.n_graph
        )


def _round_up(value: float, multiple: int) -> int:
    return int(math.ceil(value / multiple) * multiple)


def _sizes(graphs) -> tuple[np.ndarray, np.ndarray]:
    if isinstance(graphs, GraphDataset):
        graphs = graphs.graphs
    nodes = np.fromiter((g.num_nodes for g in graphs), np.int64)
    edges = np.fromiter((g.num_edges for g in graphs), np.int64)
    return nodes, edges


def _anchor(sizes: np.ndarray, batch: int) -> float:
    """Mean plus ``_ANCHOR_SIGMAS`` std of the total of ``batch`` draws without replacement."""
    n = sizes.size
    if n <= 1 or batch >= n:
        return float(sizes.sum()) if batch >= n else float(sizes.max())
    correction = (n - batch) / (n - 1)
    std = float(sizes.std()) * math.sqrt(batch * correction)
    return batch * float(sizes.mean()) + _ANCHOR_SIGMAS * std


def _ladder(nodes, edges, batch, growth, cap=None) -> list[tuple[float, float]]:
    """Rungs for batches of ``batch`` graphs: from the anchor up, by ``growth``, to the
    worst case (or to ``cap``, a rung that already covers everything above)."""
    # Padding needs one node of its own (jraph's padding graph); edges may pad by zero.
    top = (float(np.sort(nodes)[-batch:].sum() + 1), float(np.sort(edges)[-batch:].sum()))
    anchor = (_anchor(nodes, batch) + 1, _anchor(edges, batch))
    rungs = []
    scale = 1.0
    while True:
        rung = tuple(min(a * scale, t) for a, t in zip(anchor, top, strict=True))
        if cap is not None and rung[0] >= cap[0] and rung[1] >= cap[1]:
            break
        rungs.append(rung)
        if rung[0] >= top[0] and rung[1] >= top[1]:
            break
        scale *= growth
    return rungs


def padding_budgets(
    graphs: GraphDataset | Sequence[Graph],
    batch_size: int,
    *,
    growth: float = 1.5,
    multiple: int = 8,
    drop_remainder: bool = False,
) -> tuple[PaddingBudget, ...]:
    """A small ascending ladder of padding budgets that fits every batch of a data set.

    Args:
      graphs: the data set (a :class:`~jaxcl.data.GraphDataset` or a sequence of
        :class:`~jaxcl.data.Graph`).
      batch_size: graphs per batch; every budget has ``n_graph = batch_size + 1`` (the
        extra graph holds the padding).
      growth: ratio between neighbouring rungs, > 1. Only batches that spill over an
        anchor rung use the rungs above it; a larger ratio gives fewer rungs (compiles) but
        more padding on those batches.
      multiple: node and edge budgets are rounded up to a multiple of this (8 suits the
        sublane tiling of accelerators).
      drop_remainder: whether the batcher drops the last, partial batch; if not, the
        ladder has rungs anchored at that batch's size too.

    Returns:
      Budgets sorted by ``(n_node, n_edge)``; the last one fits the ``batch_size`` largest
      graphs, so every batch fits one of them.

    Example:
      >>> import numpy as np
      >>> from jaxcl.data import Graph
      >>> from jaxcl.graphs import padding_budgets
      >>> g = Graph(senders=[0, 1], receivers=[1, 0], node_features=np.ones((2, 1)), label=0)
      >>> padding_budgets([g] * 10, 4)
      (PaddingBudget(n_node=8, n_edge=8, n_graph=5), PaddingBudget(n_node=16, n_edge=8, n_graph=5))

    References:
      Padding to fixed budgets: jraph ``pad_with_graphs``; flax ``examples/ogbg_molpcba``.
    """
    fn = "padding_budgets"
    if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size <= 0:
        raise ValueError(f"{fn}: `batch_size` must be a positive int, got {batch_size!r}")
    if not (isinstance(growth, (int, float)) and math.isfinite(growth) and growth > 1):
        raise ValueError(f"{fn}: `growth` must be a number > 1, got {growth!r}")
    if isinstance(multiple, bool) or not isinstance(multiple, int) or multiple <= 0:
        raise ValueError(f"{fn}: `multiple` must be a positive int, got {multiple!r}")
    nodes, edges = _sizes(graphs)
    if nodes.size == 0:
        raise ValueError(f"{fn}: `graphs` is empty; need at least one graph")
    batch = min(batch_size, nodes.size)
    rungs = _ladder(nodes, edges, batch, growth)
    remainder = nodes.size % batch
    if remainder and not drop_remainder:
        # The last batch of an epoch has its own, smaller size: give it its own anchor, and
        # rungs up to where the full batches' ladder takes over.
        cap = rungs[0]
        rungs += _ladder(nodes, edges, remainder, growth, cap=cap)
    budgets = {
        PaddingBudget(_round_up(n, multiple), _round_up(e, multiple), batch_size + 1)
        for n, e in rungs
    }
    return tuple(sorted(budgets))


def select_budget(
    budgets: Sequence[PaddingBudget], num_nodes: int, num_edges: int, num_graphs: int
) -> PaddingBudget:
    """The smallest budget (first in ``budgets`` order) a batch with these counts fits.

    Args:
      budgets: candidate budgets, smallest first (as :func:`padding_budgets` returns).
      num_nodes, num_edges, num_graphs: the real counts of the batch.

    Returns:
      The first budget with room for the batch plus one padding node and graph.

    Raises:
      ValueError: no budget fits.

    Example:
      >>> from jaxcl.graphs import PaddingBudget, select_budget
      >>> ladder = (PaddingBudget(8, 8, 5), PaddingBudget(16, 16, 5))
      >>> select_budget(ladder, num_nodes=7, num_edges=12, num_graphs=4)
      PaddingBudget(n_node=16, n_edge=16, n_graph=5)
    """
    for budget in budgets:
        if budget.fits(num_nodes, num_edges, num_graphs):
            return budget
    raise ValueError(
        f"select_budget: no budget fits a batch of {num_graphs} graphs with {num_nodes} nodes "
        f"and {num_edges} edges (padding needs one more node and graph); largest budget is "
        f"{max(budgets, default=None)}"
    )
