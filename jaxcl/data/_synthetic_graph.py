"""Random graphs with a Planetoid data set's sizes, for timing and memory where its files are
absent (Pubmed is not among the data sets here)."""

from __future__ import annotations

import numpy as np

from jaxcl.data._graph_types import NodeDataset

# nodes, undirected edges (stored both ways: twice as many directed ones), features, classes
# and nonzero features per node (mean), as PyTorch Geometric's Planetoid reports them. ESCo's
# Table 3 gives 88,651 edges for Pubmed where PyG counts 88,648 directed (44,324 undirected).
PLANETOID_SIZES = {
    "cora": dict(nodes=2708, edges=5278, features=1433, classes=7, nonzero=18),
    "citeseer": dict(nodes=3327, edges=4552, features=3703, classes=6, nonzero=32),
    "pubmed": dict(nodes=19717, edges=44324, features=500, classes=3, nonzero=50),
}


def synthetic_planetoid(
    name: str, *, seed: int = 0, normalize_features: bool = False
) -> NodeDataset:
    """A random graph with the sizes of Planetoid's ``name``: for timing, not for accuracy.

    Node count, undirected edge count, feature width, class count and nonzeros per feature
    row are those of the real set (``PLANETOID_SIZES``); everything else is random. Edges
    are distinct uniformly random node pairs without self-loops, stored in both directions
    (as :func:`load_planetoid` does); every node has exactly ``nonzero`` positive features
    (uniform in (0, 1], TF-IDF-like) at random columns; labels are uniform and carry no
    signal, so a classifier on these nodes scores chance. The masks are a Planetoid-style
    public split: 20 per class for training, then 500 validation and 1000 test nodes.

    Args:
      name: ``'cora'``, ``'citeseer'`` or ``'pubmed'``.
      seed: the generator's seed; the same seed gives the same graph.
      normalize_features: divide each feature row by its sum, as :func:`load_planetoid`.

    Returns:
      A :class:`NodeDataset` named ``'<name> (synthetic)'``.

    Raises:
      ValueError: ``name`` is not one of the three.

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
    s = PLANETOID_SIZES[key]
    n, m, f = s["nodes"], s["edges"], s["features"]
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
    masks = []
    for nodes in (train, rest[:500], rest[500:1500]):
        mask = np.zeros(n, bool)
        mask[nodes] = True
        masks.append(mask)
    return NodeDataset(f"{key} (synthetic)", senders, receivers, features, labels, k, *masks)
