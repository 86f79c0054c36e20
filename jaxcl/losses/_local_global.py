"""InfoGraph's local-global mutual-information loss with the Jensen-Shannon estimator."""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
from jax.typing import ArrayLike

from jaxcl import _checks
from jaxcl.losses import _common

_LOG_2 = math.log(2.0)


def local_global_jsd(
    node_emb: ArrayLike,
    graph_emb: ArrayLike,
    node_graph: ArrayLike,
    *,
    node_mask: ArrayLike | None = None,
    graph_mask: ArrayLike | None = None,
) -> jax.Array:
    r"""InfoGraph's loss: JSD mutual-information bound between node and graph embeddings.

    With scores ``s_vg = l_v . g_g`` (dot products, no normalisation), node ``v`` and its
    own graph form a positive pair and ``v`` with every other graph of the batch a
    negative one. The Jensen-Shannon estimator (Deep InfoMax's ``'JSD'`` measure, InfoGraph
    Eq. 4) gives

    .. math::
        E_+ = \frac{1}{|V|}\sum_v \big(\log 2 - \mathrm{sp}(-s_{v,G(v)})\big),\quad
        E_- = \frac{1}{|V|(|G|-1)}\sum_v\sum_{g \ne G(v)} \big(\mathrm{sp}(-s_{vg}) + s_{vg}
        - \log 2\big),

    and the loss is ``E_- - E_+`` (to minimise), ``sp`` being softplus. The normalisers are
    those of InfoGraph's ``local_global_loss_``: real nodes, and real nodes times the other
    real graphs.

    Args:
      node_emb: ``[n_node, dim]`` node embeddings (after the local discriminator).
      graph_emb: ``[n_graph, dim]`` graph embeddings (after the global discriminator).
      node_graph: int ``[n_node]`` the graph each node belongs to, in ``[0, n_graph)``.
        Checked when concrete (outside ``jit``; only the real nodes' ids when
        ``node_mask`` is concrete too): an id out of range raises ``ValueError``. Under
        ``jit`` it cannot be checked, and a node with an out-of-range id has no positive
        pair and counts every real graph as a negative.
      node_mask: optional bool ``[n_node]`` real nodes; padding nodes take no part.
      graph_mask: optional bool ``[n_graph]`` real graphs; padding graphs are no
        negatives (and their nodes should be masked too). Masked rows of ``node_emb`` and
        ``graph_emb`` may hold anything, NaN and inf included: they are zeroed before any
        arithmetic and get a zero gradient.

    Returns:
      Scalar float32 loss. Its minimum, ``-2 log 2``, needs every positive score to go to
      ``+inf`` and every negative one to ``-inf``.

    Example:
      >>> import jax, jax.numpy as jnp
      >>> from jaxcl.losses import local_global_jsd
      >>> nodes = jax.random.normal(jax.random.key(0), (5, 4))
      >>> graphs = jax.random.normal(jax.random.key(1), (2, 4))
      >>> loss = local_global_jsd(nodes, graphs, jnp.array([0, 0, 0, 1, 1]))
      >>> loss.shape
      ()

    References:
      Sun et al., "InfoGraph: Unsupervised and Semi-supervised Graph-Level Representation
      Learning via Mutual Information Maximization", ICLR 2020, Eqs. 3-4 (code
      ``unsupervised/losses.py``, ``local_global_loss_``); Hjelm et al., "Learning deep
      representations by mutual information estimation and maximization", ICLR 2019.
    """
    fn = "local_global_jsd"
    node_emb = _checks.embeddings(fn, "node_emb", node_emb)
    graph_emb = _checks.embeddings(fn, "graph_emb", graph_emb)
    if node_emb.shape[1] != graph_emb.shape[1]:
        _checks.fail(
            fn,
            f"`node_emb` and `graph_emb` must have the same width, got shapes "
            f"{tuple(node_emb.shape)} and {tuple(graph_emb.shape)}",
        )
    n_node, n_graph = node_emb.shape[0], graph_emb.shape[0]
    node_mask = _checks.bool_mask(fn, "node_mask", node_mask, n_node)
    graph_mask = _checks.bool_mask(fn, "graph_mask", graph_mask, n_graph)
    node_graph = _checks.index_array(
        fn,
        "node_graph",
        node_graph,
        (n_node,),
        size=n_graph,
        what="graph ids (rows of `graph_emb`)",
        where=node_mask,
    )
    node_mask = jnp.ones((n_node,), bool) if node_mask is None else node_mask
    graph_mask = jnp.ones((n_graph,), bool) if graph_mask is None else graph_mask
    pos_sum, neg_sum = jsd_sums(node_emb, graph_emb, node_graph, node_mask, graph_mask)
    num_nodes = jnp.sum(node_mask, dtype=jnp.float32)
    num_graphs = jnp.sum(graph_mask, dtype=jnp.float32)
    e_pos = pos_sum / jnp.maximum(num_nodes, 1.0)
    e_neg = neg_sum / jnp.maximum(num_nodes * (num_graphs - 1.0), 1.0)
    return e_neg - e_pos


def jsd_sums(node_emb, graph_emb, node_graph, node_mask, graph_mask):
    """The un-normalised sums of :func:`local_global_jsd`'s positive and negative terms over
    checked inputs (boolean masks given), for estimators that normalise otherwise (MVGRL's
    dense batches, ``jaxcl.methods.MVGRLGraph``'s ``dense_padding``)."""
    node_emb = _common.zero_masked_rows(node_emb, node_mask)
    graph_emb = _common.zero_masked_rows(graph_emb, graph_mask)
    scores = node_emb.astype(jnp.float32) @ graph_emb.astype(jnp.float32).T
    own = node_graph[:, None] == jnp.arange(graph_emb.shape[0])[None, :]
    pair_ok = node_mask[:, None] & graph_mask[None, :]
    pos_terms = _LOG_2 - jax.nn.softplus(-scores)
    neg_terms = negative_term(scores)
    return (
        jnp.sum(jnp.where(own & pair_ok, pos_terms, 0.0)),
        jnp.sum(jnp.where(~own & pair_ok, neg_terms, 0.0)),
    )


def negative_term(scores: jax.Array) -> jax.Array:
    """A negative pair's JSD term ``sp(-s) + s - log 2``, written as ``sp(s) - log 2``: the same
    number, without cancellation at large ``-s``."""
    return jax.nn.softplus(scores) - _LOG_2
