"""Reader for the TU Dortmund graph-kernel collection's own file format.

A data set ``DS`` is a folder of comma-separated text files (see each data set's
README.txt): ``DS_A.txt`` (one ``row, col`` edge per line, 1-based global node ids),
``DS_graph_indicator.txt`` (graph id of each node, 1-based), ``DS_graph_labels.txt``
(one label per graph), and optionally ``DS_node_labels.txt`` (one integer tag per node)
and ``DS_node_attributes.txt`` (comma-separated floats per node). Edge labels and
attributes are not read: none of the encoders here use them.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from jaxcl.data._graph_build import TAG_KINDS, build_graph_dataset, check_feature_args
from jaxcl.data._graph_io import (
    GraphFormatError,
    missing,
    read_float_table,
    read_int_table,
    require_file,
)
from jaxcl.data._graph_types import GraphDataset


def _folder(root: str | os.PathLike, name: str) -> Path:
    root = Path(root)
    if not root.is_dir():
        raise missing(root, "TU data directory", "tu", name)
    folder = root / name
    if not folder.is_dir() and (root / f"{name}_A.txt").is_file():
        folder = root  # `root` is the data set's own folder
    if not folder.is_dir():
        raise missing(folder, f"TU data set folder for {name!r}", "tu", name)
    return folder


def _graph_indicator(path: Path) -> tuple[np.ndarray, np.ndarray]:
    """Graph sizes and each node's 0-based graph; nodes of a graph must be consecutive."""
    indicator = read_int_table(path, "a graph id", 1)[:, 0]
    if indicator.size == 0:
        raise GraphFormatError(path, 1, "empty file; expected one graph id per node")
    if indicator[0] != 1:
        raise GraphFormatError(path, 1, f"the first graph id must be 1, got {indicator[0]}")
    steps = np.diff(indicator)
    bad = np.flatnonzero((steps != 0) & (steps != 1))
    if bad.size:
        i = int(bad[0]) + 1
        prev, cur = int(indicator[i - 1]), int(indicator[i])
        if cur < prev:
            problem = f"graph id {cur} follows {prev}: the nodes of each graph must be consecutive"
        else:
            empty = f"graph {prev + 1}" if cur == prev + 2 else f"graphs {prev + 1}..{cur - 1}"
            problem = (
                f"graph id jumps from {prev} to {cur}: graph ids must be contiguous, so "
                f"{empty} would have no nodes"
            )
        raise GraphFormatError(path, i + 1, f"not contiguous: {problem}")
    node_graph = indicator - 1
    return np.bincount(node_graph), node_graph


def _per_node(path: Path, table: np.ndarray, num_nodes: int, indicator: Path) -> np.ndarray:
    if table.shape[0] != num_nodes:
        line = min(table.shape[0], num_nodes) + 1
        problem = (
            f"the file ends after {table.shape[0]} lines"
            if table.shape[0] < num_nodes
            else "extra line"
        )
        raise GraphFormatError(
            path, line, f"{problem}: {indicator.name} lists {num_nodes} nodes, one line each"
        )
    return table


