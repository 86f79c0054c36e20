"""Host crops of images of varying size (ImageNet): random resized crops for training, a
centre crop for evaluation, with Pillow, seeded per example."""

from __future__ import annotations

import dataclasses
import math

import numpy as np

from jaxcl._checks import is_integer, is_real


def crop_box_np(rng: np.random.Generator, height: int, width: int, scale, ratio):
    """A random resized crop's box ``(top, left, h, w)``: torchvision's ``get_params`` (10
    tries of area in ``scale`` and log-uniform ratio in ``ratio``, else a centre crop of the
    ratio clamped to ``ratio``); the host twin of :func:`jaxcl.augment.crop_box`."""
    area = height * width
    log_ratio = np.log(ratio)
    for _ in range(10):
        target = area * rng.uniform(*scale)
        aspect = np.exp(rng.uniform(*log_ratio))
        w = int(round(np.sqrt(target * aspect)))
        h = int(round(np.sqrt(target / aspect)))
        if 0 < w <= width and 0 < h <= height:
            return int(rng.integers(0, height - h + 1)), int(rng.integers(0, width - w + 1)), h, w
    in_ratio = width / height
    if in_ratio < min(ratio):
        w, h = width, int(round(width / min(ratio)))
    elif in_ratio > max(ratio):
        h, w = height, int(round(height * max(ratio)))
    else:
        h, w = height, width
    return (height - h) // 2, (width - w) // 2, h, w


@dataclasses.dataclass(frozen=True)
class HostCrop:
    """Crops of varying-size images to ``size x size`` on the host (Pillow, bilinear).

    Training (``views > 0``): ``views`` random resized crops per image (area ``scale``, ratio
    ``ratio``, SimCLR's 0.08-1 and 3/4-4/3), drawn from the ``rng`` given (in
    :func:`image_batches`, ``np.random.default_rng([seed, epoch, index, tag])``, a stream of
    its own); the batch is ``uint8 [batch, views, size, size, C]``. Evaluation
    (``views == 0``): resize the shorter side to ``size / 0.875`` and take the centre
    ``size x size`` (the usual ImageNet evaluation crop); ``uint8 [batch, size, size, C]``.
    """

    size: int
    views: int = 2
    scale: tuple = (0.08, 1.0)
    ratio: tuple = (3 / 4, 4 / 3)

    def __post_init__(self):
        if not (is_integer(self.size) and self.size >= 1):
            raise ValueError(f"HostCrop: `size` must be an int >= 1, got {self.size!r}")
        if not (is_integer(self.views) and self.views >= 0):
            raise ValueError(
                f"HostCrop: `views` must be an int >= 0 (0: evaluation crop), got {self.views!r}"
            )
        for name, value, high in (("scale", self.scale, 1.0), ("ratio", self.ratio, math.inf)):
            ok = (
                isinstance(value, tuple | list)
                and len(value) == 2
                and all(is_real(v) for v in value)
                and 0 < value[0] <= value[1] <= high
            )
            if not ok:
                raise ValueError(
                    f"HostCrop: `{name}` must be (low, high) with 0 < low <= high"
                    f"{' <= 1' if high == 1.0 else ''}, got {value!r}"
                )

    def __call__(self, image: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        import PIL.Image

        image = np.asarray(image)
        if image.dtype != np.uint8:
            in_range = (
                np.issubdtype(image.dtype, np.integer)
                and image.size
                and 0 <= image.min()
                and image.max() <= 255
            )
            if not in_range:
                seen = f", values {image.min()}..{image.max()}" if image.size else ""
                raise ValueError(
                    "HostCrop: `image` must be uint8, or integers in [0, 255]; got dtype "
                    f"{image.dtype}{seen}"
                )
            image = image.astype(np.uint8)
        if image.ndim != 3 or image.shape[-1] not in (1, 3):
            raise ValueError(f"HostCrop: `image` must be [H, W, 1 or 3], got shape {image.shape}")
        channels = image.shape[-1]
        pil = PIL.Image.fromarray(image[..., 0] if channels == 1 else image)
        height, width = image.shape[:2]
        if self.views == 0:
            short = round(self.size / 0.875)
            s = short / min(height, width)
            h, w = max(self.size, round(height * s)), max(self.size, round(width * s))
            top, left = (h - self.size) // 2, (w - self.size) // 2
            resized = pil.resize((w, h), PIL.Image.BILINEAR)
            crop = resized.crop((left, top, left + self.size, top + self.size))
            return np.asarray(crop, np.uint8).reshape(self.size, self.size, channels)
        out = []
        for _ in range(self.views):
            top, left, h, w = crop_box_np(rng, height, width, self.scale, self.ratio)
            crop = pil.resize(
                (self.size, self.size), PIL.Image.BILINEAR, box=(left, top, left + w, top + h)
            )
            out.append(np.asarray(crop, np.uint8).reshape(self.size, self.size, channels))
        return np.stack(out)
