"""Flax NNX models: fully connected encoders, projection heads, classifiers."""

from jaxcl.models._gnn import GCN, GIN, GCNLayer, GINLayer, grace_encoder
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
    "mlp_encoder",
    "projection_head",
    "GCN",
    "GIN",
    "GCNLayer",
    "GINLayer",
    "grace_encoder",
]
