"""PPI (protein-protein interaction, Hamilton et al. 2017): 24 tissue graphs, multi-label nodes.

The inductive node-classification benchmark of GraphSAGE, DGI, GRACE and m-Mix (Table 4):
20 training graphs, 2 validation and 2 test graphs; 50 node features (positional gene
sets, motif gene sets, immunological signatures) and 121 gene-ontology labels, any subset
per node. :func:`load_ppi` reads the GraphSAGE preprocessing in the layout DGL's and PyG's
readers download (``ppi.zip``); :func:`synthetic_ppi` makes random graphs of its sizes for
checking configs where the files are absent (they are not among the data sets here).

Both return one :class:`NodeDataset` holding all 24 graphs as disjoint components (the
training, validation and test graphs' nodes in that order), with multi-label ``labels``
and the split masks selecting whole graphs; ``ds.subgraph(ds.train_mask)`` is the
training graphs alone, what inductive pretraining may see.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from jaxcl._checks import is_real
from jaxcl.data._graph_build import undirected_edges
from jaxcl.data._graph_io import GraphFormatError, require_file
from jaxcl.data._graph_types import NodeDataset

# The files' split names, their graph counts and (for synthetic_ppi) node counts. The node
# counts are GraphSAGE's (56,944 nodes: 44,906 / 6,514 / 5,524), which m-Mix's appendix
# repeats (it gives the validation and test graphs together as 12,038).
SPLITS = (("train", 20, 44906), ("valid", 2, 6514), ("test", 2, 5524))
NUM_FEATURES, NUM_CLASSES = 50, 121
# PyG's PPI statistics for the training graphs: 1,226,368 directed edges over 44,906 nodes
# (61,318.4 per graph, both directions of each undirected edge, no self-loops).
MEAN_DEGREE = 1226368 / 44906
# The share of (node, label) pairs that are positive, for synthetic labels: our assumption
# (the real labels' rate is not published with the statistics above).
POSITIVE_RATE = 0.3


def _ppi_folder(folder: Path) -> Path:
    """``folder``, or its ``raw/`` (PyG's layout) when the files are there."""
    here, raw = folder / "train_graph.json", folder / "raw" / "train_graph.json"
    if not here.is_file() and raw.is_file():
        return folder / "raw"
    return folder


def _read_split(folder: Path, split: str):
    """``(features, labels, senders, receivers)`` of one split, node ids local."""
    paths = {
        part: require_file(folder / f"{split}_{part}", f"PPI's {split}_{part}", "ppi", "ppi")
        for part in ("graph.json", "feats.npy", "labels.npy", "graph_id.npy")
    }
    arrays = {}
    for part in ("feats.npy", "labels.npy", "graph_id.npy"):
        try:
            arrays[part] = np.load(paths[part], allow_pickle=False)
        except (OSError, ValueError) as e:
            raise GraphFormatError(paths[part], None, f"not a NumPy array file ({e})") from None
    x, y, gid = arrays["feats.npy"], arrays["labels.npy"], arrays["graph_id.npy"]
    n = x.shape[0] if x.ndim == 2 else -1
    if x.ndim != 2:
        raise GraphFormatError(paths["feats.npy"], None, f"expected [nodes, features]: {x.shape}")
    if y.ndim != 2 or y.shape[0] != n:
        raise GraphFormatError(paths["labels.npy"], None, f"expected [{n}, classes], got {y.shape}")
    if y.size and not np.isin(y, (0, 1)).all():
        raise GraphFormatError(paths["labels.npy"], None, "labels must be 0 or 1")
    if gid.shape != (n,):
        raise GraphFormatError(paths["graph_id.npy"], None, f"expected [{n}] ids, got {gid.shape}")
    try:
        with paths["graph.json"].open() as f:
            graph = json.load(f)
        ids = np.array([int(node["id"]) for node in graph["nodes"]], np.int64)
        links = graph["links"]
        s = np.array([int(e["source"]) for e in links], np.int64)
        r = np.array([int(e["target"]) for e in links], np.int64)
    except (ValueError, KeyError, TypeError) as e:
        raise GraphFormatError(
            paths["graph.json"], None, f"not a networkx node-link graph ({type(e).__name__}: {e})"
        ) from None
    # The readers (PyG, DGL) take node id i to be row i of the feature and label files.
    if ids.shape != (n,) or not np.array_equal(np.sort(ids), np.arange(n)):
        raise GraphFormatError(
            paths["graph.json"], None, f"expected node ids 0..{n - 1} (one per feature row)"
        )
    if s.size and (min(s.min(), r.min()) < 0 or max(s.max(), r.max()) >= n):
        raise GraphFormatError(paths["graph.json"], None, f"an edge endpoint is outside 0..{n - 1}")
    across = int(np.sum(gid[s] != gid[r]))
    if across:
        raise GraphFormatError(
            paths["graph.json"], None, f"{across} edges join nodes of different graphs"
        )
    s, r = undirected_edges(s, r, n)
    return x.astype(np.float32), y.astype(np.int32), s, r


def _assemble(name, parts) -> NodeDataset:
    """One NodeDataset of the splits' ``(x, y, senders, receivers)``, in order."""
    offsets = np.cumsum([0] + [p[0].shape[0] for p in parts])
    masks = []
    for k in range(3):
        mask = np.zeros(offsets[-1], bool)
        mask[offsets[k] : offsets[k + 1]] = True
        masks.append(mask)
    x = np.concatenate([p[0] for p in parts])
    y = np.concatenate([p[1] for p in parts])
    senders = np.concatenate([p[2] + o for p, o in zip(parts, offsets, strict=False)])
    receivers = np.concatenate([p[3] + o for p, o in zip(parts, offsets, strict=False)])
    return NodeDataset(name, senders, receivers, x, y, y.shape[1], *masks)


def load_ppi(folder: str | Path) -> NodeDataset:
    """PPI's 24 graphs from the GraphSAGE files, as one multi-label :class:`NodeDataset`.

    Reads ``{train,valid,test}_{graph.json,feats.npy,labels.npy,graph_id.npy}`` from
    ``folder`` (or ``folder/raw``, PyG's layout): the graph as networkx node-link JSON whose
    node ``i`` is row ``i`` of the feature and label arrays. Edges are made undirected,
    deduplicated and stripped of self-loops, as PyG's ``PPI`` reader does. The training
    graphs' nodes come first, then the validation and test graphs'; the masks are the
    split.

    Args:
      folder: the folder holding the twelve files.

    Returns:
      A :class:`NodeDataset` named ``'ppi'`` with ``labels`` ``[num_nodes, 121]`` of 0/1.

    Raises:
      FileNotFoundError: a file is missing (the message says where to get them).
      GraphFormatError: a file is malformed (wrong shapes, ids, or edges between graphs).
    """
    folder = _ppi_folder(Path(folder))
    parts = []
    for split, _, _ in SPLITS:
        parts.append(_read_split(folder, split))
    widths = {p[0].shape[1] for p in parts}, {p[1].shape[1] for p in parts}
    if len(widths[0]) != 1 or len(widths[1]) != 1:
        raise GraphFormatError(
            folder, None, f"the splits disagree on feature / label widths: {widths}"
        )
    return _assemble("ppi", parts)


def _graph_sizes(total: int, count: int) -> list[int]:
    base, extra = divmod(total, count)
    return [base + (i < extra) for i in range(count)]


def _random_edges(rng, n: int, m: int) -> tuple[np.ndarray, np.ndarray]:
    """``m`` distinct uniformly random undirected pairs of ``n`` nodes, no self-loops."""
    m = min(m, n * (n - 1) // 2)
    keys = np.empty(0, np.int64)
    while keys.size < m:
        a, b = rng.integers(0, n, size=(2, 2 * (m - keys.size) + 8))
        lo, hi = np.minimum(a, b), np.maximum(a, b)
        new = (lo * n + hi)[lo != hi]
        keys = np.unique(np.concatenate([keys, new]))
    keys = rng.permutation(keys)[:m]
    return keys // n, keys % n


def synthetic_ppi(*, seed: int = 0, scale: float = 1.0) -> NodeDataset:
    """Random graphs with PPI's sizes: for timing and checking configs, not for accuracy.

    24 graphs (20 training, 2 validation, 2 test) with GraphSAGE's node counts per split
    (44,906 / 6,514 / 5,524, split evenly among the split's graphs), each a uniformly random
    graph with PyG's mean degree of the training graphs (27.3 directed edges per node), 50
    standard-normal features and 121 labels, each positive with probability 0.3 (our
    assumption). Labels carry no signal: a classifier scores chance micro-F1.

    Args:
      seed: the generator's seed; the same seed gives the same graphs.
      scale: a fraction in ``(0, 1]`` of every graph's nodes (same mean degree where the
        graph can hold it): a small set for smoke tests of PPI's configs.

    Returns:
      A :class:`NodeDataset` named ``'ppi (synthetic)'``, laid out as :func:`load_ppi`'s.

    Example:
      >>> ds = synthetic_ppi(scale=0.01)
      >>> ds.num_nodes, ds.num_features, ds.num_classes, ds.multilabel
      (562, 50, 121, True)
    """
    if not (is_real(scale) and 0 < scale <= 1):
        raise ValueError(f"synthetic_ppi: `scale` must be a number in (0, 1], got {scale!r}")
    rng = np.random.default_rng(seed)
    parts = []
    for _, count, nodes in SPLITS:
        sizes = [max(2, round(s * scale)) for s in _graph_sizes(nodes, count)]
        senders, receivers, offset = [], [], 0
        for n in sizes:
            s, r = _random_edges(rng, n, round(n * MEAN_DEGREE / 2))
            senders += [s + offset, r + offset]
            receivers += [r + offset, s + offset]
            offset += n
        x = rng.standard_normal((offset, NUM_FEATURES)).astype(np.float32)
        y = (rng.random((offset, NUM_CLASSES)) < POSITIVE_RATE).astype(np.int32)
        s, r = undirected_edges(np.concatenate(senders), np.concatenate(receivers), offset)
        parts.append((x, y, s, r))
    return _assemble("ppi (synthetic)", parts)
