"""What a method supplies to the trainer: its model, how views are made, which loss."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any, ClassVar

import jax
import ml_collections
from flax import nnx

from jaxcl import models


@dataclasses.dataclass(frozen=True)
class Batch:
    """One global batch: features ``x`` and labels ``y`` (labels only for supervised use)."""

    x: jax.Array
    y: jax.Array


jax.tree_util.register_dataclass(Batch, data_fields=["x", "y"], meta_fields=[])


def build_encoder(m: ml_collections.ConfigDict, num_features: int, rngs: nnx.Rngs):
    """The encoder ``config.model.encoder`` names, and the width of its output.

    * ``mlp``: ``encoder_depth`` x (Linear, BN, ReLU) of ``encoder_width`` (tabular data);
    * ``gin``: GIN of ``encoder_depth`` layers of ``encoder_width``, graph embedding = the
      concatenated sum-pooled layer states (``encoder_depth * encoder_width``), kernels
      initialised by ``gin_kernel_init``;
    * ``gcn``: GRACE's GCN, ``encoder_depth`` layers, the last ``encoder_width`` wide and the
      others twice that (node embeddings).
    """
    if m.encoder == "gin":
        init = {"glorot_uniform": nnx.initializers.glorot_uniform(), "lecun_normal": None}
        enc = models.GINGraphEncoder(
            num_features,
            width=m.encoder_width,
            depth=m.encoder_depth,
            kernel_init=init[m.gin_kernel_init],
            rngs=rngs,
        )
        return enc, enc.out_features
    if m.encoder == "gcn":
        enc = models.grace_encoder(
            num_features, out_dim=m.encoder_width, num_layers=m.encoder_depth, rngs=rngs
        )
        return enc, m.encoder_width
    enc = models.mlp_encoder(num_features, depth=m.encoder_depth, width=m.encoder_width, rngs=rngs)
    return enc, m.encoder_width


class Method:
    """A pretraining method.

    Subclasses set ``name`` and ``defaults`` (their hyperparameters under ``config.method``)
    and implement :meth:`loss`. They may override :meth:`build` (the model), :meth:`features`
    (what linear evaluation sees) and :meth:`make_train_step` (a step of their own, e.g.
    MetAug's second-order update).
    """

    name: ClassVar[str]
    defaults: ClassVar[dict[str, Any]] = {}
    # False: no training at all (the No-Pretraining row); the encoder stays at its init.
    pretrains: ClassVar[bool] = True
    # True: evaluated by its own classifier's test accuracy, not by a linear probe.
    supervised: ClassVar[bool] = False

    def __init__(self, config: ml_collections.ConfigDict):
        self.config = config
        self.hp = config.method

    def build(self, num_features: int, num_classes: int, rngs: nnx.Rngs) -> nnx.Module:
        """Encoder (``config.model.encoder``) + projection head, sized by ``config.model``."""
        m = self.config.model
        encoder, width = build_encoder(m, num_features, rngs)
        head = models.projection_head(
            width, depth=m.head_depth, width=m.head_width, out_dim=m.embed_dim, rngs=rngs
        )
        return models.ContrastiveModel(encoder, head)

    def loss(self, model: nnx.Module, batch: Batch, key: jax.Array):
        """Returns ``(loss, metrics)`` for one global batch; ``model`` is in training mode."""
        raise NotImplementedError

    def features(self, model: nnx.Module, x: jax.Array) -> jax.Array:
        """Representations for evaluation: the encoder output, projection head discarded."""
        return model.encoder(x)

    def node_inputs(self, dataset, graph):
        """What node classification passes as the batch to :meth:`loss` and :meth:`features`.

        Called once on the host with the ``jaxcl.data.NodeDataset`` and its
        ``jraph.GraphsTuple``; the result (any pytree of arrays) is placed on the devices once
        and reused every step. Default: the graph. MVGRL adds its diffusion matrix.
        """
        del dataset
        return graph

    def make_train_step(self) -> Callable | None:
        """A replacement for the trainer's default step, or None to use the default."""
        return None
