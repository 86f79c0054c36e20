"""Graph-edit triplets (m-Mix Table 6): does a representation rank a graph's one-edit copy
above its two-edit copy? Triplet accuracy and pair AUC, and the WL-kernel baseline."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from jax.typing import ArrayLike

from jaxcl import _checks
from jaxcl.data._graph_types import Graph


def _cosine(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    na = np.linalg.norm(a, axis=1)
    nb = np.linalg.norm(b, axis=1)
    return (a * b).sum(axis=1) / np.maximum(na * nb, 1e-12)


def similarity_scores(positive_sim: ArrayLike, negative_sim: ArrayLike) -> dict:
    """Triplet accuracy and pair AUC from the similarities of (anchor, positive) and
    (anchor, negative) pairs.

    ``triplet_acc``: the fraction of triplets whose positive is strictly more similar
    (m-Mix's code counts ``pos > neg``); ``pair_auc``: the ROC AUC of telling positive
    pairs (label 1) from negative ones (label 0) by similarity, over all ``2 n`` pairs.
    """
    from sklearn.metrics import roc_auc_score

    pos = np.asarray(positive_sim, np.float64)
    neg = np.asarray(negative_sim, np.float64)
    if pos.ndim != 1 or pos.shape != neg.shape or not pos.size:
        _checks.fail(
            "similarity_scores",
            f"`positive_sim` and `negative_sim` must be non-empty [n], got {pos.shape} and "
            f"{neg.shape}",
        )
    for name, sim in (("positive_sim", pos), ("negative_sim", neg)):
        bad = np.flatnonzero(~np.isfinite(sim))
        if bad.size:
            _checks.fail("similarity_scores", f"`{name}` holds {sim[bad[0]]} at index {bad[0]}")
    labels = np.concatenate([np.ones_like(pos), np.zeros_like(neg)])
    return {
        "triplet_acc": float(np.mean(pos > neg)),
        "pair_auc": float(roc_auc_score(labels, np.concatenate([pos, neg]))),
    }


def edit_triplet_scores(anchors: ArrayLike, positives: ArrayLike, negatives: ArrayLike) -> dict:
    """m-Mix Table 6's scores of graph embeddings of edit triplets
    (:func:`jaxcl.data.edit_triplets`), compared by cosine similarity (as m-Mix's code:
    l2-normalised embeddings, dot products).

    Args:
      anchors, positives, negatives: ``[n, dim]`` embeddings of the three sets, row ``k``
        of each from the same triplet.

    Returns:
      ``{'triplet_acc', 'pair_auc'}`` (see :func:`similarity_scores`).

    Example:
      >>> import numpy as np
      >>> a = np.array([[1.0, 0.0], [0.0, 1.0]])
      >>> p = np.array([[1.0, 0.1], [0.1, 1.0]])
      >>> n = np.array([[0.0, 1.0], [1.0, 0.0]])
      >>> edit_triplet_scores(a, p, n)
      {'triplet_acc': 1.0, 'pair_auc': 1.0}
    """
    a, p, n = (np.asarray(x, np.float64) for x in (anchors, positives, negatives))
    if a.ndim != 2 or p.shape != a.shape or n.shape != a.shape:
        _checks.fail(
            "edit_triplet_scores",
            f"`anchors`, `positives` and `negatives` must be [n, dim] of one shape, got "
            f"{a.shape}, {p.shape} and {n.shape}",
        )
    for name, x in (("anchors", a), ("positives", p), ("negatives", n)):
        if not np.isfinite(x).all():
            row = int(np.flatnonzero(~np.isfinite(x).all(axis=1))[0])
            _checks.fail("edit_triplet_scores", f"`{name}` holds NaN or inf in row {row}")
        zero = np.flatnonzero(~x.any(axis=1))
        if zero.size:
            _checks.fail(
                "edit_triplet_scores",
                f"`{name}` row {zero[0]} is all zeros: its cosine similarity is undefined",
            )
    return similarity_scores(_cosine(a, p), _cosine(a, n))


def discrete_labels(graphs: Sequence[Graph]) -> bool:
    """Whether every node feature row is binary (0/1, e.g. a one-hot atom label, or label and
    degree one-hots side by side): the WL kernel's ``initial='features'`` then labels nodes
    by their rows; otherwise (continuous features) ``'constant'`` fits."""
    return all(np.isin(g.node_features, (0.0, 1.0)).all() for g in graphs)


def _wl_histograms(graphs: Sequence[Graph], iterations: int, initial: str) -> list[dict]:
    """Per graph, the counts of its WL labels over ``iterations`` refinements (the
    initial labels are the node feature rows, or one label for every node), labels shared
    through one dictionary."""
    table: dict = {}
    hists: list[dict] = [{} for _ in graphs]
    labels = []
    for g in graphs:
        if initial == "constant":
            rows = [b""] * g.num_nodes
        else:
            # float64 and + 0.0 (which makes -0.0 into 0.0): equal values, equal labels
            rows = [(row + 0.0).tobytes() for row in np.asarray(g.node_features, np.float64)]
        labels.append([table.setdefault(("x", row), len(table)) for row in rows])
    for step in range(iterations + 1):
        for k in range(len(graphs)):
            for lab in labels[k]:
                hists[k][lab] = hists[k].get(lab, 0) + 1
        if step == iterations:
            break
        for k, g in enumerate(graphs):
            neigh: list[list[int]] = [[] for _ in labels[k]]
            for s, r in zip(g.senders.tolist(), g.receivers.tolist(), strict=True):
                neigh[r].append(labels[k][s])
            labels[k] = [
                table.setdefault((lab, tuple(sorted(nb))), len(table))
                for lab, nb in zip(labels[k], neigh, strict=True)
            ]
    return hists


def _dot(h1: dict, h2: dict) -> float:
    if len(h1) > len(h2):
        h1, h2 = h2, h1
    return float(sum(c * h2.get(lab, 0) for lab, c in h1.items()))


def wl_kernel_similarity(
    graphs_a: Sequence[Graph],
    graphs_b: Sequence[Graph],
    *,
    iterations: int = 5,
    initial: str = "features",
) -> np.ndarray:
    """The normalised Weisfeiler-Lehman subtree kernel of each pair ``(graphs_a[k],
    graphs_b[k])``: Table 6's WL-KERNEL baseline.

    Initial node labels are the node feature rows (``initial='features'``: for discrete
    features such as one-hot atom types or degrees) or one label for every node
    (``'constant'``: structure alone, for continuous features, where every node would have
    a label of its own); each of ``iterations`` refinements (m-Mix's code: 5) relabels a
    node by its label and the sorted labels of its in-neighbours; the kernel is the dot
    product of the label counts over all iterations, divided by ``sqrt(k(a, a) k(b, b))``
    (a cosine, as the embeddings are compared; m-Mix's code compares raw kernel values).

    Returns:
      float64 ``[len(graphs_a)]``.
    """
    if len(graphs_a) != len(graphs_b):
        _checks.fail(
            "wl_kernel_similarity",
            f"`graphs_a` and `graphs_b` must pair up, got {len(graphs_a)} and {len(graphs_b)}",
        )
    iterations = _checks.positive_int("wl_kernel_similarity", "iterations", iterations)
    _checks.one_of("wl_kernel_similarity", "initial", initial, ("features", "constant"))
    for name, graphs in (("graphs_a", graphs_a), ("graphs_b", graphs_b)):
        empty = [k for k, g in enumerate(graphs) if g.num_nodes == 0]
        if empty:
            _checks.fail(
                "wl_kernel_similarity",
                f"`{name}[{empty[0]}]` has no nodes: its normalised kernel is undefined",
            )
    hists = _wl_histograms(list(graphs_a) + list(graphs_b), iterations, initial)
    ha, hb = hists[: len(graphs_a)], hists[len(graphs_a) :]
    return np.array(
        [_dot(x, y) / np.sqrt(_dot(x, x) * _dot(y, y)) for x, y in zip(ha, hb, strict=True)]
    )
