"""Node clustering (m-Mix Table 8, MVGRL's protocol): k-means on frozen embeddings, NMI and ARI."""

from __future__ import annotations

import numpy as np
from jax.typing import ArrayLike

from jaxcl import _checks
from jaxcl.evaluation import _inputs


def kmeans_nmi_ari(
    x: ArrayLike, labels: ArrayLike, *, num_clusters: int | None = None, seed: int = 0,
    n_init: int = 10,
) -> dict:  # fmt: skip
    """k-means on ``x`` with as many clusters as classes; NMI and ARI against ``labels``.

    scikit-learn's ``KMeans`` (k-means++, ``n_init`` restarts, the best inertia kept),
    ``normalized_mutual_info_score`` (arithmetic normalisation) and ``adjusted_rand_score``,
    as m-Mix's Table 8 says ("directly calculated by scikit-learn").

    Args:
      x: ``[n, dim]`` frozen embeddings (host or device array).
      labels: ``[n]`` integer classes.
      num_clusters: default the number of distinct labels.
      seed: k-means' random state.
      n_init: k-means restarts.

    Returns:
      ``{'nmi': float, 'ari': float}``.
    """
    from sklearn.cluster import KMeans
    from sklearn.metrics import adjusted_rand_score, normalized_mutual_info_score

    fn = "kmeans_nmi_ari"
    x = np.asarray(x, np.float64)
    labels = np.asarray(labels)
    if x.ndim != 2 or labels.shape != (x.shape[0],):
        _checks.fail(
            fn,
            f"`x` must be [n, dim] and `labels` [n], got {x.shape} and {labels.shape}",
        )
    if 0 in x.shape:
        _checks.fail(fn, f"`x` is empty ({x.shape}): no embeddings to cluster")
    if not np.isfinite(x).all():
        _checks.fail(fn, "`x` holds NaN or inf; the embeddings cannot be clustered")
    if labels.dtype == bool or not np.issubdtype(labels.dtype, np.integer):
        _checks.fail(fn, f"`labels` must have an integer dtype (classes), got {labels.dtype}")
    seed = _inputs.seed(fn, seed)
    n_init = _checks.positive_int(fn, "n_init", n_init)
    k = len(np.unique(labels)) if num_clusters is None else num_clusters
    k = _checks.positive_int(fn, "num_clusters", k)
    if k > x.shape[0]:
        _checks.fail(fn, f"`num_clusters` = {k} exceeds the number of rows {x.shape[0]}")
    pred = KMeans(n_clusters=k, n_init=n_init, random_state=seed).fit_predict(x)
    return {
        "nmi": float(normalized_mutual_info_score(labels, pred)),
        "ari": float(adjusted_rand_score(labels, pred)),
    }
