"""Turns the flat arrays a reader parsed into a :class:`GraphDataset`.

Both graph-classification formats (TU and GIN) come down to the same flat description:
nodes numbered consecutively graph after graph, a list of (possibly one-directional,
possibly repeated) edges between them, a raw tag per node, optional continuous node
attributes and a raw label per graph. The choices that make a data set "as the papers
use it" are taken here, once, for both formats:

- edges: made undirected (the union of both directions), deduplicated, self-loops dropped;
- node features: one-hot node tags, one-hot node degree, both side by side (MVGRL's graph
  code), or the continuous attributes;
- graph labels: raw values mapped to ``0..C-1`` in sorted order.
"""

from __future__ import annotations

import numpy as np

from jaxcl import _checks
from jaxcl.data._graph_types import GraphDataset, trusted_graph

NODE_FEATURE_KINDS = ("auto", "tags", "degree", "tags+degree", "attributes", "constant")
# The kinds that read node tags.
TAG_KINDS = ("tags", "tags+degree")


def check_feature_args(fn: str, node_features: str, max_degree: int | None) -> None:
    _checks.one_of(fn, "node_features", node_features, NODE_FEATURE_KINDS)
    if max_degree is not None:
        _checks.positive_int(fn, "max_degree", max_degree)


def undirected_edges(
    senders: np.ndarray, receivers: np.ndarray, num_nodes: int
) -> tuple[np.ndarray, np.ndarray]:
    """Both directions of every edge, each once, no self-loops, sorted by (sender, receiver).

    Args:
      senders: int ``[E]`` global node ids.
      receivers: int ``[E]`` global node ids.
      num_nodes: total number of nodes (an upper bound on the ids).

    Returns:
      ``(senders, receivers)`` as int64 arrays of the symmetric, deduplicated edge set.

    Example:
      >>> undirected_edges(np.array([0, 0, 1]), np.array([1, 1, 1]), 2)
      (array([0, 1]), array([1, 0]))
    """
    senders = np.asarray(senders, dtype=np.int64)
    receivers = np.asarray(receivers, dtype=np.int64)
    keep = senders != receivers
    s, r = senders[keep], receivers[keep]
    keys = np.sort(np.concatenate([s * num_nodes + r, r * num_nodes + s]))
    keys = keys[np.concatenate([[True], keys[1:] != keys[:-1]])] if keys.size else keys
    return keys // num_nodes, keys % num_nodes


def one_hot(index: np.ndarray, width: int) -> np.ndarray:
    """float32 ``[len(index), width]`` with a single 1 per row."""
    out = np.zeros((index.shape[0], width), dtype=np.float32)
    out[np.arange(index.shape[0]), index] = 1.0
    return out


def degree_features(degree: np.ndarray, max_degree: int | None) -> np.ndarray:
    """One-hot node degree, width ``max(degree) + 1``; with ``max_degree``, width
    ``max_degree + 1`` and every degree ``>= max_degree`` in the last (cap) bucket. Called on
    a whole data set, the width comes from all its graphs, test folds included (structure
    only, no labels: GIN's ``degree_as_tag`` does the same)."""
    if max_degree is None:
        width = int(degree.max(initial=0)) + 1
    else:
        width = max_degree + 1
        degree = np.minimum(degree, max_degree)
    return one_hot(degree, width)


def build_graph_dataset(
    name: str,
    *,
    graph_sizes: np.ndarray,
    senders: np.ndarray,
    receivers: np.ndarray,
    raw_labels: np.ndarray,
    tags: np.ndarray | None,
    attributes: np.ndarray | None,
    node_features: str,
    max_degree: int | None,
    fn: str,
    tags_source: str,
    attributes_source: str,
) -> GraphDataset:
    """Assembles a :class:`GraphDataset` from a reader's flat arrays.

    Args:
      name: the data set's name.
      graph_sizes: int ``[G]`` number of nodes of each graph; graph ``g`` owns the global
        node ids ``sum(graph_sizes[:g]) ..`` onwards.
      senders: int ``[E]`` global node id of each listed edge's source.
      receivers: int ``[E]`` global node id of each listed edge's target (same graph).
      raw_labels: int ``[G]`` graph labels as written in the file.
      tags: int ``[N]`` raw node tags, or None where the file has none.
      attributes: float ``[N, A]`` continuous node attributes, or None.
      node_features: ``'auto'`` (tags if they take more than one value over the data set,
        else degree), ``'tags'``, ``'degree'``, ``'tags+degree'`` (the tags' one-hot followed
        by the degree's, as MVGRL's and m-Mix's graph code feed labelled graphs),
        ``'attributes'`` or ``'constant'`` (one feature equal to 1 on every node).
      max_degree: cap for the degree one-hot (bucket ``max_degree`` holds all higher
        degrees), or None for width ``max degree + 1``.
      fn: the calling loader's name, for error messages.
      tags_source: where tags would come from (a file), for error messages.
      attributes_source: where attributes would come from, for error messages.

    Returns:
      The data set; graph ``g``'s edges use local node ids ``0..graph_sizes[g]-1``.
    """
    graph_sizes = np.asarray(graph_sizes, dtype=np.int64)
    offsets = np.concatenate([[0], np.cumsum(graph_sizes)])
    num_nodes = int(offsets[-1])
    s, r = undirected_edges(senders, receivers, num_nodes)

    if node_features == "auto":
        varying = tags is not None and np.unique(tags).size > 1
        node_features = "tags" if varying else "degree"
    if node_features in TAG_KINDS:
        if tags is None:
            raise ValueError(
                f"{fn}: node_features={node_features!r} but {tags_source} has no node tags"
            )
        tag_values, tag_index = np.unique(tags, return_inverse=True)
        features = one_hot(tag_index.reshape(-1), tag_values.size)
        if node_features == "tags+degree":
            degree = degree_features(np.bincount(s, minlength=num_nodes), max_degree)
            features = np.concatenate([features, degree], axis=1)
    elif node_features == "degree":
        features = degree_features(np.bincount(s, minlength=num_nodes), max_degree)
    elif node_features == "constant":
        features = np.ones((num_nodes, 1), dtype=np.float32)
    else:
        if attributes is None:
            raise ValueError(
                f"{fn}: node_features='attributes' but {attributes_source} has no node attributes"
            )
        features = np.asarray(attributes, dtype=np.float32)

    label_values, labels = np.unique(np.asarray(raw_labels), return_inverse=True)
    labels = labels.reshape(-1).astype(np.int32)

    # Edges are sorted by global sender, and a graph's nodes are consecutive, so each
    # graph's edges form one contiguous run; local ids subtract the graph's first node.
    edge_bounds = np.searchsorted(s, offsets).tolist()
    edge_graph = np.repeat(np.arange(graph_sizes.shape[0]), np.diff(edge_bounds))
    local_s = (s - offsets[edge_graph]).astype(np.int32)
    local_r = (r - offsets[edge_graph]).astype(np.int32)
    node_bounds = offsets.tolist()
    graphs = [
        trusted_graph(
            local_s[edge_bounds[g] : edge_bounds[g + 1]],
            local_r[edge_bounds[g] : edge_bounds[g + 1]],
            features[node_bounds[g] : node_bounds[g + 1]],
            label,
        )
        for g, label in enumerate(labels.tolist())
    ]
    return GraphDataset(
        name=name,
        graphs=tuple(graphs),
        labels=labels,
        num_classes=int(label_values.size),
        num_features=int(features.shape[1]),
    )
