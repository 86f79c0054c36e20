"""Segment sums over edges and graphs, masked so that padding and dropped edges add nothing.

All reductions are ``jax.ops.segment_sum`` with a static ``num_segments``. When the ids are
sorted (receivers of every ``GraphsTuple`` from :mod:`jaxcl.graphs`, graph ids of nodes
always) the sum is told so (``indices_are_sorted=True``, passed on to XLA's scatter), which
accelerator backends may exploit; on CPU it makes no measurable difference (Cora, 10,556
edges x 512 features: about 2 ms either way on one core). Masked entries are selected
away with ``jnp.where`` rather than multiplied by 0, so an ``inf``/``NaN`` in a padding row
cannot leak into a real one.

Every op also takes a *stacked* batch (see :class:`~jaxcl.graphs.GraphBatcher` with
``num_shards``): node and edge arrays with a leading sub-batch axis ``[S, ...]`` and node
ids local to each sub-batch, told apart by the rank of the ids (``senders``/``receivers``
``[S, E]``, ``n_node`` ``[S, G]``; :func:`gather_nodes`, a plain gather for indices of any
shape, is told by ``batch_dims=1``). The op is then ``jax.vmap``-ed over that axis, so with
the axis sharded on a mesh every device gathers and sums its own sub-batch only.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import jraph

from jaxcl._slabs import SparseMatrix


def _stacked(ids: jax.Array) -> bool:
    """Whether node/edge ids (or ``n_node``) come from a stacked batch: ``[S, ...]``."""
    return jnp.ndim(ids) == 2


def _check_leading(fn: str, name: str, values: jax.Array, shape: tuple[int, ...]) -> None:
    if tuple(jnp.shape(values)[: len(shape)]) != tuple(shape):
        raise ValueError(
            f"{fn}: `{name}` must have leading shape {tuple(shape)} (as the ids), got shape "
            f"{tuple(jnp.shape(values))}"
        )


def _like(mask: jax.Array | None, shape: tuple[int, ...]) -> jax.Array | None:
    """A stacked batch's mask as ``shape``, from it or flattened (as :func:`padding_masks`)."""
    return None if mask is None else jnp.reshape(mask, shape)


def _wide(values: jax.Array) -> jax.Array:
    """``values`` in float32 when they are a narrower float (bfloat16, float16): sums over
    many nodes or edges lose the small terms in 8 bits of mantissa (600 values drawn from
    U(0, 2) summed 17% low), so they are added in float32 and rounded once."""
    if jnp.issubdtype(values.dtype, jnp.floating) and jnp.finfo(values.dtype).bits < 32:
        return values.astype(jnp.float32)
    return values


