"""Pretraining methods: how views are made, which loss, and (where needed) their own seams.

A method is a :class:`Method` subclass registered with :func:`register` (the one place it
is registered); ``get(name)`` returns the class ``config.method.name`` names. Encoders
(``config.model.encoder``) are registered likewise with :func:`register_encoder`.

Tabular (DACL Table 1, i-Mix): ``dacl``, ``dacl_plus``, ``gaussian``, ``none``,
``supervised``, ``npair``, ``imix``. Graphs: ``dacl_graph``, ``infograph`` (DACL Table 4),
``mvgrl_graph``, ``mvgrl_graph_mmix`` (m-Mix Table 2). Given pairs of views (ESCo's
synthetic data): ``esco_pairs``.
Nodes: ``grace``, ``grace_esco`` (GRACE with ESCo's loss), ``mvgrl``, ``mvgrl_mmix``
(MVGRL + m-Mix), ``grace_mmix`` (GRACE + mp-mix). Images (DACL Tables 2-3, i-Mix):
``simclr``, ``simclr_dacl``, ``npair_image``, ``imix_image``, ``moco``, ``imix_moco``,
``byol``, ``imix_byol``, ``simclr_mmix`` (m-Mix Table 3), ``esco_simclr`` (ESCo Fig. 6),
``metaug``, ``metaug_oucl``,
``split_simclr`` (MetAug Table 1, on view-specific encoders), and the
domain-agnostic ``dacl``, ``dacl_plus``, ``gaussian``, ``none``, ``supervised`` on whole images.
"""

from jaxcl.methods._base import (
    HEAD_DEFAULTS,
    REGISTRY,
    Batch,
    DataSpec,
    Method,
    build_encoder,
    check_choice,
    get,
    register,
)
from jaxcl.methods._encoders import ENCODERS, Encoder, register_encoder
from jaxcl.methods._grace import GRACE, GRACEESCo, GRACEInputs
from jaxcl.methods._graph import DACLGraph, InfoGraph
from jaxcl.methods._images import ESCoSimCLR, ImageIMix, ImageNPair, SimCLR, SimCLRDACL
from jaxcl.methods._imix import IMix, NPair
from jaxcl.methods._metaug import MetAug, MetAugOUCL, SplitSimCLR
from jaxcl.methods._mmix import MMixNodeModel, MVGRLMix
from jaxcl.methods._mmix_grace import GRACEMix
from jaxcl.methods._mmix_images import SimCLRMix
from jaxcl.methods._momentum import BYOL, IMixBYOL, IMixMoCo, MoCo
from jaxcl.methods._multiview import contrast_sets
from jaxcl.methods._mvgrl import MVGRL, MVGRLInputs
from jaxcl.methods._mvgrl_graph import MVGRLGraph, MVGRLGraphMix, two_view_dataset
from jaxcl.methods._paired import ESCoPairs
from jaxcl.methods._queue import (
    enqueue,
    queue_filled,
    queue_init,
    queue_mask,
    queue_specs,
    relayout_queues,
)
from jaxcl.methods._tabular import (
    DACL,
    DACLPlus,
    EncoderOnly,
    GaussianNoise,
    NoPretraining,
    Supervised,
    TwoViews,
)

__all__ = [
    "ESCoPairs",
    "ESCoSimCLR",
    "BYOL",
    "IMixBYOL",
    "IMixMoCo",
    "MoCo",
    "MetAug",
    "MetAugOUCL",
    "SplitSimCLR",
    "contrast_sets",
    "DACL",
    "ENCODERS",
    "GRACE",
    "GRACEESCo",
    "HEAD_DEFAULTS",
    "MVGRL",
    "MVGRLMix",
    "GRACEMix",
    "SimCLRMix",
    "MVGRLGraph",
    "MVGRLGraphMix",
    "two_view_dataset",
    "MMixNodeModel",
    "REGISTRY",
    "Batch",
    "DACLGraph",
    "DACLPlus",
    "DataSpec",
    "Encoder",
    "EncoderOnly",
    "GRACEInputs",
    "GaussianNoise",
    "IMix",
    "ImageIMix",
    "ImageNPair",
    "InfoGraph",
    "MVGRLInputs",
    "Method",
    "NPair",
    "NoPretraining",
    "SimCLR",
    "SimCLRDACL",
    "Supervised",
    "TwoViews",
    "build_encoder",
    "check_choice",
    "enqueue",
    "get",
    "queue_filled",
    "queue_init",
    "queue_mask",
    "queue_specs",
    "relayout_queues",
    "register",
    "register_encoder",
]
