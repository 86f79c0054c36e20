"""Contrastive losses: pure functions of embeddings, jit- and shard_map-ready.

The losses take their inputs (embeddings, or for OUCL similarity sets) and keyword-only
hyperparameters. ``infonce``, ``nt_xent``, ``imix_npair_loss``, ``imix_byol_loss`` and
``esco_loss`` also take an optional ``axis_name``: inside ``jax.shard_map`` over a
batch-sharded mesh axis, pass that axis name, and the InfoNCE-type losses contrast against the
global batch (all-gathering the other view), ``esco_loss`` psums its D-dimensional
random-feature sums, and every device returns the global-batch mean, whose gradient with
respect to each device's rows equals the matching rows of the single-device gradient. The
others (m-Mix's, OUCL's, ``metaug_margin_loss``, ``local_global_jsd``) have no ``axis_name``:
call them on global arrays under ``jit`` (which partitions them over a sharded batch), not on
one shard inside ``shard_map``, where m-Mix's objectives would see only the shard's negatives.

Under ``jax.pmap`` (kept by JAX in maintenance mode) the values are the same, but pmap's
``psum`` transposes to ``psum``, so gradients of the returned loss come out multiplied by the
number of devices: divide them by ``jax.lax.psum(1, axis_name)``.
"""

from jaxcl.losses._common import l2_normalize
from jaxcl.losses._esco import NEGATIVES as ESCO_NEGATIVES
from jaxcl.losses._esco import esco_loss
from jaxcl.losses._infonce import infonce, nt_xent
from jaxcl.losses._local_global import local_global_jsd
from jaxcl.losses._mmix import (
    mmix_diversity_loss,
    mmix_graph_loss,
    mmix_node_loss,
    mmix_node_loss_per_graph,
)
from jaxcl.losses._npair import imix_byol_loss, imix_npair_loss
from jaxcl.losses._oucl import (
    MARGINS as METAUG_MARGINS,
)
from jaxcl.losses._oucl import (
    metaug_margin_loss,
    oucl_loss,
    oucl_quadratic_loss,
    oucl_weighted_loss,
)

__all__ = [
    "ESCO_NEGATIVES",
    "esco_loss",
    "imix_byol_loss",
    "imix_npair_loss",
    "infonce",
    "l2_normalize",
    "local_global_jsd",
    "mmix_diversity_loss",
    "mmix_graph_loss",
    "mmix_node_loss",
    "mmix_node_loss_per_graph",
    "METAUG_MARGINS",
    "metaug_margin_loss",
    "oucl_loss",
    "oucl_quadratic_loss",
    "oucl_weighted_loss",
    "nt_xent",
]