def _narrow(result: jax.Array, values: jax.Array) -> jax.Array:
    """``result`` rounded back to ``values``' dtype where :func:`_wide` widened it (a narrow
    float); any other result (integers' mean: a float) as it is."""
    return result.astype(values.dtype) if _wide(values).dtype != values.dtype else result


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
      messages: ``[num_edges, ...]`` one message per edge (stacked: ``[S, num_edges, ...]``).
      receivers: int ``[num_edges]`` receiving node of each edge (stacked: ``[S,
        num_edges]``, node ids local to each sub-batch).
      num_nodes: static number of nodes (per sub-batch when stacked); every receiver must
        lie in ``[0, num_nodes)`` (the gradient of an out-of-range one is undefined).
      edge_mask: optional bool ``[num_edges]``; ``False`` edges contribute nothing
        (stacked: ``[S, num_edges]`` or flattened ``[S * num_edges]``).
      sorted_receivers: ``receivers`` is non-decreasing (per sub-batch when stacked; true
        for every graph built by :mod:`jaxcl.graphs`); lets the sum skip sorting. Wrong
        results may follow if it is set for unsorted receivers.

    Returns:
      ``[num_nodes, ...]`` (stacked: ``[S, num_nodes, ...]``): ``out[v] = sum of
      messages[e] over kept edges e with receivers[e] == v``.

    Example:
      >>> import jax.numpy as jnp
      >>> aggregate_edges(jnp.array([1.0, 2.0, 4.0]), jnp.array([0, 0, 2]), 3).tolist()
      [3.0, 0.0, 4.0]
    """
    if _stacked(receivers):
        _check_leading("aggregate_edges", "messages", messages, receivers.shape)
        aggregate = functools.partial(
            aggregate_edges, num_nodes=num_nodes, sorted_receivers=sorted_receivers
        )
        return jax.vmap(lambda m, r, k: aggregate(m, r, edge_mask=k))(
            messages, receivers, _like(edge_mask, receivers.shape)
        )
    total = jax.ops.segment_sum(
        _wide(_masked(messages, edge_mask)),
        receivers,
        num_segments=num_nodes,
        indices_are_sorted=sorted_receivers,
        mode="promise_in_bounds",
    )
    return _narrow(total, messages)


def gather_nodes(values: jax.Array, indices: jax.Array, *, batch_dims: int = 0) -> jax.Array:
    """``values[indices]`` for node indices known to lie in ``[0, values.shape[0])``.

    Plain ``values[indices]`` also handles negative and out-of-range indices, which costs a
    select over every gathered element and another over every element of the gradient; node
    indices of a ``GraphsTuple`` from :mod:`jaxcl.graphs` are always in range, so this skips
    both (XLA clamps an out-of-range index rather than reading outside the array).

    Unlike the other ops here, a stacked batch is said explicitly (``batch_dims=1``): an
    index array of any shape is a plain gather (``[a, b]`` indices give ``[a, b, ...]``).

    Args:
      values: ``[num_nodes, ...]`` (``batch_dims=1``: ``[S, num_nodes, ...]``).
      indices: int ``[num_edges]`` (or any shape), each in ``[0, num_nodes)``
        (``batch_dims=1``: ``[S, num_edges]``, each row indexing its own sub-batch).
      batch_dims: ``0``, or ``1`` to gather per sub-batch of a stacked batch (as
        ``jax.vmap`` over the leading axis of both).

    Returns:
      ``[num_edges, ...]`` (``batch_dims=1``: ``[S, num_edges, ...]``).

    Example:
      >>> import jax.numpy as jnp
      >>> gather_nodes(jnp.array([10.0, 20.0, 30.0]), jnp.array([2, 0, 2])).tolist()
      [30.0, 10.0, 30.0]
      >>> gather_nodes(jnp.array([[1.0, 2.0], [3.0, 4.0]]), jnp.array([[1], [0]]), batch_dims=1)
      Array([[2.],
             [3.]], dtype=float32)
    """
    if batch_dims not in (0, 1):
        raise ValueError(f"gather_nodes: `batch_dims` must be 0 or 1, got {batch_dims!r}")
    if batch_dims:
        if jnp.ndim(indices) != 2:
            raise ValueError(
                f"gather_nodes: with batch_dims=1 `indices` must be [S, num_edges], got shape "
                f"{tuple(jnp.shape(indices))}"
            )
        _check_leading("gather_nodes", "values", values, jnp.shape(indices)[:1])
        return jax.vmap(gather_nodes)(values, indices)
    return values.at[indices].get(mode="promise_in_bounds")


def _local_graph_ids(n_node: jax.Array, num_nodes: int) -> jax.Array:
    return jnp.repeat(
        jnp.arange(n_node.shape[-1], dtype=jnp.int32), n_node, total_repeat_length=num_nodes
    )


def num_nodes_of(graph: jraph.GraphsTuple, fn: str) -> int:
    """Static node count of ``graph`` (per sub-batch when stacked): the leading dimension
    of ``graph.nodes``, or the row count of a :class:`~jaxcl.graphs.SparseMatrix` (not the
    first of its leaves, which counts slabs); ``fn`` is named in the error for other nodes."""
    nodes = graph.nodes
    if isinstance(nodes, SparseMatrix):
        return int(nodes.shape[0])  # static: one (sub-)batch's rows, stacked or not
    axis = 1 if _stacked(graph.n_node) else 0
    if not (hasattr(nodes, "shape") and hasattr(nodes, "dtype")) or len(nodes.shape) <= axis:
        got = f"shape {tuple(nodes.shape)}" if hasattr(nodes, "shape") else type(nodes).__name__
        want = "[S, num_nodes, ...]" if axis else "[num_nodes, ...]"
        raise ValueError(
            f"{fn}: `graph.nodes` must be an array {want} or a SparseMatrix (the node count "
            f"is read from it), got {got}"
        )
    return int(nodes.shape[axis])


def node_graph_ids(graph: jraph.GraphsTuple) -> jax.Array:
    """int32 ``[n_node]``: the index of the graph each node belongs to (sorted).

    On a stacked batch (``n_node`` ``[S, G]``, ``nodes`` ``[S, N, ...]``) the ids are
    global and flattened: ``[S * N]``, node ``n`` of sub-batch ``s`` (row ``s * N + n``)
    belongs to graph ``s * G + g``, the row of its graph among the ``[S * G]`` flattened
    graphs (as :func:`~jaxcl.graphs.padding_masks` flattens the masks).

    Example:
      >>> import numpy as np, jraph
      >>> no_edges = np.zeros((2, 0), int)
      >>> g = jraph.GraphsTuple(nodes=np.zeros((2, 3, 1)), edges=None, senders=no_edges,
      ...                       receivers=no_edges, n_node=np.array([[2, 1], [1, 2]]),
      ...                       n_edge=np.zeros((2, 2), int), globals=None)
      >>> node_graph_ids(g).tolist()  # 2 sub-batches of 3 nodes and 2 graphs
      [0, 0, 1, 2, 3, 3]
    """
    num_nodes = num_nodes_of(graph, "node_graph_ids")
    n_node = jnp.asarray(graph.n_node)
    if not _stacked(n_node):
        return _local_graph_ids(n_node, num_nodes)
    num_sub, num_graphs = n_node.shape
    local = jax.vmap(_local_graph_ids, in_axes=(0, None))(n_node, num_nodes)
    offsets = num_graphs * jnp.arange(num_sub, dtype=jnp.int32)
    return (local + offsets[:, None]).reshape(-1)


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
      values: ``[n_node, ...]`` per-node values (stacked graph: ``[S, n_node, ...]``).
      node_mask: optional bool ``[n_node]``; masked nodes are left out of sums and counts
        (stacked: ``[S, n_node]`` or flattened ``[S * n_node]``).
      reduction: ``"sum"`` or ``"mean"`` (a graph without real nodes gets 0).

    Returns:
      ``[n_graph, ...]`` (stacked: ``[S, n_graph, ...]``, each sub-batch pooled on its own).

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
    num_nodes = num_nodes_of(graph, "pool_nodes")
    n_node = jnp.asarray(graph.n_node)
    if _stacked(n_node):
        _check_leading("pool_nodes", "values", values, (n_node.shape[0], num_nodes))
        pool = functools.partial(_pool, num_nodes=num_nodes, reduction=reduction)
        return jax.vmap(pool)(n_node, values, _like(node_mask, values.shape[:2]))
    return _pool(n_node, values, node_mask, num_nodes=num_nodes, reduction=reduction)


def _pool(n_node, values, node_mask, *, num_nodes: int, reduction: str) -> jax.Array:
    ids = _local_graph_ids(n_node, num_nodes)
    num_graphs = n_node.shape[0]
    total = jax.ops.segment_sum(
        _wide(_masked(values, node_mask)),
        ids,
        num_segments=num_graphs,
        indices_are_sorted=True,
        mode="promise_in_bounds",
    )
    if reduction == "sum":
        return _narrow(total, values)
    ones = jnp.ones(values.shape[:1], total.dtype)
    count = jax.ops.segment_sum(
        _masked(ones, node_mask), ids, num_segments=num_graphs, indices_are_sorted=True
    )
    count = count.reshape(count.shape + (1,) * (values.ndim - 1))
    return _narrow(total / jnp.maximum(count, 1), values)


def gcn_normalization(
    senders: jax.Array,
    receivers: jax.Array,
    num_nodes: int,
    *,
    edge_weight: jax.Array | None = None,
    edge_mask: jax.Array | None = None,
    add_self_loops: bool | float = True,
    sorted_receivers: bool = False,
) -> tuple[jax.Array, jax.Array]:
    """Coefficients of ``D^-1/2 (A + I) D^-1/2`` for the kept edges.

    ``A[i, j]`` is the weight of edge ``j -> i`` (messages flow from sender to receiver),
    ``D_ii = sum_j (A + I)[i, j]`` counts only kept edges, as PyG's ``gcn_norm`` (degrees at
    the receivers, which is the in-degree when dropped edges make ``A`` asymmetric).

    Args:
      senders, receivers: int ``[num_edges]`` (stacked: ``[S, num_edges]``, local ids).
      num_nodes: static number of nodes (per sub-batch when stacked).
      edge_weight: optional ``[num_edges]`` weights (default 1).
      edge_mask: optional bool ``[num_edges]``; ``False`` edges are absent (weight 0).
        Stacked, both are ``[S, num_edges]`` or flattened ``[S * num_edges]``.
      add_self_loops: add ``I`` (weight 1 per node); GCN's renormalisation trick. A number
        ``w >= 0`` adds ``w I`` instead (MVGRL's code normalises ``A + 2I``).
      sorted_receivers: see :func:`aggregate_edges`.

    Returns:
      ``(edge_coef [num_edges], self_coef [num_nodes])`` (stacked: ``[S, num_edges]``,
      ``[S, num_nodes]``): the propagation is
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
    if _stacked(senders):
        _check_leading("gcn_normalization", "receivers", receivers, senders.shape)
        normalize = functools.partial(
            gcn_normalization,
            num_nodes=num_nodes,
            add_self_loops=add_self_loops,
            sorted_receivers=sorted_receivers,
        )
        return jax.vmap(lambda s, r, w, k: normalize(s, r, edge_weight=w, edge_mask=k))(
            senders, receivers, _like(edge_weight, senders.shape), _like(edge_mask, senders.shape)
        )
    for name, values in (("receivers", receivers), ("edge_weight", edge_weight),
                         ("edge_mask", edge_mask)):  # fmt: skip
        if values is not None and tuple(jnp.shape(values)) != tuple(jnp.shape(senders)):
            raise ValueError(
                f"gcn_normalization: `{name}` must have the shape of `senders` "
                f"{tuple(jnp.shape(senders))}, got shape {tuple(jnp.shape(values))}"
            )
    weight = jnp.ones(senders.shape, jnp.float32) if edge_weight is None else edge_weight
    weight = _masked(weight.astype(jnp.float32), edge_mask)
    degree = aggregate_edges(weight, receivers, num_nodes, sorted_receivers=sorted_receivers)
    loop = float(add_self_loops)
    if not loop >= 0:
        raise ValueError(
            f"gcn_normalization: `add_self_loops` must be a bool or a weight >= 0, "
            f"got {add_self_loops!r}"
        )
    degree = degree + loop
    inv_sqrt = jnp.where(degree > 0, 1.0 / jnp.sqrt(jnp.where(degree > 0, degree, 1.0)), 0.0)
    edge_coef = gather_nodes(inv_sqrt, senders) * weight * gather_nodes(inv_sqrt, receivers)
    self_coef = loop * inv_sqrt * inv_sqrt
    return edge_coef, self_coef


def window_edges(senders: jax.Array, receivers: jax.Array, start: jax.Array, size: int):
    """The edges among the ``size`` consecutive node ids from ``start``, in the window's own
    ids: ``(senders, receivers, inside)``, ``inside`` False for an edge with an end outside
    the window (its ids clipped into it, so that receiver-sorted edges stay sorted). MVGRL's
    node windows (:meth:`jaxcl.models.MVGRLModel.embed_window`).

    Example:
      >>> import jax.numpy as jnp
      >>> s, r, inside = window_edges(jnp.array([0, 2, 3]), jnp.array([2, 3, 5]), 2, 3)
      >>> s.tolist(), r.tolist(), inside.tolist()
      ([0, 0, 1], [0, 1, 2], [False, True, False])
    """

    def is_in(ids):
        return (ids >= start) & (ids < start + size)

    def local(ids):
        return jnp.clip(ids - start, 0, size - 1)

    return local(senders), local(receivers), is_in(senders) & is_in(receivers)
