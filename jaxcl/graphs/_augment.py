"""GRACE's graph augmentations as pure JAX functions of a PRNG key, with static shapes.

Nothing is removed: a dropped edge is a ``False`` in an edge mask the encoders honour, and
a masked feature is a zeroed column, so every view of a graph has the shapes of the graph
and a jitted step compiles once.
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import jraph

from jaxcl import _checks as checks
from jaxcl.graphs._sparse import SparseMatrix


def drop_edges(
    key: jax.Array,
    graph: jraph.GraphsTuple,
    p: float,
    *,
    edge_mask: jax.Array | None = None,
) -> jax.Array:
    """GRACE's edge dropping: a mask that removes each directed edge with probability ``p``.

    GRACE calls PyG's ``dropout_adj(edge_index, p)`` (``force_undirected=False``) on the
    edge list that stores every undirected edge in both directions, so the two directions
    are dropped independently and a view can keep ``i -> j`` but lose ``j -> i``. This
    function does the same.

    Args:
      key: PRNG key.
      graph: the graph; only its number of edges (``senders.shape``) is used. A stacked
        batch (``senders`` ``[S, n_edge]``, see :class:`~jaxcl.graphs.GraphBatcher`) gets
        one draw per edge of every sub-batch.
      p: drop probability in ``[0, 1]``.
      edge_mask: optional ``[n_edge]`` bool mask already in force (e.g. padding, or an
        earlier drop); the result keeps only edges it keeps. Stacked: ``[S, n_edge]`` or
        flattened ``[S * n_edge]`` (as :func:`~jaxcl.graphs.padding_masks` gives it).

    Returns:
      bool ``[n_edge]``: ``True`` for kept edges. Pass it to the encoder as ``edge_mask``.
      Stacked: flattened ``[S * n_edge]``, as :func:`~jaxcl.graphs.padding_masks`' masks
      (the segment ops take it so).

    Example:
      >>> import jax, numpy as np, jraph
      >>> g = jraph.GraphsTuple(nodes=np.ones((3, 1)), edges=None, senders=np.array([0, 1, 2]),
      ...                       receivers=np.array([1, 2, 0]), n_node=np.array([3]),
      ...                       n_edge=np.array([3]), globals=None)
      >>> drop_edges(jax.random.key(0), g, 0.0).tolist()
      [True, True, True]

    References:
      Zhu et al., "Deep Graph Contrastive Representation Learning" (GRACE), 2020, §3.2.1
      (removing edges); code: CRIPAC-DIG/GRACE ``train.py`` (``dropout_adj``).
    """
    fn = "drop_edges"
    checks.prng_key(fn, "key", key)
    checks.in_range(fn, "p", p, 0.0, 1.0)
    shape = tuple(jnp.shape(graph.senders))
    if len(shape) not in (1, 2):
        checks.fail(
            fn,
            f"`graph.senders` must be [n_edge] (or [S, n_edge] for a stacked batch), got "
            f"shape {shape}",
        )
    size = math.prod(shape)
    keep = jax.random.uniform(key, (size,)) >= p
    if edge_mask is not None:
        accepted = {(size,), shape}
        if tuple(jnp.shape(edge_mask)) not in accepted:
            want = " or ".join(str(s) for s in sorted(accepted, key=len))
            checks.fail(fn, f"`edge_mask` must have shape {want}, got {jnp.shape(edge_mask)}")
        keep = keep & jnp.reshape(edge_mask, (size,)).astype(bool)
    return keep


def mask_features(key: jax.Array, x: jax.Array | SparseMatrix, p: float):
    """GRACE's feature masking: zero each feature column with probability ``p``.

    One Bernoulli draw per feature dimension, shared by every node (the same columns are
    masked in the whole graph), as GRACE's ``drop_feature``.

    Args:
      key: PRNG key.
      x: ``[num_nodes, num_features]`` node features, dense or a
        :class:`~jaxcl.graphs.SparseMatrix` (the same draw masks the same columns).
      p: masking probability in ``[0, 1]``.

    Returns:
      ``x`` with the masked columns set to 0 (same shape, dtype and kind).

    Example:
      >>> import jax, jax.numpy as jnp
      >>> x = jnp.ones((4, 1000))
      >>> kept = mask_features(jax.random.key(0), x, 0.3)[0].mean()
      >>> bool(0.65 < kept < 0.75)
      True

    References:
      Zhu et al., "Deep Graph Contrastive Representation Learning" (GRACE), 2020, §3.2.1
      (masking node features); code: CRIPAC-DIG/GRACE ``model.py`` (``drop_feature``).
    """
    fn = "mask_features"
    checks.prng_key(fn, "key", key)
    checks.in_range(fn, "p", p, 0.0, 1.0)
    if isinstance(x, SparseMatrix):
        return x.mask_columns(jax.random.uniform(key, (x.shape[1],)) >= p)
    x = checks.floating_array(fn, "x", x, ndim=2)
    masked = jax.random.uniform(key, (x.shape[1],)) < p
    return jnp.where(masked[None, :], jnp.zeros((), x.dtype), x)
