"""Random graph-classification sets with a TU benchmark's sizes, for checking configs and
timing where its files are absent (REDDIT-BINARY is not among the data sets here)."""

from __future__ import annotations

import numbers

import numpy as np

from jaxcl.data._graph_build import build_graph_dataset
from jaxcl.data._graph_types import GraphDataset

# Number of graphs, mean nodes and mean undirected edges per graph, and classes, as TU's
# benchmark page publishes them (m-Mix's Table 7 gives REDDIT-BINARY 508.52 nodes per graph,
# which is REDDIT-MULTI-5K's figure; its edge count, 497.75, is REDDIT-BINARY's).
# COIL-DEL (m-Mix Table 6's graph-edit set): Delaunay triangulations of an object image's
# corner points, with the points' 2-D coordinates as node attributes.
TU_SIZES = {
    "reddit_binary": dict(graphs=2000, nodes=429.63, edges=497.75, classes=2),
    "coil_del": dict(graphs=3900, nodes=21.54, edges=54.24, classes=100),
}
# Delaunay sets: sizes lognormal with this sigma (our choice; TU lists COIL-DEL's graphs as
# small, 3 to 77 nodes), clipped to [3, MAX_SIZE_RATIO * mean].
DELAUNAY_SIZE_SIGMA = 0.5
DELAUNAY = ("coil_del",)
# Graph sizes are lognormal with this sigma (our choice, not fitted to the real sizes, which
# this project does not have: sizes spread over two orders of magnitude, as threads do),
# clipped to [MIN_NODES, MAX_SIZE_RATIO * mean].
SIZE_SIGMA = 1.0
MIN_NODES = 2
MAX_SIZE_RATIO = 10.0


def synthetic_tu(name: str, *, seed: int = 0, scale: float = 1.0) -> GraphDataset:
    """Random graphs with the sizes of TU's set ``name``: for checking a config and timing.

    REDDIT-BINARY: every graph is a discussion thread: node 0 is the post and each later
    node a reply, either to the post (with a per-graph probability drawn uniformly from [0,
    1], so the set ranges from star-like question-answer threads to deep discussions) or to
    an earlier node drawn in proportion to its degree (preferential attachment); a few
    random extra edges between distinct, unconnected nodes (spread over the graphs in
    proportion to their size) bring the mean edge count to the real set's. Graph sizes are lognormal
    (``SIZE_SIGMA``) clipped to ``[MIN_NODES, MAX_SIZE_RATIO * mean]``, with their
    location fitted so that the mean number of nodes is the real set's (exact to rounding:
    the totals of nodes and edges are the published means times the number of graphs).

    The number of graphs, the mean numbers of nodes and undirected edges per graph and the
    number of classes are those of the real set (``TU_SIZES``); nothing else is. The labels
    are random and balanced (each class as often as the others, to one graph) and carry no
    signal: a classifier on these graphs scores chance. The set has no node labels or
    attributes, so node features are one-hot degrees of width ``max degree + 1`` over the
    set, as ``load_gin(..., node_features='degree')`` makes them (and MVGRL's code, which
    m-Mix's graph code loads its data with, for sets without node labels).

    COIL-DEL: every graph is the Delaunay triangulation of points drawn uniformly in the unit
    square (the real set triangulates an image's corner points), node features are the
    points' two coordinates (the real set's node attributes), labels as above (100 balanced
    classes, noise). Sizes are lognormal (``DELAUNAY_SIZE_SIGMA``) clipped to ``[3,
    MAX_SIZE_RATIO * mean]``, the mean fitted as above; the edges are the triangulation's,
    not fitted: a triangulation of ``n`` points has ``3 n - 3 - h`` edges (``h`` on the
    hull), which gives 54.04 per graph at seed 0 against TU's 54.24. ``scale`` shrinks the number of
    graphs only, not their size: the graphs are small already, and the graph-edit task
    (:func:`jaxcl.data.edit_triplets`) cuts subgraphs of 10 to 50 nodes from them.

    Args:
      name: ``'reddit_binary'`` or ``'coil_del'``.
      seed: the generator's seed; the same seed gives the same graphs.
      scale: a fraction in ``(0, 1]`` of the number of graphs and, for REDDIT-BINARY, of the
        mean graph size too (nodes and edges; COIL-DEL's graphs keep their size, see
        above): ``scale=0.05`` gives REDDIT-BINARY 100 graphs of about 21 nodes,
        a smoke test of its config. It must leave at least 10 graphs per class (what 10-fold
        stratified cross-validation needs).

    Returns:
      A :class:`GraphDataset` named ``'<name> (synthetic)'``; edges are undirected (both
      directions stored, sorted), without duplicates or self-loops, as the loaders give.

    Raises:
      ValueError: ``name`` is not a known set, or ``scale`` is not a number in ``(0, 1]``
        or leaves fewer than 10 graphs per class.

    Example:
      >>> ds = synthetic_tu("reddit_binary", scale=0.05)
      >>> len(ds), ds.num_classes, round(ds.num_nodes / len(ds), 2)
      (100, 2, 21.48)
      >>> ds = synthetic_tu("coil_del", scale=0.3)
      >>> len(ds), ds.num_classes, ds.num_features, round(ds.num_nodes / len(ds), 2)
      (1170, 100, 2, 21.54)
    """
    key = str(name).lower()
    if key not in TU_SIZES:
        raise ValueError(f"synthetic_tu: `name` must be one of {sorted(TU_SIZES)}, got {name!r}")
    if (
        isinstance(scale, bool)
        or not isinstance(scale, numbers.Real)
        or not 0 < scale <= 1  # also refuses NaN
    ):
        raise ValueError(f"synthetic_tu: `scale` must be a number in (0, 1], got {scale!r}")
    s = TU_SIZES[key]
    num_graphs, num_classes = round(s["graphs"] * scale), s["classes"]
    if num_graphs < 10 * num_classes:
        raise ValueError(
            f"synthetic_tu: `scale` = {scale!r} gives {key} {num_graphs} graphs, fewer than "
            f"the {10 * num_classes} (10 per class) that 10-fold cross-validation needs"
        )
    rng = np.random.default_rng(seed)
    if key in DELAUNAY:
        return _delaunay_set(rng, key, num_graphs, round(num_graphs * s["nodes"]), num_classes)
    sizes = _graph_sizes(rng, num_graphs, round(num_graphs * s["nodes"] * scale))
    extra = _spread_extra_edges(rng, sizes, round(num_graphs * s["edges"] * scale))

    offsets = np.concatenate([[0], np.cumsum(sizes)[:-1]])
    reply_to_post = rng.random(num_graphs).tolist()
    senders, receivers = [], []
    per_graph = zip(sizes.tolist(), extra.tolist(), offsets.tolist(), reply_to_post, strict=True)
    for n, k, start, q in per_graph:
        parent = _thread_parents(rng, n, q)
        a, b = _extra_edges(rng, n, k, parent)
        senders += [start + np.arange(1, n), start + a]
        receivers += [start + parent, start + b]

    return _assemble(rng, key, sizes, senders, receivers, num_classes, attributes=None)


