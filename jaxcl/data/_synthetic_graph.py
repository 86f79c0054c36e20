"""Random graphs with a citation data set's sizes, for timing, memory and checking configs
where its files are absent (Pubmed and DBLP are not among the data sets here)."""

from __future__ import annotations

import numpy as np

from jaxcl import _checks
from jaxcl.data._graph_types import NodeDataset

# nodes, undirected edges (stored both ways: twice as many directed ones), features, classes
# and nonzero features per node (mean), as PyTorch Geometric's Planetoid reports them. ESCo's
# Table 3 gives 88,651 edges for Pubmed where PyG counts 88,648 directed (44,324 undirected).
# DBLP: PyG's CitationFull("DBLP") (17,716 nodes, 105,734 directed edges, 1,639 binary
# title-word features, 4 classes; m-Mix's Table 7 swaps its edge count with Pubmed's); its
# nonzeros per node are not published, 8 (a paper title's content words) is our assumption.
PLANETOID_SIZES = {
    "cora": dict(nodes=2708, edges=5278, features=1433, classes=7, nonzero=18),
    "citeseer": dict(nodes=3327, edges=4552, features=3703, classes=6, nonzero=32),
    "pubmed": dict(nodes=19717, edges=44324, features=500, classes=3, nonzero=50),
    "dblp": dict(nodes=17716, edges=52867, features=1639, classes=4, nonzero=8),
}


def synthetic_planetoid(
    name: str, *, seed: int = 0, normalize_features: bool = False, scale: float = 1.0
) -> NodeDataset:
    """A random graph with the sizes of citation set ``name``: for timing, not for accuracy.

    Node count, undirected edge count, feature width, class count and nonzeros per feature
    row are those of the real set (``PLANETOID_SIZES``); everything else is random. Edges
    are distinct uniformly random node pairs without self-loops, stored in both directions
    (as :func:`load_planetoid` does); every node has exactly ``nonzero`` positive features
    (uniform in (0, 1], TF-IDF-like) at random columns; labels are uniform and carry no
    signal, so a classifier on these nodes scores chance. The masks are a Planetoid-style
    public split: 20 per class for training, then 500 validation and 1000 test nodes (fewer
    when ``scale`` leaves fewer: a third of the rest, and the remainder up to 1000).

    Args:
      name: ``'cora'``, ``'citeseer'``, ``'pubmed'`` or ``'dblp'``.
      seed: the generator's seed; the same seed gives the same graph.
      normalize_features: divide each feature row by its sum, as :func:`load_planetoid`.
      scale: a fraction in ``(0, 1]`` of the real set's nodes and edges (same mean degree,
        same features and classes): a small graph for smoke tests of a large set's config.

    Returns:
      A :class:`NodeDataset` named ``'<name> (synthetic)'``.

    Raises:
      ValueError: ``name`` is not one of the four, or ``scale`` is outside ``(0, 1]`` or
        leaves fewer than 20 nodes per class plus 2.

    Example:
      >>> ds = synthetic_planetoid("pubmed")
      >>> ds.num_nodes, len(ds.senders), ds.num_features, ds.num_classes
      (19717, 88648, 500, 3)
    """
    key = str(name).lower()
    if key not in PLANETOID_SIZES:
        raise ValueError(
            f"synthetic_planetoid: `name` must be one of {sorted(PLANETOID_SIZES)}, got {name!r}"
        )
    if not (_checks.is_real(scale) and 0 < scale <= 1):
        raise ValueError(f"synthetic_planetoid: `scale` must be a number in (0, 1], got {scale!r}")
    s = PLANETOID_SIZES[key]
    n, m, f = round(s["nodes"] * scale), round(s["edges"] * scale), s["features"]
    if n < 20 * s["classes"] + 2:
        raise ValueError(
            f"synthetic_planetoid: `scale` = {scale!r} gives {key} {n} nodes, fewer than the "
            f"{20 * s['classes'] + 2} its split needs (20 per class + validation + test)"
        )
    rng = np.random.default_rng(seed)

    pairs = set()
    while len(pairs) < m:  # distinct unordered pairs, no self-loops
        a, b = rng.integers(0, n, size=(2, 2 * (m - len(pairs))))
        for u, v in zip(np.minimum(a, b).tolist(), np.maximum(a, b).tolist(), strict=True):
            if u != v and len(pairs) < m:
                pairs.add((u, v))
    edges = np.array(sorted(pairs), np.int32)
    senders = np.concatenate([edges[:, 0], edges[:, 1]])
    receivers = np.concatenate([edges[:, 1], edges[:, 0]])

    features = np.zeros((n, f), np.float32)
    columns = np.argsort(rng.random((n, f)), axis=1)[:, : s["nonzero"]]
    features[np.arange(n)[:, None], columns] = 1.0 - rng.random(columns.shape)  # (0, 1]
    if normalize_features:
        features /= features.sum(axis=1, keepdims=True)

    k = s["classes"]
    labels = rng.integers(0, k, size=n).astype(np.int32)
    order = rng.permutation(n)
    train = np.concatenate([order[labels[order] == c][:20] for c in range(k)])
    rest = np.setdiff1d(order, train, assume_unique=True)
    rest = rest[rng.permutation(len(rest))]
    val = min(500, len(rest) // 3)
    masks = []
    for nodes in (train, rest[:val], rest[val : val + 1000]):
        mask = np.zeros(n, bool)
        mask[nodes] = True
        masks.append(mask)
    return NodeDataset(f"{key} (synthetic)", senders, receivers, features, labels, k, *masks)
