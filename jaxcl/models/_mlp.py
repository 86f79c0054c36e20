"""Fully connected encoders and heads with batch norm (DACL §5.1, i-Mix's tabular MLP)."""

from __future__ import annotations

from collections.abc import Sequence

import jax
from flax import nnx

from jaxcl import _checks as checks
from jaxcl.models._batch_norm import BatchNorm

# PyTorch's BatchNorm momentum 0.1 in Flax's convention (decay of the running average); the
# papers' code bases use PyTorch's default.
BN_MOMENTUM = 0.9


class MLP(nnx.Module):
    """A stack of ``Linear -> BatchNorm -> ReLU`` layers.

    Args:
      in_features: input width.
      widths: output width of each layer, e.g. ``(1024,) * 12`` for DACL's encoder.
      batch_norm: batch norm after every linear layer (the linear layers then carry no bias,
        which batch norm would cancel).
      final_activation: ReLU after the last layer too. Encoders keep it; projection heads
        end with ``Linear -> BatchNorm`` (SimCLR v2's head).
      final_norm: batch norm after the last layer (with ``batch_norm``). False: the last layer
        is a plain ``Linear`` with a bias (MoCo v2's and BYOL's heads in i-Mix's code).
      bn_momentum: decay of the batch-norm running averages.
      rngs: ``nnx.Rngs`` for the initial weights.
    """

    def __init__(
        self,
        in_features: int,
        widths: Sequence[int],
        *,
        batch_norm: bool = True,
        final_activation: bool = True,
        final_norm: bool = True,
        bn_momentum: float = BN_MOMENTUM,
        rngs: nnx.Rngs,
    ):
        checks.positive_int("MLP", "in_features", in_features)
        widths = check_widths("MLP", "widths", widths)
        self.final_activation = final_activation
        sizes = [in_features, *widths]
        normed = [batch_norm] * len(widths)
        normed[-1] = batch_norm and final_norm
        self.linears = nnx.List(
            [
                nnx.Linear(a, b, use_bias=not bn, rngs=rngs)
                for a, b, bn in zip(sizes[:-1], sizes[1:], normed, strict=True)
            ]
        )
        self.norms = nnx.List(
            [
                BatchNorm(b, momentum=bn_momentum, rngs=rngs)
                for b, bn in zip(widths, normed, strict=True)
                if bn
            ]
        )

    def __call__(self, x: jax.Array) -> jax.Array:
        last = len(self.linears) - 1
        for i, linear in enumerate(self.linears):
            x = linear(x)
            if i < len(self.norms):  # every layer's norm, or all but the last's
                x = self.norms[i](x)
            if i < last or self.final_activation:
                x = nnx.relu(x)
        return x


class ContrastiveModel(nnx.Module):
    """Encoder ``h = f(x)`` and projection head ``z = g(h)``; the head is dropped for evaluation."""

    def __init__(self, encoder: nnx.Module, head: nnx.Module):
        self.encoder = encoder
        self.head = head

    def __call__(self, x: jax.Array) -> jax.Array:
        return self.head(self.encoder(x))


class Classifier(nnx.Module):
    """Encoder followed by one linear layer to class logits (the supervised baseline)."""

    def __init__(self, encoder: nnx.Module, feature_dim: int, num_classes: int, *, rngs):
        checks.positive_int("Classifier", "feature_dim", feature_dim)
        checks.positive_int("Classifier", "num_classes", num_classes)
        self.encoder = encoder
        self.logits = nnx.Linear(feature_dim, num_classes, rngs=rngs)

    def __call__(self, x: jax.Array) -> jax.Array:
        return self.logits(self.encoder(x))


def check_widths(fn: str, name: str, widths) -> tuple[int, ...]:
    """``widths`` as a non-empty tuple of positive ints, or a ValueError naming ``name``."""
    if not (isinstance(widths, Sequence) and not isinstance(widths, str) and widths):
        checks.fail(fn, f"`{name}` must be a non-empty sequence of layer widths, got {widths!r}")
    return tuple(checks.positive_int(fn, f"{name}[{i}]", w) for i, w in enumerate(widths))


def _check_depth(fn: str, depth) -> None:
    if isinstance(depth, bool) or not isinstance(depth, int) or depth < 1:
        raise ValueError(f"{fn}: `depth` must be an int >= 1 (layers), got {depth!r}")


def mlp_encoder(in_features: int, *, depth: int, width: int, rngs: nnx.Rngs, **kw) -> MLP:
    """``depth`` layers of ``width`` units, each ``Linear -> BN -> ReLU``."""
    _check_depth("mlp_encoder", depth)
    checks.positive_int("mlp_encoder", "width", width)
    return MLP(in_features, (width,) * depth, rngs=rngs, **kw)


def projection_head(
    in_features: int,
    *,
    depth: int,
    width: int,
    out_dim: int,
    output_norm: bool = True,
    rngs: nnx.Rngs,
    **kw,
) -> MLP:
    """``depth`` layers ending in ``out_dim`` units, no ReLU on the output; BN after every
    layer, or (``output_norm=False``) after every layer but the last, which keeps its bias."""
    _check_depth("projection_head", depth)
    checks.positive_int("projection_head", "width", width)
    checks.positive_int("projection_head", "out_dim", out_dim)
    return MLP(
        in_features,
        (width,) * (depth - 1) + (out_dim,),
        final_activation=False,
        final_norm=output_norm,
        rngs=rngs,
        **kw,
    )
