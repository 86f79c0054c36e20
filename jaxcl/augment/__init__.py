"""Image augmentations as pure functions of a PRNG key, jitted on the device.

Each random transformation takes one key and one ``[H, W, C]`` image in ``[0, 1]`` (``C``
1 or 3) and is deterministic in its key; batch it with ``jax.vmap`` over a batch of keys,
or draw whole views of a batch with :func:`batch_views` (one key per example and view).

* colour: :func:`adjust_brightness`, :func:`adjust_contrast`, :func:`adjust_saturation`,
  :func:`adjust_hue`, :func:`rgb_to_grayscale`, :func:`solarize`; random
  :func:`color_jitter` (random order, as torchvision's ``ColorJitter``),
  :func:`random_grayscale`, :func:`random_solarize`;
* Lab colour: :func:`rgb_to_lab`, :func:`lab_views` (CMC's and MetAug's L and ab views);
* geometry: :func:`crop_box`, :func:`resized_crop`, :func:`random_resized_crop`,
  :func:`random_flip`;
* blur: :func:`gaussian_blur`, :func:`random_gaussian_blur`;
* views: :func:`simclr_view`, :func:`byol_view` (:data:`BYOL_VIEWS`), :func:`batch_views`.
"""

from jaxcl.augment._blur import (
    default_kernel_size,
    gaussian_blur,
    gaussian_kernel,
    random_gaussian_blur,
)
from jaxcl.augment._color import (
    LUMA,
    adjust_brightness,
    adjust_contrast,
    adjust_hue,
    adjust_saturation,
    apply_color_jitter,
    color_jitter,
    color_jitter_params,
    random_grayscale,
    random_solarize,
    rgb_to_grayscale,
    solarize,
)
from jaxcl.augment._geometry import crop_box, random_flip, random_resized_crop, resized_crop
from jaxcl.augment._lab import lab_views, rgb_to_lab
from jaxcl.augment._views import (
    BYOL_VIEWS,
    batch_views,
    byol_view,
    simclr_view,
    to_unit_range,
)

__all__ = [
    "BYOL_VIEWS",
    "LUMA",
    "adjust_brightness",
    "adjust_contrast",
    "adjust_hue",
    "adjust_saturation",
    "apply_color_jitter",
    "batch_views",
    "byol_view",
    "color_jitter",
    "color_jitter_params",
    "crop_box",
    "default_kernel_size",
    "gaussian_blur",
    "gaussian_kernel",
    "lab_views",
    "random_flip",
    "random_gaussian_blur",
    "random_grayscale",
    "random_resized_crop",
    "random_solarize",
    "resized_crop",
    "rgb_to_grayscale",
    "rgb_to_lab",
    "simclr_view",
    "solarize",
    "to_unit_range",
]
