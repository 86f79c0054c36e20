"""Feed-forward heads of the graph methods: InfoGraph's discriminators, DACL's graph head."""

from __future__ import annotations

import jax
import jraph
from flax import nnx

from jaxcl import _checks as checks
from jaxcl.models._batch_norm import BatchNorm
from jaxcl.models._mlp import BN_MOMENTUM


class FeedForward(nnx.Module):
    """``depth`` x (Linear -> [BatchNorm] -> ReLU), optionally plus a linear shortcut.

    With ``shortcut=True`` this is InfoGraph's ``FF`` discriminator (``block(x) +
    linear_shortcut(x)``, ReLU after every layer of the block); without it, the projection
    head of DACL's graph code (``Projhead``: the same block, no shortcut). Both initialise
    every kernel Glorot-uniform and every bias at zero (``init_emb``: torch's
    ``xavier_uniform_``, bias 0), as here.

    Batch norm is off by default (neither released head has it). When on, it follows each
    linear layer and takes its statistics over the rows ``mask`` marks, so that padding
    rows of a padded batch never enter them (and rows computed from padding do not depend
    on what they hold).

    Args:
      in_features: input width.
      width: width of the hidden layers.
      depth: number of layers, >= 1.
      out_features: width of the last layer (and of the output); default ``width``.
      shortcut: add ``Linear(in_features, out_features)(x)`` to the block's output.
      batch_norm: masked batch norm after every linear layer.
      bn_momentum: decay of the batch-norm running averages.
      rngs: ``nnx.Rngs`` for the initial weights.

    Example:
      >>> import jax.numpy as jnp
      >>> from flax import nnx
      >>> ff = FeedForward(8, width=16, depth=3, shortcut=True, rngs=nnx.Rngs(0))
      >>> ff(jnp.ones((5, 8))).shape
      (5, 16)

    References:
      Sun et al., "InfoGraph", ICLR 2020, §3.2 (code ``unsupervised/model.py``, ``FF``);
      Verma et al., DACL, ICML 2021, §5.3 (code vikasverma1077/graph_cnt ``Projhead``).
    """

    def __init__(
        self,
        in_features: int,
        *,
        width: int,
        depth: int,
        out_features: int | None = None,
        shortcut: bool = False,
        batch_norm: bool = False,
        bn_momentum: float = BN_MOMENTUM,
        rngs: nnx.Rngs,
    ):
        if isinstance(depth, bool) or not isinstance(depth, int) or depth <= 0:
            raise ValueError(f"FeedForward: `depth` must be a positive int, got {depth!r}")
        checks.positive_int("FeedForward", "in_features", in_features)
        checks.positive_int("FeedForward", "width", width)
        if out_features is not None:
            checks.positive_int("FeedForward", "out_features", out_features)
        init = dict(
            kernel_init=nnx.initializers.glorot_uniform(),
            bias_init=nnx.initializers.zeros_init(),
            rngs=rngs,
        )
        out_features = width if out_features is None else out_features
        sizes = [in_features] + [width] * (depth - 1) + [out_features]
        self.linears = nnx.List(
            [nnx.Linear(a, b, **init) for a, b in zip(sizes[:-1], sizes[1:], strict=True)]
        )
        self.norms = nnx.List(
            [BatchNorm(b, momentum=bn_momentum, rngs=rngs) for b in sizes[1:]] if batch_norm else []
        )
        self.shortcut = nnx.Linear(in_features, out_features, **init) if shortcut else None

    def __call__(
        self, x: jax.Array, *, mask: jax.Array | None = None, after_first_linear: bool = False
    ) -> jax.Array:
        """``x: [rows, in_features]`` -> ``[rows, out_features]``.

        Args:
          x: input rows.
          mask: optional bool ``[rows]``: the rows batch norm takes statistics over.
          after_first_linear: ``x`` is already ``self.linears[0]``'s output ``[rows, width]``
            and the block continues from there (batch norm, ReLU, the other layers). For a
            caller that mixes rows between the first Linear and the rest: the Linear is
            affine, so it commutes with row mixtures whose weights sum to one, and can run
            on the rows before they are mixed into more rows. Not with ``shortcut``, which
            needs the block's input.
        """
        if after_first_linear and self.shortcut is not None:
            raise ValueError(
                "FeedForward: `after_first_linear=True` needs the block's input for its "
                "`shortcut`; call it on the input instead"
            )
        h = x
        for i, linear in enumerate(self.linears):
            if i or not after_first_linear:
                h = linear(h)
            if self.norms:
                h = self.norms[i](h, mask=None if mask is None else mask[:, None])
            h = nnx.relu(h)
        if self.shortcut is not None:
            h = h + self.shortcut(x)
        return h


class InfoGraphModel(nnx.Module):
    """The GIN encoder and InfoGraph's two discriminator heads (local: nodes, global: graphs)."""

    def __init__(self, encoder: nnx.Module, local_head: nnx.Module, global_head: nnx.Module):
        self.encoder = encoder
        self.local_head = local_head
        self.global_head = global_head

    def __call__(self, batch: jraph.GraphsTuple) -> jax.Array:
        return self.encoder(batch)
