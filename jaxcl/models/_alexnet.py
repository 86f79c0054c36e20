"""MetAug's networks: AlexNet split across channels into view-specific halves (CMC,
SplitBrain), and the meta feature augmentation generator (MAG).

One half of the split AlexNet (CMC's ``alexnet_cifar`` half, which MetAug's code builds on):
five 3x3 convolutions (stride 1, padding 1, no bias) of ``48, 96, 192, 192, 128`` channels
(half of AlexNet's 96, 192, 384, 384, 256), each followed by batch norm and ReLU, with a 3x3
max pool of stride 2 after the first, second and fifth; then ``fc6`` and ``fc7`` (2048 wide,
half of 4096, each Linear - BN - ReLU) and ``fc8``, a linear map to the 128-dimensional
feature, l2-normalised. The spatial size after the three pools follows the input (32x32:
3x3; 28x28: 2x2), so the same half serves CIFAR and Fashion-MNIST; ``width`` scales every
channel count and ``fc6``/``fc7`` for small machines.

MetAug's two backbones (App. B.1) are two cuts of this one network: ``'conv'``, the encoder
``f`` is the five convolutions (the representation is the flattened ``conv5`` output) and the
projection head ``g`` is ``fc6 - fc7 - fc8``; ``'fc'``, the encoder runs to ``fc7`` and the
head is ``fc8``. For evaluation the halves' representations are concatenated, as CMC and
App. B.1 do.
"""

from __future__ import annotations

from collections.abc import Sequence

import jax
import jax.numpy as jnp
from flax import nnx

from jaxcl.losses import l2_normalize
from jaxcl.models._batch_norm import BatchNorm
from jaxcl.models._mlp import BN_MOMENTUM
from jaxcl.models._pool import max_pool

CONV_CHANNELS = (48, 96, 192, 192, 128)
POOL_AFTER = (0, 1, 4)
FC_WIDTH = 2048
REPRESENTATIONS = ("conv", "fc")


def _pool(x):
    return max_pool(x, (3, 3), (2, 2))  # nnx.max_pool's values and gradients, faster on CPU


def _pooled_size(size: int) -> int:
    for _ in POOL_AFTER:
        size = (size - 3) // 2 + 1
    return size


class _LinearBNReLU(nnx.Module):
    def __init__(self, cin, cout, rngs):
        self.linear = nnx.Linear(cin, cout, use_bias=False, rngs=rngs)
        self.norm = BatchNorm(cout, momentum=BN_MOMENTUM, rngs=rngs)

    def __call__(self, x):
        return nnx.relu(self.norm(self.linear(x)))


class AlexNetEncoder(nnx.Module):
    """The encoder ``f`` of one view's half of the split AlexNet (module docstring): the five
    convolutions, and ``fc6``, ``fc7`` when ``representation == 'fc'``.

    Args:
      in_channels: the view's channels (L: 1, ab: 2, RGB: 3, grayscale: 1).
      image_size: the side of the (square) input.
      representation: ``'conv'`` or ``'fc'``, where the encoder ends.
      width: multiplier of every channel count and of ``fc6``/``fc7`` (1.0: CMC's half).
      rngs: ``nnx.Rngs`` for the initial weights.

    Attributes:
      features: the width of the representation.
    """

    def __init__(
        self,
        in_channels: int,
        image_size: int,
        *,
        representation: str = "fc",
        width: float = 1.0,
        rngs: nnx.Rngs,
    ):
        _check(representation, width)
        if image_size < 15:
            raise ValueError(
                f"AlexNetEncoder: `image_size` must be at least 15 (three 3x3/2 pools), got "
                f"{image_size}"
            )
        channels = [max(1, round(c * width)) for c in CONV_CHANNELS]
        sizes = [in_channels, *channels]
        self.convs = nnx.List(
            [
                nnx.Conv(
                    a, b, kernel_size=(3, 3), padding=((1, 1), (1, 1)), use_bias=False, rngs=rngs
                )
                for a, b in zip(sizes[:-1], sizes[1:], strict=True)
            ]
        )
        self.norms = nnx.List([BatchNorm(c, momentum=BN_MOMENTUM, rngs=rngs) for c in channels])
        side = _pooled_size(image_size)
        self.features = channels[-1] * side * side
        self.fc = nnx.List(
            _fc_layers(self.features, fc_width(width), rngs) if representation == "fc" else []
        )
        if representation == "fc":
            self.features = fc_width(width)

    def __call__(self, x: jax.Array) -> jax.Array:
        """``[B, H, W, C]`` float images -> ``[B, features]``."""
        for i, (conv, norm) in enumerate(zip(self.convs, self.norms, strict=True)):
            x = nnx.relu(norm(conv(x)))
            if i in POOL_AFTER:
                x = _pool(x)
        x = x.reshape(x.shape[0], -1)
        for layer in self.fc:
            x = layer(x)
        return x


