"""Flax NNX models: MLP encoders and heads, classifiers, GIN and GCN graph encoders."""

from jaxcl.models._feedforward import FeedForward
from jaxcl.models._gnn import GCN, GIN, GCNLayer, GINGraphEncoder, GINLayer, grace_encoder
from jaxcl.models._mlp import (
    BN_MOMENTUM,
    MLP,
    Classifier,
    ContrastiveModel,
    mlp_encoder,
    projection_head,
)

__all__ = [
    "BN_MOMENTUM",
    "MLP",
    "Classifier",
    "ContrastiveModel",
    "FeedForward",
    "mlp_encoder",
    "projection_head",
    "GCN",
    "GIN",
    "GINGraphEncoder",
    "GCNLayer",
    "GINLayer",
    "grace_encoder",
]
