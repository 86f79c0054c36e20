"""Encoders by name (``config.model.encoder``): how each is built and which keys it reads."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import jax
from flax import nnx

from jaxcl import models


@dataclasses.dataclass(frozen=True)
class Encoder:
    """An encoder ``config.model.encoder`` can name.

    Attributes:
      build: ``build(model_config, spec, rngs) -> (module, output width)``.
      defaults: the keys under ``config.model`` it reads, with their defaults.
      data_kinds: the task kinds it encodes.
    """

    build: Callable[[Any, Any, nnx.Rngs], tuple[nnx.Module, int]]
    defaults: dict[str, Any]
    data_kinds: tuple[str, ...]


ENCODERS: dict[str, Encoder] = {}


def register_encoder(
    name: str,
    build: Callable[[Any, Any, nnx.Rngs], tuple[nnx.Module, int]],
    *,
    defaults: dict[str, Any],
    data_kinds: tuple[str, ...],
) -> None:
    """Makes ``config.model.encoder = name`` build ``build(model_config, spec, rngs)``."""
    if name in ENCODERS and ENCODERS[name].build is not build:
        raise ValueError(f"register_encoder: encoder name {name!r} is taken")
    ENCODERS[name] = Encoder(build, dict(defaults), tuple(data_kinds))


def get(name: str) -> Encoder:
    if name not in ENCODERS:
        raise ValueError(
            f"config.model.encoder = {name!r}: unknown encoder; known encoders: {sorted(ENCODERS)}"
        )
    return ENCODERS[name]


def build(model_config, spec, rngs: nnx.Rngs):
    return get(model_config.encoder).build(model_config, spec, rngs)


def _mlp(m, spec, rngs):
    """``encoder_depth`` x (Linear, BN, ReLU) of ``encoder_width`` (tabular data)."""
    enc = models.mlp_encoder(
        spec.num_features, depth=m.encoder_depth, width=m.encoder_width, rngs=rngs
    )
    return enc, m.encoder_width


def slab_layout_on(choice: str) -> bool:
    """Whether a ``'auto'`` / ``'on'`` / ``'off'`` sparse-layout setting asks for the slab
    path (:func:`jaxcl.graphs.edge_pattern`): ``'auto'`` is on on CPU, where it was
    measured faster, and off on accelerators, where it was not measured."""
    return choice == "on" or (choice == "auto" and jax.default_backend() == "cpu")


_GIN_INITS = {"glorot_uniform": nnx.initializers.glorot_uniform, "lecun_normal": None}


def _gin(m, spec, rngs):
    """GIN of ``encoder_depth`` layers of ``encoder_width``; the graph embedding concatenates
    the sum-pooled layer states (``encoder_depth * encoder_width``); kernels initialised by
    ``gin_kernel_init``; neighbours summed through slabs (:class:`jaxcl.models.GIN`'s
    ``slabs``) when ``gin_sparse_layout`` is ``'on'``, or ``'auto'`` on CPU (not measured on
    accelerators: ``'off'`` there)."""
    if m.gin_kernel_init not in _GIN_INITS:
        raise ValueError(
            f"config.model.gin_kernel_init = {m.gin_kernel_init!r}: expected one of "
            f"{sorted(_GIN_INITS)}"
        )
    init = _GIN_INITS[m.gin_kernel_init]
    enc = models.GINGraphEncoder(
        spec.num_features,
        width=m.encoder_width,
        depth=m.encoder_depth,
        kernel_init=None if init is None else init(),
        slabs=slab_layout_on(m.gin_sparse_layout),
        rngs=rngs,
    )
    return enc, enc.out_features


def _gcn(m, spec, rngs):
    """GRACE's GCN: ``encoder_depth`` layers, the last ``encoder_width`` wide and the others
    twice that (node embeddings)."""
    enc = models.grace_encoder(
        spec.num_features, out_dim=m.encoder_width, num_layers=m.encoder_depth, rngs=rngs
    )
    return enc, m.encoder_width


class ImageEncoder(nnx.Module):
    """A ResNet on raw images: ``uint8`` (or ``[0, 1]`` float) ``[batch, H, W, C]`` in,
    features out. uint8 images are scaled to ``[0, 1]`` here, on the device, so batches travel
    to the devices as bytes. No per-channel mean/std normalisation (as SimCLR's own code: the
    first batch norm absorbs the scale)."""

    def __init__(self, net: nnx.Module):
        self.net = net

    def __call__(self, images):
        import jax.numpy as jnp

        if images.dtype == jnp.uint8:
            images = images.astype(jnp.float32) / 255.0
        return self.net(images)


def _resnet(m, spec, rngs):
    """ResNet-``resnet_depth`` (18/34/50) with ``width_multiplier`` (or ``base_width``
    channels in the first stage when > 0), the ``resnet_stem`` ('cifar': 3x3 conv, no
    max-pool; 'imagenet': 7x7/2 conv + max-pool), optionally zero-initialised last BN gamma
    per block."""
    net = models.ResNet(
        m.resnet_depth,
        in_channels=spec.image_shape[-1],
        width_multiplier=m.width_multiplier,
        base_width=m.base_width or None,
        stem=m.resnet_stem,
        zero_init_residual=m.zero_init_residual,
        rngs=rngs,
    )
    return ImageEncoder(net), net.features


register_encoder(
    "mlp",
    _mlp,
    defaults={"encoder_depth": 12, "encoder_width": 1024},
    data_kinds=("tabular", "paired"),
)


def _mlp_plain(m, spec, rngs):
    """``encoder_depth`` linear layers, ReLU between them, no batch norm, a linear output of
    ``encoder_out_dim`` (ESCo's synthetic encoder: 1024-1024-1024-512)."""
    widths = (m.encoder_width,) * (m.encoder_depth - 1) + (m.encoder_out_dim,)
    enc = models.MLP(spec.num_features, widths, batch_norm=False, final_activation=False, rngs=rngs)
    return enc, m.encoder_out_dim


register_encoder(
    "mlp_plain",
    _mlp_plain,
    defaults={"encoder_depth": 3, "encoder_width": 1024, "encoder_out_dim": 512},
    data_kinds=("tabular", "paired"),
)
register_encoder(
    "gin",
    _gin,
    defaults={
        "encoder_depth": 4,
        "encoder_width": 512,
        "gin_kernel_init": "lecun_normal",
        "gin_sparse_layout": "auto",
    },
    data_kinds=("graph",),
)
register_encoder(
    "gcn", _gcn, defaults={"encoder_depth": 2, "encoder_width": 512}, data_kinds=("node",)
)


def _alexnet_half(m, spec, rngs):
    """One half of CMC's split AlexNet (:class:`jaxcl.models.AlexNetEncoder`) for images with
    ``spec.image_shape[-1]`` channels: the five convolutions, and ``fc6``/``fc7`` when
    ``representation`` is ``'fc'``; channels scaled by ``alexnet_width``."""
    net = models.AlexNetEncoder(
        spec.image_shape[-1],
        spec.image_shape[0],
        representation=m.representation,
        width=m.alexnet_width,
        rngs=rngs,
    )
    return ImageEncoder(net), net.features


register_encoder(
    "alexnet_half",
    _alexnet_half,
    defaults={"alexnet_width": 1.0, "representation": "fc"},
    data_kinds=("image",),
)
register_encoder(
    "resnet",
    _resnet,
    defaults={
        "resnet_depth": 50,
        "width_multiplier": 1,
        "base_width": 0,  # 0: 64 x width_multiplier
        "resnet_stem": "cifar",
        "zero_init_residual": False,
    },
    data_kinds=("image",),
)
