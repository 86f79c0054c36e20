"""Flax NNX models: MLP encoders and heads, classifiers, ResNet-18/34/50 image encoders, the
split AlexNet and feature generators of MetAug (:class:`MultiViewModel`), GIN
and GCN graph encoders, the heads of the graph and node methods, batch norm over groups of the
batch (:class:`BatchNorm`), and the mixed-precision policy."""

from jaxcl.models._alexnet import (
    AlexNetEncoder,
    AlexNetHead,
    FeatureGenerator,
    MultiViewModel,
)
from jaxcl.models._batch_norm import BatchNorm, set_batch_norm_groups
from jaxcl.models._conv import conv_general_dilated
from jaxcl.models._feedforward import FeedForward, InfoGraphModel
from jaxcl.models._gcn import GCN, GCNLayer, grace_encoder
from jaxcl.models._gin import GIN, GINGraphEncoder, GINLayer
from jaxcl.models._mlp import (
    BN_MOMENTUM,
    MLP,
    Classifier,
    ContrastiveModel,
    mlp_encoder,
    projection_head,
)
from jaxcl.models._node_heads import (
    Bilinear,
    DenseGCN,
    ELUProjection,
    MVGRLModel,
    torch_linear,
)
from jaxcl.models._pool import max_pool
from jaxcl.models._precision import COMPUTE_DTYPES, set_compute_dtype
from jaxcl.models._resnet import BasicBlock, Bottleneck, ResNet

__all__ = [
    "BatchNorm",
    "set_batch_norm_groups",
    "AlexNetEncoder",
    "AlexNetHead",
    "FeatureGenerator",
    "MultiViewModel",
    "BasicBlock",
    "Bottleneck",
    "ResNet",
    "conv_general_dilated",
    "max_pool",
    "COMPUTE_DTYPES",
    "Bilinear",
    "DenseGCN",
    "ELUProjection",
    "InfoGraphModel",
    "MVGRLModel",
    "set_compute_dtype",
    "torch_linear",
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