def _assemble(rng, key, sizes, senders, receivers, num_classes, *, attributes):
    """The data set of the drawn graphs, with balanced random labels drawn last; node
    features are ``attributes`` where given, else one-hot degrees."""
    labels = rng.permutation(np.arange(len(sizes)) % num_classes)
    return build_graph_dataset(
        f"{key} (synthetic)",
        graph_sizes=sizes,
        senders=np.concatenate(senders),
        receivers=np.concatenate(receivers),
        raw_labels=labels,
        tags=None,
        attributes=attributes,
        node_features="degree" if attributes is None else "attributes",
        max_degree=None,
        fn="synthetic_tu",
        tags_source="synthetic_tu",
        attributes_source="synthetic_tu",
    )


def _delaunay_set(
    rng: np.random.Generator, key: str, num_graphs: int, total: int, num_classes: int
) -> GraphDataset:
    """COIL-DEL-like graphs: Delaunay triangulations of uniform points, coordinates as
    node features (see :func:`synthetic_tu`)."""
    from scipy.spatial import Delaunay

    sizes = _graph_sizes(rng, num_graphs, total, sigma=DELAUNAY_SIZE_SIGMA, low=3)
    points = rng.random((int(sizes.sum()), 2))
    senders, receivers, start = [], [], 0
    for n in sizes.tolist():
        triangles = Delaunay(points[start : start + n]).simplices
        pairs = np.concatenate([triangles[:, [0, 1]], triangles[:, [1, 2]], triangles[:, [0, 2]]])
        senders.append(start + pairs[:, 0])
        receivers.append(start + pairs[:, 1])
        start += n
    return _assemble(
        rng, key, sizes, senders, receivers, num_classes, attributes=points.astype(np.float32)
    )


