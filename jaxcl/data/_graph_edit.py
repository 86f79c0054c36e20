"""Editing a graph data set: removing the nodes that carry one node tag."""

from __future__ import annotations

import numpy as np

from jaxcl.data._graph_types import GraphDataset, trusted_graph


def drop_tagged_nodes(dataset: GraphDataset, column: int) -> GraphDataset:
    """The data set without the nodes whose one-hot tag is ``column``, nor their edges.

    The GIN-format ``PTC.txt`` is TU's PTC_MR with explicit hydrogen atoms: its tag 16
    marks 3,877 nodes of degree 1, and without them the 344 graphs have PTC_MR's 4,915
    nodes (14.29 per graph, DACL Table 4) and 5,054 edges. ``drop_tagged_nodes(ptc, 16)``
    recovers those graphs, with the other 18 tags as features.

    Args:
      dataset: graphs with one-hot node features (``node_features='tags'``).
      column: the feature column (tag index in sorted tag order) whose nodes go.

    Returns:
      A :class:`GraphDataset` whose node features lack ``column``; node ids are renumbered
      in their original order, and edges touching a removed node are removed.

    Raises:
      ValueError: ``column`` is out of range, the features are not one-hot, or a graph
        would lose all its nodes.

    Example:
      >>> from jaxcl.data import Graph, GraphDataset
      >>> g = Graph(senders=[0, 1], receivers=[1, 0], node_features=np.eye(2), label=0)
      >>> ds = GraphDataset("toy", (g,), np.array([0]), num_classes=1, num_features=2)
      >>> out = drop_tagged_nodes(ds, 1)
      >>> out.graphs[0].num_nodes, out.graphs[0].num_edges, out.num_features
      (1, 0, 1)
    """
    fn = "drop_tagged_nodes"
    if not 0 <= column < dataset.num_features:
        raise ValueError(f"{fn}: `column` must lie in [0, {dataset.num_features}), got {column!r}")
    graphs = []
    for i, g in enumerate(dataset.graphs):
        x = g.node_features
        if not (np.all((x == 0) | (x == 1)) and np.all(x.sum(axis=1) == 1)):
            raise ValueError(f"{fn}: graph {i} has node features that are not one-hot")
        keep = x[:, column] == 0
        if not keep.any():
            raise ValueError(f"{fn}: every node of graph {i} has tag {column}")
        new_id = np.cumsum(keep) - 1
        edge_kept = keep[g.senders] & keep[g.receivers]
        graphs.append(
            trusted_graph(
                new_id[g.senders[edge_kept]].astype(np.int32),
                new_id[g.receivers[edge_kept]].astype(np.int32),
                np.ascontiguousarray(np.delete(x[keep], column, axis=1)),
                g.label,
            )
        )
    return GraphDataset(
        name=dataset.name,
        graphs=tuple(graphs),
        labels=dataset.labels,
        num_classes=dataset.num_classes,
        num_features=dataset.num_features - 1,
    )
