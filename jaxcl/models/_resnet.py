"""ResNet-18/34/50 encoders with a width multiplier and a CIFAR or ImageNet stem.

The layout is torchvision's ``resnet{18,34,50}`` (v1.5: a bottleneck block strides in its
3x3 convolution; a block's shortcut is a 1x1 convolution + batch norm only where the block
changes the width or the resolution, so a basic-block ResNet's first stage adds its input
unchanged) without the classifier: the encoder returns the globally averaged
features of its last stage, ``512 k`` (basic blocks) or ``2048 k`` (bottleneck) wide for
width multiplier ``k`` (DACL and SimCLR's ResNet-50 (4x): ``k = 4``). Convolutions carry no
bias and are initialised as torchvision's (Kaiming normal, fan out); every convolution is
followed by batch norm (PyTorch's momentum 0.1, eps 1e-5).

Batch norm normalises over the batch it is given: under ``jit`` with the batch sharded over
the ``data`` axis that is the global batch, as SyncBN in PyTorch; with
:func:`jaxcl.models.set_batch_norm_groups` over equal slices of it instead, as PyTorch's
per-GPU batch norm (what MoCo's shuffle-BN needs: ``method.bn_groups`` of
:mod:`jaxcl.methods._momentum`).

Stems: ``'imagenet'``, a 7x7 convolution of stride 2 and a 3x3 max pool of stride 2;
``'cifar'``, a 3x3 convolution of stride 1 and no pool (SimCLR's CIFAR variant), for
32x32 images.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
from flax import nnx

from jaxcl.models._batch_norm import BatchNorm
from jaxcl.models._conv import conv_general_dilated
from jaxcl.models._mlp import BN_MOMENTUM
from jaxcl.models._pool import max_pool

STAGES = {
    18: ("basic", (2, 2, 2, 2)),
    34: ("basic", (3, 4, 6, 3)),
    50: ("bottleneck", (3, 4, 6, 3)),
}
STEMS = ("imagenet", "cifar")
_BN_EPS = 1e-5


def _conv(cin, cout, size, stride, rngs):
    pad = size // 2
    return nnx.Conv(
        cin,
        cout,
        kernel_size=(size, size),
        strides=(stride, stride),
        padding=((pad, pad), (pad, pad)),  # symmetric, as PyTorch (flax's SAME is not at stride 2)
        use_bias=False,
        kernel_init=nnx.initializers.variance_scaling(2.0, "fan_out", "normal"),
        conv_general_dilated=conv_general_dilated,  # see jaxcl.models._conv
        rngs=rngs,
    )


def _norm(features, rngs, *, zero=False):
    return BatchNorm(
        features,
        momentum=BN_MOMENTUM,
        epsilon=_BN_EPS,
        scale_init=nnx.initializers.zeros_init() if zero else nnx.initializers.ones_init(),
        rngs=rngs,
    )


class _Shortcut(nnx.Module):
    """1x1 convolution + batch norm where a block changes the width or the resolution."""

    def __init__(self, cin, cout, stride, rngs):
        self.conv, self.norm = _conv(cin, cout, 1, stride, rngs), _norm(cout, rngs)

    def __call__(self, x):
        return self.norm(self.conv(x))


class BasicBlock(nnx.Module):
    """Two 3x3 convolutions with batch norm, the input added before the last ReLU."""

    expansion = 1

    def __init__(self, cin, width, stride, *, zero_init_residual, rngs):
        self.conv1, self.norm1 = _conv(cin, width, 3, stride, rngs), _norm(width, rngs)
        self.conv2 = _conv(width, width, 3, 1, rngs)
        self.norm2 = _norm(width, rngs, zero=zero_init_residual)
        needs = stride != 1 or cin != width
        self.shortcut = _Shortcut(cin, width, stride, rngs) if needs else None

    def __call__(self, x):
        y = jax.nn.relu(self.norm1(self.conv1(x)))
        y = self.norm2(self.conv2(y))
        return jax.nn.relu(y + (x if self.shortcut is None else self.shortcut(x)))


class Bottleneck(nnx.Module):
    """1x1 (reduce), 3x3 (with the stride), 1x1 (expand x4), the input added before the
    last ReLU."""

    expansion = 4

    def __init__(self, cin, width, stride, *, zero_init_residual, rngs):
        out = width * self.expansion
        self.conv1, self.norm1 = _conv(cin, width, 1, 1, rngs), _norm(width, rngs)
        self.conv2, self.norm2 = _conv(width, width, 3, stride, rngs), _norm(width, rngs)
        self.conv3 = _conv(width, out, 1, 1, rngs)
        self.norm3 = _norm(out, rngs, zero=zero_init_residual)
        needs = stride != 1 or cin != out
        self.shortcut = _Shortcut(cin, out, stride, rngs) if needs else None

    def __call__(self, x):
        y = jax.nn.relu(self.norm1(self.conv1(x)))
        y = jax.nn.relu(self.norm2(self.conv2(y)))
        y = self.norm3(self.conv3(y))
        return jax.nn.relu(y + (x if self.shortcut is None else self.shortcut(x)))


class ResNet(nnx.Module):
    """A ResNet encoder: ``[batch, H, W, C]`` images -> ``[batch, features]``.

    Args:
      depth: 18, 34 or 50.
      in_channels: channels of the images (3 for RGB, 1 for Fashion-MNIST).
      width_multiplier: ``k``: every stage ``k`` times wider (ResNet-50 (4x): 4).
      base_width: channels of the stem and the first stage (default ``64 k``); smaller
        values give the narrow ResNets of quick CPU runs (e.g. 16: a 16x cheaper ResNet-18).
      stem: ``'imagenet'`` or ``'cifar'`` (see the module's docstring).
      zero_init_residual: start the last batch norm of every block at scale 0, so that each
        block begins as its shortcut (Goyal et al., 2017; torchvision's option).
      cpu_gradient_barrier: on CPU, compute the convolutions' kernel gradients through
        :func:`jaxcl.models.conv_general_dilated` (the same values, faster: see
        ``simclr_step_benchmark.py`` in the README), which rules out forward-mode
        differentiation (``jax.jvp``) through the model there; ``False`` for plain
        ``jax.lax.conv_general_dilated``. No effect on accelerators.
      rngs: ``nnx.Rngs`` for the initial weights.

    Attributes:
      features: width of the output, ``512 k`` or ``2048 k``.

    Example:
      >>> import jax.numpy as jnp
      >>> from flax import nnx
      >>> net = ResNet(18, stem="cifar", rngs=nnx.Rngs(0))
      >>> net(jnp.zeros((2, 32, 32, 3))).shape, net.features
      ((2, 512), 512)
    """

    def __init__(
        self,
        depth: int,
        *,
        in_channels: int = 3,
        width_multiplier: int = 1,
        base_width: int | None = None,
        stem: str = "imagenet",
        zero_init_residual: bool = False,
        cpu_gradient_barrier: bool = True,
        rngs: nnx.Rngs,
    ):
        if depth not in STAGES:
            raise ValueError(f"ResNet: `depth` must be one of {sorted(STAGES)}, got {depth!r}")
        if stem not in STEMS:
            raise ValueError(f"ResNet: `stem` must be one of {list(STEMS)}, got {stem!r}")
        for name, value in (
            ("in_channels", in_channels),
            ("width_multiplier", width_multiplier),
            ("base_width", 1 if base_width is None else base_width),
        ):
            if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
                raise ValueError(f"ResNet: `{name}` must be a positive int, got {value!r}")
        if base_width is not None and width_multiplier != 1:
            raise ValueError(
                f"ResNet: give `width_multiplier` ({width_multiplier}) or `base_width` "
                f"({base_width}), not both: the stem's width is 64 * width_multiplier, or "
                "base_width when given"
            )
        if not isinstance(cpu_gradient_barrier, bool):
            raise ValueError(
                f"ResNet: `cpu_gradient_barrier` must be a bool, got {cpu_gradient_barrier!r}"
            )
        base = 64 * width_multiplier if base_width is None else base_width
        kind, blocks = STAGES[depth]
        block_cls = BasicBlock if kind == "basic" else Bottleneck
        self.stem = stem
        size, stride = (7, 2) if stem == "imagenet" else (3, 1)
        self.conv = _conv(in_channels, base, size, stride, rngs)
        self.norm = _norm(base, rngs)
        layers, cin = [], base
        for stage, count in enumerate(blocks):
            width = base * 2**stage
            for i in range(count):
                stride = 2 if (stage > 0 and i == 0) else 1
                layers.append(
                    block_cls(cin, width, stride, zero_init_residual=zero_init_residual, rngs=rngs)
                )
                cin = width * block_cls.expansion
        self.blocks = nnx.List(layers)
        self.features = cin
        if not cpu_gradient_barrier:
            for _, module in nnx.iter_modules(self):
                if isinstance(module, nnx.Conv):
                    module.conv_general_dilated = jax.lax.conv_general_dilated

    def __call__(self, x: jax.Array) -> jax.Array:
        if x.ndim != 4:
            raise ValueError(f"ResNet: input must be images [batch, H, W, C], got {x.shape}")
        x = jax.nn.relu(self.norm(self.conv(x)))
        if self.stem == "imagenet":
            x = max_pool(x, (3, 3), (2, 2), ((1, 1), (1, 1)))  # nnx.max_pool's values
        for block in self.blocks:
            x = block(x)
        return jnp.mean(x, axis=(1, 2))
