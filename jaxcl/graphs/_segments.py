"""Segment sums over edges and graphs, masked so that padding and dropped edges add nothing.

All reductions are ``jax.ops.segment_sum`` with a static ``num_segments``. When the ids are
sorted (receivers of every ``GraphsTuple`` from :mod:`jaxcl.graphs`, graph ids of nodes
always) the sum is told so (``indices_are_sorted=True``, passed on to XLA's scatter), which
accelerator backends may exploit; on CPU it makes no measurable difference (Cora, 10,556
edges x 512 features: about 2 ms either way on one core). Masked entries are selected
away with ``jnp.where`` rather than multiplied by 0, so an ``inf``/``NaN`` in a padding row
cannot leak into a real one.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import jraph


def _masked(values: jax.Array, mask: jax.Array | None) -> jax.Array:
    if mask is None:
        return values
    mask = mask.reshape(mask.shape + (1,) * (values.ndim - mask.ndim))
    return jnp.where(mask, values, jnp.zeros((), values.dtype))


def aggregate_edges(
    messages: jax.Array,
    receivers: jax.Array,
    num_nodes: int,
    *,
    edge_mask: jax.Array | None = None,
    sorted_receivers: bool = False,
) -> jax.Array:
    """Sums edge messages at their receivers.

    Args:
      messages: ``[num_edges, ...]`` one message per edge.
      receivers: int ``[num_edges]`` receiving node of each edge.
      num_nodes: static number of nodes (the output's first dimension); every receiver
        must lie in ``[0, num_nodes)`` (the gradient of an out-of-range one is undefined).
      edge_mask: optional bool ``[num_edges]``; ``False`` edges contribute nothing.
      sorted_receivers: ``receivers`` is non-decreasing (true for every graph built by
        :mod:`jaxcl.graphs`); lets the sum skip sorting. Wrong results may follow if it is
        set for unsorted receivers.

    Returns:
      ``[num_nodes, ...]``: ``out[v] = sum of messages[e] over kept edges e with
      receivers[e] == v``.

    Example:
      >>> import jax.numpy as jnp
      >>> aggregate_edges(jnp.array([1.0, 2.0, 4.0]), jnp.array([0, 0, 2]), 3).tolist()
      [3.0, 0.0, 4.0]
    """
    return jax.ops.segment_sum(
        _masked(messages, edge_mask),
        receivers,
        num_segments=num_nodes,
        indices_are_sorted=sorted_receivers,
        mode="promise_in_bounds",
    )


def gather_nodes(values: jax.Array, indices: jax.Array) -> jax.Array:
    """``values[indices]`` for node indices known to lie in ``[0, values.shape[0])``.

    Plain ``values[indices]`` also handles negative and out-of-range indices, which costs a
    select over every gathered element and another over every element of the gradient; node
    indices of a ``GraphsTuple`` from :mod:`jaxcl.graphs` are always in range, so this skips
    both (XLA clamps an out-of-range index rather than reading outside the array).

    Args:
      values: ``[num_nodes, ...]``.
      indices: int ``[num_edges]``, each in ``[0, num_nodes)``.

    Returns:
      ``[num_edges, ...]``.

    Example:
      >>> import jax.numpy as jnp
      >>> gather_nodes(jnp.array([10.0, 20.0, 30.0]), jnp.array([2, 0, 2])).tolist()
      [30.0, 10.0, 30.0]
    """
    return values.at[indices].get(mode="promise_in_bounds")


def node_graph_ids(graph: jraph.GraphsTuple) -> jax.Array:
    """int32 ``[n_node]``: the index of the graph each node belongs to (sorted)."""
    num_nodes = jax.tree.leaves(graph.nodes)[0].shape[0]
    num_graphs = graph.n_node.shape[0]
    return jnp.repeat(
        jnp.arange(num_graphs, dtype=jnp.int32), graph.n_node, total_repeat_length=num_nodes
    )


def pool_nodes(
    graph: jraph.GraphsTuple,
    values: jax.Array,
    *,
    node_mask: jax.Array | None = None,
    reduction: str = "sum",
) -> jax.Array:
    """Sums or averages node values per graph.

    Args:
      graph: gives the node-to-graph assignment (``n_node``) and the static node count.
      values: ``[n_node, ...]`` per-node values.
      node_mask: optional bool ``[n_node]``; masked nodes are left out of sums and counts.
      reduction: ``"sum"`` or ``"mean"`` (a graph without real nodes gets 0).

    Returns:
      ``[n_graph, ...]``.

    Example:
      >>> import numpy as np, jax.numpy as jnp, jraph
      >>> g = jraph.GraphsTuple(nodes=np.zeros((3, 1)), edges=None, senders=np.zeros(0, int),
      ...                       receivers=np.zeros(0, int), n_node=np.array([2, 1]),
      ...                       n_edge=np.array([0, 0]), globals=None)
      >>> pool_nodes(g, jnp.array([1.0, 3.0, 5.0]), reduction="mean").tolist()
      [2.0, 5.0]
    """
    if reduction not in ("sum", "mean"):
        raise ValueError(f"pool_nodes: `reduction` must be 'sum' or 'mean', got {reduction!r}")
    ids = node_graph_ids(graph)
    num_graphs = graph.n_node.shape[0]
    total = jax.ops.segment_sum(
        _masked(values, node_mask),
        ids,
        num_segments=num_graphs,
        indices_are_sorted=True,
        mode="promise_in_bounds",
    )
    if reduction == "sum":
        return total
    ones = jnp.ones(values.shape[:1], values.dtype)
    count = jax.ops.segment_sum(
        _masked(ones, node_mask), ids, num_segments=num_graphs, indices_are_sorted=True
    )
    count = count.reshape(count.shape + (1,) * (values.ndim - 1))
    return total / jnp.maximum(count, 1)


def gcn_normalization(
    senders: jax.Array,
    receivers: jax.Array,
    num_nodes: int,
    *,
    edge_weight: jax.Array | None = None,
    edge_mask: jax.Array | None = None,
    add_self_loops: bool = True,
    sorted_receivers: bool = False,
) -> tuple[jax.Array, jax.Array]:
    """Coefficients of ``D^-1/2 (A + I) D^-1/2`` for the kept edges.

    ``A[i, j]`` is the weight of edge ``j -> i`` (messages flow from sender to receiver),
    ``D_ii = sum_j (A + I)[i, j]`` counts only kept edges, as PyG's ``gcn_norm`` (degrees at
    the receivers, which is the in-degree when dropped edges make ``A`` asymmetric).

    Args:
      senders, receivers: int ``[num_edges]``.
      num_nodes: static number of nodes.
      edge_weight: optional ``[num_edges]`` weights (default 1).
      edge_mask: optional bool ``[num_edges]``; ``False`` edges are absent (weight 0).
      add_self_loops: add ``I`` (weight 1 per node); GCN's renormalisation trick.
      sorted_receivers: see :func:`aggregate_edges`.

    Returns:
      ``(edge_coef [num_edges], self_coef [num_nodes])``: the propagation is
      ``out[i] = self_coef[i] * h[i] + sum_{e: j -> i} edge_coef[e] * h[j]``. Nodes of
      degree 0 (no self loop, no kept edge) get 0.

    Example:
      >>> import jax.numpy as jnp
      >>> e, s = gcn_normalization(jnp.array([0, 1]), jnp.array([1, 0]), 2)
      >>> e.round(4).tolist(), s.round(4).tolist()  # D = 2I: every coefficient is 1/2
      ([0.5, 0.5], [0.5, 0.5])

    References:
      Kipf & Welling, "Semi-Supervised Classification with Graph Convolutional Networks",
      ICLR 2017, Eq. 2 (renormalisation trick).
    """
    weight = jnp.ones(senders.shape, jnp.float32) if edge_weight is None else edge_weight
    weight = _masked(weight.astype(jnp.float32), edge_mask)
    degree = aggregate_edges(weight, receivers, num_nodes, sorted_receivers=sorted_receivers)
    loop = 1.0 if add_self_loops else 0.0
    degree = degree + loop
    inv_sqrt = jnp.where(degree > 0, 1.0 / jnp.sqrt(jnp.where(degree > 0, degree, 1.0)), 0.0)
    edge_coef = gather_nodes(inv_sqrt, senders) * weight * gather_nodes(inv_sqrt, receivers)
    self_coef = loop * inv_sqrt * inv_sqrt
    return edge_coef, self_coef
