"""Pretraining methods: how views are made, which loss, and (optionally) their own step.

``get(name)`` returns the method class registered under ``config.method.name``.
"""

from jaxcl.methods._base import Batch, Method, build_encoder
from jaxcl.methods._graph import DACLGraph, InfoGraph
from jaxcl.methods._imix import IMix, NPair
from jaxcl.methods._node import GRACE, MVGRL, GRACEInputs
from jaxcl.methods._tabular import DACL, DACLPlus, GaussianNoise, NoPretraining, Supervised

REGISTRY: dict[str, type[Method]] = {
    cls.name: cls
    for cls in (
        DACL,
        DACLPlus,
        GaussianNoise,
        NoPretraining,
        Supervised,
        NPair,
        IMix,
        GRACE,
        MVGRL,
        DACLGraph,
        InfoGraph,
    )
}


def get(name: str) -> type[Method]:
    """The method class called ``name``; ValueError listing the known names otherwise."""
    if name not in REGISTRY:
        raise ValueError(f"unknown method {name!r}; known methods: {sorted(REGISTRY)}")
    return REGISTRY[name]


__all__ = [
    "DACL",
    "DACLGraph",
    "GRACE",
    "GRACEInputs",
    "MVGRL",
    "REGISTRY",
    "Batch",
    "DACLPlus",
    "GaussianNoise",
    "IMix",
    "InfoGraph",
    "Method",
    "NPair",
    "NoPretraining",
    "Supervised",
    "build_encoder",
    "get",
]