def _graph_sizes(
    rng: np.random.Generator,
    num_graphs: int,
    total: int,
    *,
    sigma: float = SIZE_SIGMA,
    low: int = MIN_NODES,
) -> np.ndarray:
    """int64 ``[num_graphs]`` lognormal sizes (``sigma``), clipped to ``[low, MAX_SIZE_RATIO
    * mean]``, summing to ``total``."""
    mean = total / num_graphs
    high = max(low, round(MAX_SIZE_RATIO * mean))
    z = rng.standard_normal(num_graphs)

    def sizes_at(mu: float) -> np.ndarray:
        return np.clip(np.rint(np.exp(mu + sigma * z)), low, high).astype(np.int64)

    # The mean size is nondecreasing in the location mu: bisect for it, then move the last
    # few nodes by hand so that the total is exact.
    lo_mu, hi_mu = np.log(low) - 5 * sigma, np.log(high) + 5 * sigma
    for _ in range(60):
        mid = (lo_mu + hi_mu) / 2
        lo_mu, hi_mu = (mid, hi_mu) if sizes_at(mid).sum() < total else (lo_mu, mid)
    sizes = sizes_at(hi_mu)
    while (gap := total - int(sizes.sum())) != 0:
        room = np.flatnonzero(sizes < high if gap > 0 else sizes > low)
        pick = rng.choice(room, size=min(abs(gap), room.size), replace=False)
        sizes[pick] += np.sign(gap)
    return sizes


def _spread_extra_edges(rng: np.random.Generator, sizes: np.ndarray, total: int) -> np.ndarray:
    """How many non-tree edges each graph gets: ``total`` minus the trees' edges, in
    proportion to the graphs' sizes, never more than a graph has room for."""
    extra = total - int((sizes - 1).sum())
    room = (sizes - 1) * (sizes - 2) // 2  # the pairs a tree on n nodes leaves unconnected
    if not 0 <= extra <= room.sum():
        raise ValueError(
            f"synthetic_tu: {total} edges over {sizes.size} graphs of {sizes.sum()} nodes "
            "cannot be trees plus extra edges"
        )
    out = np.minimum(room, extra * sizes // sizes.sum())
    while (gap := extra - int(out.sum())) > 0:
        free = np.flatnonzero(out < room)
        out[rng.choice(free, size=min(gap, free.size), replace=False)] += 1
    return out


def _thread_parents(rng: np.random.Generator, n: int, reply_to_post: float) -> np.ndarray:
    """int64 ``[n - 1]``: the node that node ``i`` (1..n-1) replies to.

    Preferential attachment without a loop over nodes: when node ``i >= 2`` arrives the
    tree's ``i - 1`` edges list their ends as (1, parent[1]), (2, parent[2]), ...; a
    uniformly drawn end is a node drawn in proportion to its degree. An even position is a
    node ``k < i`` itself; an odd one is ``parent[k]``, which is resolved by pointer jumping
    (``parent[k]`` is fixed before node ``i`` arrives, so this is the sequential process).
    """
    parent = np.zeros(n, np.int64)
    if n <= 2:
        return parent[1:]
    i = np.arange(2, n)
    position = np.floor(rng.random(n - 2) * 2 * (i - 1)).astype(np.int64)
    k = position // 2 + 1  # the edge's child end, 1 <= k < i
    to_post = rng.random(n - 2) < reply_to_post
    parent[2:] = np.where(to_post, 0, np.where(position % 2 == 0, k, -1))
    ref = np.zeros(n, np.int64)
    ref[2:] = k
    todo = np.flatnonzero(parent < 0)
    while todo.size:
        r = ref[todo]
        known = parent[r] >= 0
        parent[todo[known]] = parent[r[known]]
        todo, r = todo[~known], r[~known]
        ref[todo] = ref[r]
    return parent[1:]


def _extra_edges(
    rng: np.random.Generator, n: int, count: int, parent: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """``count`` distinct random node pairs of an ``n``-node graph, none a self-loop or a
    tree edge (``parent[i - 1]`` -- ``i``)."""
    taken = np.minimum(np.arange(1, n), parent) * n + np.maximum(np.arange(1, n), parent)
    chosen = np.zeros(0, np.int64)
    while chosen.size < count:
        a, b = rng.integers(0, n, size=(2, 2 * count + 8))
        keys = np.minimum(a, b) * n + np.maximum(a, b)
        keys = keys[(a != b) & ~np.isin(keys, taken) & ~np.isin(keys, chosen)]
        _, first = np.unique(keys, return_index=True)
        chosen = np.concatenate([chosen, keys[np.sort(first)][: count - chosen.size]])
    return chosen // n, chosen % n
