"""Editing a graph data set: removing the nodes that carry one node tag; appending one-hot
degrees to the node features; the graph-edit triplets of m-Mix's Table 6 (a subgraph, and
copies with one and with two edges moved)."""

from __future__ import annotations

import numpy as np

from jaxcl import _checks
from jaxcl.data._graph_build import degree_features, undirected_edges
from jaxcl.data._graph_types import Graph, GraphDataset, trusted_graph


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
    if not (_checks.is_integer(column) and 0 <= column < dataset.num_features):
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


def with_degree_features(dataset: GraphDataset, max_degree: int | None = None) -> GraphDataset:
    """The data set with each node's one-hot degree appended to its features.

    The degree counts a node's neighbours in its graph as stored (edges in both directions,
    no self-loops). Loading with ``node_features='tags+degree'`` gives the same features; this
    is for a data set edited after loading, e.g. ``drop_tagged_nodes(ptc, 16)``, whose
    degrees must be those of the graphs without the dropped nodes.

    Args:
      dataset: graphs with any node features.
      max_degree: cap (bucket ``max_degree`` holds all higher degrees), or None for width
        ``max degree + 1`` over the data set.

    Returns:
      A :class:`GraphDataset` with ``num_features`` grown by the degree one-hot's width.

    Example:
      >>> from jaxcl.data import Graph, GraphDataset
      >>> g = Graph(senders=[0, 1], receivers=[1, 0], node_features=np.ones((3, 1)), label=0)
      >>> ds = with_degree_features(GraphDataset("toy", (g,), np.array([0]), 1, 1))
      >>> ds.graphs[0].node_features.tolist()
      [[1.0, 0.0, 1.0], [1.0, 0.0, 1.0], [1.0, 1.0, 0.0]]
    """
    if max_degree is not None:
        max_degree = _checks.positive_int("with_degree_features", "max_degree", max_degree)
    degrees = [np.bincount(g.senders, minlength=g.num_nodes) for g in dataset.graphs]
    onehot = degree_features(np.concatenate(degrees), max_degree)
    bounds = np.cumsum([0] + [d.size for d in degrees])
    graphs = tuple(
        trusted_graph(
            g.senders,
            g.receivers,
            np.concatenate([g.node_features, onehot[bounds[i] : bounds[i + 1]]], axis=1),
            g.label,
        )
        for i, g in enumerate(dataset.graphs)
    )
    return GraphDataset(
        name=dataset.name,
        graphs=graphs,
        labels=dataset.labels,
        num_classes=dataset.num_classes,
        num_features=dataset.num_features + onehot.shape[1],
    )


