"""Reader for the GIN/DGCNN text format of the TU graph-classification benchmarks.

The format (as packaged with the GIN paper's code, from DGCNN)::

    <number of graphs>
    <n_nodes> <label>                      # one header per graph, then n_nodes lines:
    <tag> <n_neighbours> <nbr> <nbr> ...   # neighbours are 0-based ids within the graph
                                           # optionally followed by float node features

Node lines are read as GIN's own loader reads them (``networkx.Graph.add_edge`` per
listed neighbour): the edge set is the union of the listed pairs in both directions, and
repeated pairs count once. This matters for one file: in the public ``MUTAG.txt`` the first
graph's first nine node lines read ``i 2 a b`` (tags 0..8, neighbour lists that are not
symmetric), so that graph differs from its TU original (graph 100 of the TU files) and
GIN-format MUTAG has nine tag values where the TU files have seven atom types. GIN's
published numbers were made with these files, so they are read as they are; code built on
PyG's ``TUDataset`` (InfoGraph, and DACL and m-Mix after it) reads the TU files instead,
which :func:`jaxcl.data.load_tu` matches.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from jaxcl.data._graph_build import build_graph_dataset, check_feature_args
from jaxcl.data._graph_io import GraphFormatError, TokenizedFile, missing
from jaxcl.data._graph_types import GraphDataset


def _resolve(root_or_file: str | os.PathLike, name: str | None) -> tuple[Path, str]:
    path = Path(root_or_file)
    if path.is_file():
        return path, name if name is not None else path.stem
    if name is None and not path.exists():
        raise missing(path, "GIN data file", "gin", path.stem)
    if name is None:
        raise ValueError(
            f"load_gin: `name` is required when `root_or_file` is a directory, got {str(path)!r}"
        )
    if not path.is_dir():
        raise missing(path, "GIN data directory", "gin", name)
    for candidate in (path / f"{name}.txt", path / name / f"{name}.txt"):
        if candidate.is_file():
            return candidate, name
    raise missing(path / f"{name}.txt", f"GIN data file for {name!r}", "gin", name)


def _graph_headers(file: TokenizedFile):
    """Walks the headers: (0-based header lines, graph sizes, raw labels).

    This is the one loop over graphs (not over lines or tokens): each header says how many
    node lines follow, so the next header's position is known only after reading this one.
    """
    if file.num_lines == 0:
        raise file.error(0, "empty file; expected the number of graphs")
    if file.line_size[0] != 1:
        raise file.error(0, f"expected the number of graphs alone, got {file.text(0)}")
    num_graphs = int(file.ints(np.array([0]), "number of graphs")[0])
    if num_graphs < 1:
        raise file.error(0, f"the number of graphs must be >= 1, got {num_graphs}")
    line_size, line_start, num_lines = file.line_size, file.line_start, file.num_lines
    headers, sizes, labels = [], [], []
    pos = 1
    for g in range(num_graphs):
        if pos >= num_lines:
            raise file.error(
                0,
                f"the first line says {num_graphs} graphs but the file ends (line {num_lines}) "
                f"after {g} graph{'s' * (g != 1)}",
            )
        if line_size[pos] != 2:
            hint = (
                ""
                if g == 0
                else f" (graph {g - 1}, header at line {headers[-1] + 1}, declares "
                f"{sizes[-1]} nodes: if fewer node lines follow it, that count is wrong)"
            )
            raise file.error(
                pos, f"expected the header 'n_nodes label' of graph {g}, got {file.text(pos)}{hint}"
            )
        n, label = file.ints(line_start[pos] + np.arange(2), f"graph {g} header").tolist()
        if n < 1:
            raise file.error(pos, f"graph {g} must have at least 1 node, got {n}")
        if pos + n >= num_lines:
            raise file.error(
                pos,
                f"graph {g} declares {n} nodes but the file ends after "
                f"{num_lines - pos - 1} node lines",
            )
        headers.append(pos)
        sizes.append(n)
        labels.append(label)
        pos += n + 1
    if pos < num_lines:
        raise file.error(
            pos,
            f"the first line says {num_graphs} graphs, but lines go on after the last one "
            f"(graph {num_graphs - 1}, header at line {headers[-1] + 1}, {sizes[-1]} nodes)",
        )
    return np.array(headers), np.array(sizes), np.array(labels)


def _parse(path: Path):
    """Parses a GIN text file into flat arrays (see ``build_graph_dataset``)."""
    file = TokenizedFile(path)
    headers, sizes, labels = _graph_headers(file)

    # Every node line: its graph, its id in the graph, its 0-based line. Node k (in file
    # order) is also global node id k.
    offsets = np.concatenate([[0], np.cumsum(sizes)])
    node_graph = np.repeat(np.arange(sizes.shape[0]), sizes)
    local_id = np.arange(offsets[-1]) - offsets[node_graph]
    node_line = headers[node_graph] + 1 + local_id
    first_token = file.line_start[node_line]
    num_tokens = file.line_size[node_line]

    def fail(k: int, problem: str) -> GraphFormatError:
        g = node_graph[k]
        where = f"node {local_id[k]} of graph {g} (header line {headers[g] + 1}, {sizes[g]} nodes)"
        line = int(node_line[k])
        return file.error(line, f"{where}: {problem}: {file.text(line)}")

    short = np.flatnonzero(num_tokens < 2)
    if short.size:
        raise fail(int(short[0]), "truncated line, expected 'tag n_neighbours neighbours...'")
    head = file.ints(first_token[:, None] + np.arange(2), "node line 'tag n_neighbours'")
    tags, counts = head[:, 0], head[:, 1]
    extra = num_tokens - 2 - counts
    bad = np.flatnonzero((counts < 0) | (extra < 0))
    if bad.size:
        k = int(bad[0])
        raise fail(
            k,
            f"neighbour count mismatch: n_neighbours is {counts[k]} but the line lists "
            f"{num_tokens[k] - 2} values",
        )
    # Values after the neighbours are node features; every node must have as many.
    num_attributes = int(extra[0])
    ragged = np.flatnonzero(extra != num_attributes)
    if ragged.size:
        k = int(ragged[0])
        raise fail(
            k,
            f"neighbour count mismatch or ragged features: n_neighbours is {counts[k]} and "
            f"{extra[k]} more values follow, where the first node line (line "
            f"{node_line[0] + 1}) has {num_attributes} after its neighbours",
        )

    senders = np.repeat(np.arange(node_line.shape[0]), counts)  # = global node id
    within = np.arange(senders.shape[0]) - np.repeat(np.cumsum(counts) - counts, counts)
    neighbours = file.ints(first_token[senders] + 2 + within, "neighbour id")
    limit = sizes[node_graph[senders]]
    out = np.flatnonzero((neighbours < 0) | (neighbours >= limit))
    if out.size:
        i = int(out[0])
        raise fail(
            int(senders[i]),
            f"neighbour id {neighbours[i]} out of range, ids must lie in 0..{limit[i] - 1}",
        )
    attributes = None
    if num_attributes:
        index = (first_token + num_tokens - num_attributes)[:, None] + np.arange(num_attributes)
        attributes = file.floats(index, "node feature")
    receivers = offsets[node_graph[senders]] + neighbours
    return sizes, labels, tags, attributes, senders, receivers


def load_gin(
    root_or_file: str | os.PathLike,
    name: str | None = None,
    *,
    node_features: str = "auto",
    max_degree: int | None = None,
) -> GraphDataset:
    """Loads a graph-classification data set from the GIN/DGCNN text format.

    Args:
      root_or_file: a directory holding ``<name>.txt`` (or GIN's ``<name>/<name>.txt``),
        or the text file itself.
      name: the data set's name, e.g. ``"MUTAG"``; when a file is given it defaults to the
        file's stem.
      node_features: ``'auto'`` (one-hot node tags if the tags take more than one value
        over the data set, else one-hot degree: IMDB-BINARY/MULTI have all tags 0),
        ``'tags'``, ``'degree'``, ``'tags+degree'`` (both one-hots side by side, as MVGRL's
        graph code), or ``'attributes'`` (the float values that follow the
        neighbours on each node line, where the file has them), or ``'constant'`` (a
        single feature 1 on every node: what PyG code feeds graphs without node labels).
        The one-hot width for tags is the number of distinct tags in the whole file, in
        sorted tag order.
      max_degree: with degree features, degrees ``>= max_degree`` share the last bucket and
        the width is ``max_degree + 1``; None gives width ``max degree + 1``.

    Returns:
      A :class:`GraphDataset` in file order. Labels are the file's labels mapped to
      ``0..C-1`` in sorted order; edges are undirected (both directions stored), without
      duplicates or self-loops.

    Raises:
      FileNotFoundError: the directory or file does not exist (the message says where the
        data lives).
      GraphFormatError: a ValueError naming the file and line of a malformed entry.

    Example (from the repository root, with ``../shared`` beside it):
      >>> ds = load_gin("../shared/data/tu_gin", "MUTAG")
      >>> len(ds), ds.num_classes, ds.num_features
      (188, 2, 9)
    """
    check_feature_args("load_gin", node_features, max_degree)
    path, name = _resolve(root_or_file, name)
    sizes, labels, tags, attributes, senders, receivers = _parse(path)
    return build_graph_dataset(
        name,
        graph_sizes=sizes,
        senders=senders,
        receivers=receivers,
        raw_labels=labels,
        tags=tags,
        attributes=attributes,
        node_features=node_features,
        max_degree=max_degree,
        fn="load_gin",
        tags_source=str(path),
        attributes_source=str(path),
    )
