"""MVGRL's graph code on dense batches: what its padded rows add to the local-global loss."""

from __future__ import annotations

import jax
import jax.numpy as jnp


def dense_padding_jsd(node_emb, graph_emb, node_graph, real, pad_rows, pad_emb, max_nodes):
    """MVGRL's code's ``local_global_loss_`` on its dense batches, every graph padded to
    ``max_nodes`` rows: the padded rows (all with the one embedding ``pad_emb``) are masked
    against their own graph but stay negatives against every other graph of the batch, and
    both normalisers count ``max_nodes`` rows per graph. ``real``: the batch's padding masks."""
    log2 = jnp.log(2.0).astype(jnp.float32)
    sp = jax.nn.softplus
    zn = jnp.where(real.nodes[:, None], node_emb, 0.0)
    zg = jnp.where(real.graphs[:, None], graph_emb, 0.0)
    s = zn @ zg.T
    own = node_graph[:, None] == jnp.arange(zg.shape[0])[None, :]
    valid = real.nodes[:, None] & real.graphs[None, :]
    pos = jnp.where(own & valid, log2 - sp(-s), 0.0).sum()
    neg = jnp.where(~own & valid, sp(-s) + s - log2, 0.0).sum()
    t = zg @ pad_emb
    pads = jnp.where(real.graphs, pad_rows, 0.0)
    neg = neg + jnp.where(real.graphs, (pads.sum() - pads) * (sp(-t) + t - log2), 0.0).sum()
    num_graphs = real.graphs.sum()
    rows = num_graphs * max_nodes
    return neg / (rows * jnp.maximum(num_graphs - 1, 1)) - pos / rows