def load_tu(
    root: str | os.PathLike,
    name: str,
    *,
    node_features: str = "auto",
    max_degree: int | None = None,
) -> GraphDataset:
    """Loads a graph-classification data set from the TU Dortmund format.

    Args:
      root: a directory holding the data set's folder ``<name>/`` (with
        ``<name>_A.txt`` etc. inside), or that folder itself.
      name: the data set's name, the prefix of its files, e.g. ``"MUTAG"``.
      node_features: ``'auto'`` (one-hot node labels if the data set has node labels that
        take more than one value, else one-hot degree), ``'tags'`` (one-hot node labels,
        width = number of distinct node labels in the data set), ``'degree'``,
        ``'tags+degree'`` (both one-hots side by side, as MVGRL's graph code),
        ``'attributes'`` (``<name>_node_attributes.txt`` as given) or ``'constant'`` (a
        single feature 1 on every node).
      max_degree: with degree features, degrees ``>= max_degree`` share the last bucket and
        the width is ``max_degree + 1``; None gives width ``max degree + 1``.

    Returns:
      A :class:`GraphDataset` in graph-id order. Labels are the raw labels mapped to
      ``0..C-1`` in sorted order (MUTAG's -1/1 become 0/1); edges are undirected (both
      directions stored), without duplicates or self-loops.

    Raises:
      FileNotFoundError: the folder or a required file is missing (the message says where
        the data lives and how to get it).
      GraphFormatError: a ValueError naming the file and line of a malformed entry.

    Example (from the repository root, with ``../shared`` beside it):
      >>> ds = load_tu("../shared/data/tu_raw", "MUTAG")
      >>> len(ds), ds.num_classes, ds.num_features
      (188, 2, 7)
    """
    check_feature_args("load_tu", node_features, max_degree)
    folder = _folder(root, name)
    file = lambda suffix: folder / f"{name}_{suffix}.txt"
    indicator_path = require_file(file("graph_indicator"), "TU graph indicator file", "tu", name)
    edges_path = require_file(file("A"), "TU adjacency file", "tu", name)
    labels_path = require_file(file("graph_labels"), "TU graph labels file", "tu", name)

    sizes, node_graph = _graph_indicator(indicator_path)
    num_nodes, num_graphs = node_graph.shape[0], sizes.shape[0]

    raw_labels = read_int_table(labels_path, "a graph label", 1)[:, 0]
    if raw_labels.shape[0] != num_graphs:
        line = min(raw_labels.shape[0], num_graphs) + 1
        problem = (
            f"the file ends after {raw_labels.shape[0]} lines"
            if raw_labels.shape[0] < num_graphs
            else "extra line"
        )
        raise GraphFormatError(
            labels_path,
            line,
            f"{problem}: {indicator_path.name} has {num_graphs} graphs, one label line each",
        )

    edges = read_int_table(edges_path, "an edge 'row, col'", 2) - 1
    out = np.flatnonzero(((edges < 0) | (edges >= num_nodes)).any(axis=1))
    if out.size:
        i = int(out[0])
        raise GraphFormatError(
            edges_path,
            i + 1,
            f"edge ({edges[i, 0] + 1}, {edges[i, 1] + 1}) refers to a node outside "
            f"1..{num_nodes}, the nodes listed in {indicator_path.name}",
        )
    across = np.flatnonzero(node_graph[edges[:, 0]] != node_graph[edges[:, 1]])
    if across.size:
        i = int(across[0])
        a, b = edges[i]
        raise GraphFormatError(
            edges_path,
            i + 1,
            f"edge ({a + 1}, {b + 1}) joins graph {node_graph[a] + 1} to graph "
            f"{node_graph[b] + 1} (per {indicator_path.name})",
        )

    tags = attributes = None
    tags_path, attributes_path = file("node_labels"), file("node_attributes")
    if tags_path.is_file() and node_features in ("auto", *TAG_KINDS):
        table = read_int_table(tags_path, "one node label", 1)
        tags = _per_node(tags_path, table, num_nodes, indicator_path)[:, 0]
    elif node_features in TAG_KINDS:
        raise missing(
            tags_path,
            f"TU node labels file (needed for node_features={node_features!r})",
            "tu",
            name,
        )
    if node_features == "attributes":
        require_file(
            attributes_path,
            "TU node attributes file (needed for node_features='attributes')",
            "tu",
            name,
        )
        table = read_float_table(attributes_path, "node attributes")
        attributes = _per_node(attributes_path, table, num_nodes, indicator_path)

    return build_graph_dataset(
        name,
        graph_sizes=sizes,
        senders=edges[:, 0],
        receivers=edges[:, 1],
        raw_labels=raw_labels,
        tags=tags,
        attributes=attributes,
        node_features=node_features,
        max_degree=max_degree,
        fn="load_tu",
        tags_source=str(tags_path),
        attributes_source=str(attributes_path),
    )
