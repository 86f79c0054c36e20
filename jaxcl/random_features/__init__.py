"""Random features for the Gaussian kernel and the fast Walsh-Hadamard transform.

``rff_features``, ``sorf_features`` and ``positive_features`` map ``[..., dim]`` inputs to
explicit features whose inner products approximate ``exp(-||x - y||^2 / (2 * temperature))``
(ESCo, Sec. 4.2); ``fwht`` is the transform behind SORF (ESCo, Eq. 12).
"""

from jaxcl.random_features._features import PositiveParams as PositiveParams
from jaxcl.random_features._features import RFFParams as RFFParams
from jaxcl.random_features._features import SORFParams as SORFParams
from jaxcl.random_features._features import draw_positive as draw_positive
from jaxcl.random_features._features import draw_rff as draw_rff
from jaxcl.random_features._features import draw_sorf as draw_sorf
from jaxcl.random_features._features import positive_features as positive_features
from jaxcl.random_features._features import positive_log_features as positive_log_features
from jaxcl.random_features._features import rff_features as rff_features
from jaxcl.random_features._features import rff_projection as rff_projection
from jaxcl.random_features._features import sorf_features as sorf_features
from jaxcl.random_features._features import sorf_projection as sorf_projection
from jaxcl.random_features._fwht import fwht as fwht

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