def _edited(pairs: np.ndarray, num_nodes: int, count: int, rng) -> np.ndarray:
    """``pairs`` (undirected, ``[m, 2]``, i < j) with ``count`` of them, drawn without
    replacement, replaced by ``count`` distinct node pairs that are not edges of ``pairs``."""
    present = set((pairs[:, 0] * num_nodes + pairs[:, 1]).tolist())
    added: list[int] = []
    while len(added) < count:
        i, j = sorted(rng.choice(num_nodes, 2, replace=False).tolist())
        key = i * num_nodes + j
        if key not in present and key not in added:
            added.append(key)
    kept = np.delete(pairs, rng.choice(len(pairs), count, replace=False), axis=0)
    new = np.array([[k // num_nodes, k % num_nodes] for k in added], np.int64)
    return np.concatenate([kept, new])


def _graph_of(pairs: np.ndarray, features: np.ndarray, label: int) -> Graph:
    s, r = undirected_edges(pairs[:, 0], pairs[:, 1], features.shape[0])
    return trusted_graph(s.astype(np.int32), r.astype(np.int32), features, label)


def edit_triplets(
    dataset: GraphDataset,
    num_nodes: int,
    *,
    num_graphs: int = 1000,
    positive_edits: int = 1,
    negative_edits: int = 2,
    seed: int = 0,
) -> tuple[GraphDataset, GraphDataset, GraphDataset, np.ndarray]:
    """Graph-edit triplets (m-Mix Table 6, after Li et al. 2019's graph matching networks).

    ``num_graphs`` graphs are drawn without replacement (all of them when the set is
    smaller); each is cut to the subgraph induced by its first ``num_nodes`` nodes (all its
    nodes when it has fewer: m-Mix's code slices a zero-padded adjacency instead, which adds
    isolated nodes); the *positive* is that subgraph with ``positive_edits`` of its edges
    moved (removed, and as many node pairs that were not edges added), the *negative* with
    ``negative_edits`` moved, each drawn independently from the subgraph. A representation
    that tracks edit distance should find the positive closer to the anchor than the
    negative. All three keep the anchor's node features (the first ``num_nodes`` rows of
    the graph's features, as m-Mix's code passes one feature array for all three: with
    degree features, ``'degree'`` or ``'tags+degree'``, they are the whole graph's degrees,
    not the subgraph's). Subgraphs with fewer edges, or
    fewer missing node pairs, than an edit moves are skipped.

    Args:
      dataset: the graphs (undirected, both directions stored, as the loaders give them).
      num_nodes: the subgraph size ``n``; m-Mix uses 10, 15, 20 and 50 on COIL-DEL.
      num_graphs: how many graphs to draw (m-Mix: 1,000 of COIL-DEL's 3,900).
      positive_edits, negative_edits: edges moved in the positive and in the negative
        (m-Mix: 1 and 2); ``positive_edits < negative_edits``.
      seed: seeds the draw of graphs and every edit.

    Returns:
      ``(anchors, positives, negatives, indices)``: three :class:`GraphDataset`s of the same
      length, graph ``k`` of each made from ``dataset.graphs[indices[k]]`` (labels kept).

    Raises:
      ValueError: on a bad argument, or when no drawn subgraph can be edited.

    Example:
      >>> from jaxcl.data import Graph
      >>> ring = Graph(senders=[0, 1, 1, 2, 2, 3, 3, 0], receivers=[1, 0, 2, 1, 3, 2, 0, 3],
      ...              node_features=np.ones((4, 1)), label=0)
      >>> ds = GraphDataset("ring", (ring,), np.array([0]), num_classes=1, num_features=1)
      >>> a, p, n, idx = edit_triplets(ds, 4, positive_edits=1, negative_edits=2)
      >>> a.graphs[0].num_edges, p.graphs[0].num_edges, n.graphs[0].num_edges
      (8, 8, 8)
    """
    fn = "edit_triplets"
    for name, value, low in (
        ("num_nodes", num_nodes, 2),
        ("num_graphs", num_graphs, 1),
        ("positive_edits", positive_edits, 0),
    ):
        if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < low:
            raise ValueError(f"{fn}: `{name}` must be an int >= {low}, got {value!r}")
    if (
        isinstance(negative_edits, bool)
        or not isinstance(negative_edits, int | np.integer)
        or negative_edits <= positive_edits
    ):
        raise ValueError(
            f"{fn}: `negative_edits` must be an int > positive_edits={positive_edits}, "
            f"got {negative_edits!r}"
        )
    rng = np.random.default_rng(seed)
    drawn = rng.choice(len(dataset), min(num_graphs, len(dataset)), replace=False)
    anchors, positives, negatives, kept = [], [], [], []
    for i in drawn.tolist():
        g = dataset.graphs[i]
        n = min(num_nodes, g.num_nodes)
        inside = (g.senders < n) & (g.receivers < n) & (g.senders < g.receivers)
        pairs = np.stack([g.senders[inside], g.receivers[inside]], axis=1).astype(np.int64)
        if len(pairs) < negative_edits or n * (n - 1) // 2 - len(pairs) < negative_edits:
            continue
        x = np.ascontiguousarray(g.node_features[:n])
        anchors.append(_graph_of(pairs, x, g.label))
        positives.append(_graph_of(_edited(pairs, n, positive_edits, rng), x, g.label))
        negatives.append(_graph_of(_edited(pairs, n, negative_edits, rng), x, g.label))
        kept.append(i)
    if not kept:
        raise ValueError(
            f"{fn}: none of the {len(drawn)} drawn graphs of {dataset.name!r} has, on its "
            f"first {num_nodes} nodes, {negative_edits} edges and {negative_edits} missing "
            "node pairs to move"
        )
    kept_idx = np.asarray(kept, np.int64)

    def as_set(graphs, tag):
        return GraphDataset(
            name=f"{dataset.name} ({tag}, n={num_nodes})",
            graphs=tuple(graphs),
            labels=dataset.labels[kept_idx],
            num_classes=dataset.num_classes,
            num_features=dataset.num_features,
        )

    return (
        as_set(anchors, "edit anchors"),
        as_set(positives, f"{positive_edits} edits"),
        as_set(negatives, f"{negative_edits} edits"),
        kept_idx,
    )
