"""Random features for the Gaussian kernel and the fast Walsh-Hadamard transform.

``rff_features``, ``sorf_features`` and ``positive_features`` map ``[..., dim]`` inputs to
explicit features whose inner products approximate ``exp(-||x - y||^2 / (2 * temperature))``
(ESCo, Sec. 4.2); ``fwht`` is the transform behind SORF (ESCo, Eq. 12).
"""

from jaxcl.random_features._fwht import fwht
from jaxcl.random_features._positive import (
    PositiveParams,
    draw_positive,
    positive_features,
    positive_log_features,
)
from jaxcl.random_features._rff import RFFParams, draw_rff, rff_features, rff_projection
from jaxcl.random_features._sorf import SORFParams, draw_sorf, sorf_features, sorf_projection

__all__ = [
    "PositiveParams",
    "RFFParams",
    "SORFParams",
    "draw_positive",
    "draw_rff",
    "draw_sorf",
    "fwht",
    "positive_features",
    "positive_log_features",
    "rff_features",
    "rff_projection",
    "sorf_features",
    "sorf_projection",
]
