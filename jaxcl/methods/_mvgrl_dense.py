"""MVGRL's graph code on dense batches: what its padded rows add to the local-global loss."""

from __future__ import annotations

import jax.numpy as jnp

from jaxcl.losses._common import zero_masked_rows
from jaxcl.losses._local_global import jsd_sums, negative_term


def dense_padding_jsd(node_emb, graph_emb, node_graph, real, pad_rows, pad_emb, max_nodes):
    """MVGRL's code's ``local_global_loss_`` on its dense batches, every graph padded to
    ``max_nodes`` rows: the padded rows (all with the one embedding ``pad_emb``) are masked
    against their own graph but stay negatives against every other graph of the batch, and
    both normalisers count ``max_nodes`` rows per graph. ``real``: the batch's padding masks.
    The real nodes' terms are :func:`jaxcl.losses.local_global_jsd`'s."""
    pos, neg = jsd_sums(node_emb, graph_emb, node_graph, real.nodes, real.graphs)
    t = zero_masked_rows(graph_emb, real.graphs).astype(jnp.float32) @ pad_emb
    pads = jnp.where(real.graphs, pad_rows, 0.0)
    # the padded rows of the other graphs, as negatives of each graph
    neg = neg + jnp.where(real.graphs, (pads.sum() - pads) * negative_term(t), 0.0).sum()
    num_graphs = real.graphs.sum()
    rows = num_graphs * max_nodes
    return neg / (rows * jnp.maximum(num_graphs - 1, 1)) - pos / rows
