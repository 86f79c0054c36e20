"""Graph building blocks: padding budgets, batching, augmentations, diffusion, segment ops.

Batches of graphs are ``jraph.GraphsTuple``s padded with ``jraph.pad_with_graphs`` to one
of a few budgets per data set (:func:`padding_budgets`, :class:`GraphBatcher`), so a
jitted step compiles once per budget (a forward-only pass in order: once, on
:func:`pass_budget`); :func:`padding_masks` marks the real parts. For data
parallelism, ``GraphBatcher(num_shards=S)`` stacks ``S`` padded sub-batches of each batch
on a leading axis to shard over devices; the segment ops (:func:`aggregate_edges`,
:func:`pool_nodes`, ...) apply per sub-batch, and masks and graph ids come flattened. A
node-classification graph is one unpadded ``GraphsTuple`` (:func:`node_graph`). Edges are
always sorted by receiver, so aggregations can use sorted segment sums.

Augmentations keep static shapes: :func:`drop_edges` returns an edge mask, and
:func:`mask_features` zeroes feature columns (GRACE). :func:`ppr_diffusion` computes
MVGRL's personalised-PageRank view on the host, exactly or sparsely;
:func:`degree_matched_eps` and :func:`minmax_columns` are the thresholding and column scaling
that MVGRL's code applies to Citeseer's view.

Sparse node features (bag-of-words) can be a :class:`SparseMatrix`, whose product with a
dense kernel (:func:`sparse_matmul`) GCN layers use; a graph's :func:`adjacency_pattern`
lets GCN layers propagate through the same sparse products, and :func:`edge_pattern` builds
one under ``jit`` for a padded batch (:func:`edge_dots`: per-edge dot products through it).
"""

from jaxcl.graphs._augment import drop_edges, mask_features
from jaxcl.graphs._batcher import GraphBatcher
from jaxcl.graphs._batching import (
    PaddingMasks,
    batch_graphs,
    node_graph,
    padding_masks,
    receiver_order,
)
from jaxcl.graphs._budgets import PaddingBudget, padding_budgets, pass_budget, select_budget
from jaxcl.graphs._diffusion import (
    DENSE_DIFFUSION_LIMIT,
    Diffusion,
    degree_matched_eps,
    minmax_columns,
    ppr_dataset,
    ppr_diffusion,
    ppr_matrix,
)
from jaxcl.graphs._segments import (
    aggregate_edges,
    gather_nodes,
    gcn_normalization,
    node_graph_ids,
    pool_nodes,
    window_edges,
)
from jaxcl.graphs._sparse import (
    Slabs,
    SparseMatrix,
    adjacency_pattern,
    edge_dots,
    edge_pattern,
    sparse_matmul,
)

__all__ = [
    "DENSE_DIFFUSION_LIMIT",
    "Diffusion",
    "GraphBatcher",
    "PaddingBudget",
    "PaddingMasks",
    "Slabs",
    "SparseMatrix",
    "adjacency_pattern",
    "aggregate_edges",
    "batch_graphs",
    "degree_matched_eps",
    "drop_edges",
    "edge_dots",
    "edge_pattern",
    "gather_nodes",
    "gcn_normalization",
    "mask_features",
    "minmax_columns",
    "node_graph",
    "node_graph_ids",
    "padding_budgets",
    "padding_masks",
    "pass_budget",
    "pool_nodes",
    "ppr_dataset",
    "ppr_diffusion",
    "ppr_matrix",
    "receiver_order",
    "select_budget",
    "sparse_matmul",
    "window_edges",
]
