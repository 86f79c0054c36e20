"""GRACE + m-Mix at node level (m-Mix Table 4): GRACE with its first view's node embeddings
replaced by their hard negatives before the head."""

from __future__ import annotations

import jax
from flax import nnx

from jaxcl import losses, models
from jaxcl.methods._base import register
from jaxcl.methods._grace import GRACE
from jaxcl.methods._mmix import MixHead, _square, check_mixing, mix_with, with_diversity
from jaxcl.methods._windows import draw_windows, over_windows


@register
class GRACEMix(GRACE):
    """GRACE + mp-mix (m-Mix Table 4): GRACE with its first view's node embeddings mixed.

    Everything as :class:`jaxcl.methods.GRACE` (two views by edge dropping and feature
    masking, a GCN, the head ``fc2(ELU(fc1(.)))``, GRACE's loss), except that the first
    view's embeddings ``z_1`` are replaced by their hard negatives before the head: mixed
    among each node's neighbours that the view kept (m-mix-wp; ``mixing`` as
    :class:`jaxcl.methods.MVGRLMix`, by default mp-mix with the diversity loss, weight
    ``diversity``).
    GRACE's head is the MLP ``g`` that follows the mixing (Eq. 7), so only mp-mix's
    projections ``p_m``, ``p_n`` are added (on the model, beside encoder and head).
    Evaluation is GRACE's: the encoder's embeddings of the unaugmented graph. With
    ``windows`` (GRACE's) the mixing runs over the whole graph and the loss over the windows.
    """

    name = "grace_mmix"
    defaults = {
        **GRACE.defaults,
        "mixing": "mp",
        "self_weight": 0.2,
        "diversity": 1.0,
    }

    def __init__(self, config):
        super().__init__(config)
        check_mixing(self.name, self.hp, self.defaults)

    def build(self, spec, rngs):
        model = super().build(spec, rngs)
        width = self.config.model.encoder_width
        return GRACEMixModel(model.encoder, model.head, width, mp=self.hp.mixing == "mp", rngs=rngs)

    def loss(self, model, batch, key, extra):
        k_views, k_mix = jax.random.split(key)
        z1, z2, m1, graph = self.encode_views(model, batch, k_views)
        edges = dict(senders=graph.senders, receivers=graph.receivers, edge_mask=m1)
        k_mix, ids = draw_windows(self.hp, k_mix, z1.shape[0])
        hard = mix_with(self.hp, model, z1, k_mix, **edges)

        def objective(a, b):
            return losses.nt_xent(model.head(a), model.head(b), temperature=self.hp.temperature)

        contrast = over_windows(objective, hard, z2, ids)
        return with_diversity(self.hp, model, z1, contrast, {"contrast": contrast})


class GRACEMixModel(models.ContrastiveModel):
    """GRACE's encoder and head, and mp-mix's projections ``p_m``, ``p_n``."""

    def __init__(self, encoder, head, width: int, *, mp: bool, rngs: nnx.Rngs):
        super().__init__(encoder, head)
        self.p_m = _square(width, rngs) if mp else None
        self.p_n = _square(width, rngs) if mp else None

    projections = MixHead.projections