class AlexNetHead(nnx.Module):
    """The projection head ``g`` of one half: ``fc6``, ``fc7`` (when the encoder ends at
    ``conv5``) and ``fc8``, l2-normalised.

    Args:
      in_features: the encoder's width.
      representation: ``'conv'`` or ``'fc'``, where the encoder ended.
      width: as :class:`AlexNetEncoder`.
      embed_dim: ``fc8``'s width (128).
      rngs: ``nnx.Rngs``.
    """

    def __init__(
        self,
        in_features: int,
        *,
        representation: str = "fc",
        width: float = 1.0,
        embed_dim: int = 128,
        rngs: nnx.Rngs,
    ):
        _check(representation, width)
        fc = fc_width(width)
        self.fc = nnx.List(_fc_layers(in_features, fc, rngs) if representation == "conv" else [])
        self.fc8 = nnx.Linear(fc if representation == "conv" else in_features, embed_dim, rngs=rngs)

    def __call__(self, h: jax.Array) -> jax.Array:
        for layer in self.fc:
            h = layer(h)
        return l2_normalize(self.fc8(h))


def fc_width(width: float) -> int:
    """``fc6``/``fc7``'s width at channel multiplier ``width`` (2048 at 1.0)."""
    return max(1, round(FC_WIDTH * width))


def _fc_layers(cin, width, rngs):
    return [_LinearBNReLU(cin, width, rngs), _LinearBNReLU(width, width, rngs)]


def _check(representation, width):
    if representation not in REPRESENTATIONS:
        raise ValueError(
            f"split AlexNet: `representation` must be one of {list(REPRESENTATIONS)}, got "
            f"{representation!r}"
        )
    if not width > 0:
        raise ValueError(f"split AlexNet: `width` must be > 0, got {width!r}")


class FeatureGenerator(nnx.Module):
    """MetAug's meta feature augmentation generator ``a_omega``: ``Linear - BN - ReLU`` twice
    (``hidden`` wide, 2048 in the paper) and a linear map back to the feature width, with an
    l2-normalised output (``128 -> 2048 -> 2048 -> 128``)."""

    def __init__(self, dim: int = 128, hidden: int = 2048, *, rngs: nnx.Rngs):
        self.layer1 = _LinearBNReLU(dim, hidden, rngs)
        self.layer2 = _LinearBNReLU(hidden, hidden, rngs)
        self.out = nnx.Linear(hidden, dim, rngs=rngs)

    def __call__(self, z: jax.Array) -> jax.Array:
        return l2_normalize(self.out(self.layer2(self.layer1(z))))


class MultiViewModel(nnx.Module):
    """View-specific encoders and projection heads, and (MetAug) one feature generator per
    view: CMC's and MetAug's model. With :class:`AlexNetEncoder` / :class:`AlexNetHead` per
    view it is the split AlexNet; with a ResNet per view, MetAug's Table 2 model.

    Args:
      encoders: one encoder per view (``[B, H, W, C_j]`` -> ``[B, F_j]``).
      heads: one projection head per view (``[B, F_j]`` -> ``[B, D]``, l2-normalised).
      generators: one :class:`FeatureGenerator` per view, or none.
    """

    def __init__(self, encoders: Sequence[nnx.Module], heads: Sequence[nnx.Module], generators=()):
        if len(encoders) < 2 or len(heads) != len(encoders):
            raise ValueError(
                f"MultiViewModel: needs one encoder and one head per view (at least two "
                f"views), got {len(encoders)} encoders and {len(heads)} heads"
            )
        if generators and len(generators) != len(encoders):
            raise ValueError(
                f"MultiViewModel: needs one generator per view ({len(encoders)}), got "
                f"{len(generators)}"
            )
        self.encoders = nnx.List(list(encoders))
        self.heads = nnx.List(list(heads))
        self.generators = nnx.List(list(generators))

    def __call__(self, views: Sequence[jax.Array]) -> list[jax.Array]:
        """Each view's l2-normalised feature ``z^j = g_j(f_j(x^j))``."""
        return [
            l2_normalize(head(enc(x)))
            for enc, head, x in zip(self.encoders, self.heads, views, strict=True)
        ]

    def augment(self, features: Sequence[jax.Array]) -> list[jax.Array]:
        """Each view's augmented feature ``a_omega_j(z^j)``."""
        return [gen(z) for gen, z in zip(self.generators, features, strict=True)]

    def represent(self, views: Sequence[jax.Array]) -> jax.Array:
        """The encoders' representations of the views, concatenated (evaluation)."""
        return jnp.concatenate(
            [enc(x).astype(jnp.float32) for enc, x in zip(self.encoders, views, strict=True)],
            axis=-1,
        )
