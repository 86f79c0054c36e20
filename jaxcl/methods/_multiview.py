"""Views and contrast sets of the view-specific methods (CMC's layout: MetAug, its ablation,
SimCLR on split encoders); see :mod:`jaxcl.methods._metaug`."""

from __future__ import annotations

import itertools

import jax
import jax.numpy as jnp

from jaxcl import augment

# config.method.views -> the channels of each view.
VIEWS = {"lab": (1, 2), "lab_rgb": (1, 2, 3), "gray": (1, 1)}


def split_views(images, views: str) -> list[jax.Array]:
    """The colour views of ``[B, H, W, C]`` images in ``[0, 1]`` (no augmentation)."""
    if views == "gray":
        g = 2.0 * images - 1.0
        return [g, g]
    light, ab = augment.lab_views(images)
    return [light, ab] if views == "lab" else [light, ab, 2.0 * images - 1.0]


def cmc_views(key, x, *, views: str, crop_min_scale: float) -> list[jax.Array]:
    """CMC's augmentation (random resized crop, flip) and the colour views of a batch.

    Where the host cropped (images of varying size: ``x`` is ``[B, crops, H, W, C]``, the
    crops random resized ones of the whole image), its crops stand for the device's: the
    gray views take one crop each, the colour views all come from the first."""
    host_cropped = x.ndim == 5
    x = augment.to_unit_range(x)
    size = x.shape[2] if host_cropped else x.shape[1]

    def crop(k, image):
        k_crop, k_flip = jax.random.split(k)
        if not host_cropped:
            scale = (crop_min_scale, 1.0)
            image = augment.random_resized_crop(k_crop, image, size=size, scale=scale)
        return augment.random_flip(k_flip, image)

    def crops(v):  # the images view v is cropped from
        return x[:, v % x.shape[1]] if host_cropped else x

    if views == "gray":
        keys = jax.random.split(key, (2, x.shape[0]))
        return [2.0 * jax.vmap(crop)(keys[v], crops(v)) - 1.0 for v in range(2)]
    return split_views(jax.vmap(crop)(jax.random.split(key, x.shape[0]), crops(0)), views)


def unit_similarity(a, b):
    """``d(a_i, b_k) = (cos + 1) / 2`` of l2-normalised rows: ``[N, M]``."""
    return (a @ b.T + 1.0) / 2.0


def contrast_sets(features, augmented, queues):
    """The similarity sets of one set of per-view features (module docstring).

    Args:
      features: ``[B, D]`` l2-normalised features per view.
      augmented: per view, whether its features are the generator's.
      queues: per view, ``(keys [K, D], valid [K])``: its past original features.

    Returns:
      ``dict`` of ``pos [B, P]``, ``neg [B, Q]``, ``neg_where [B, Q]`` and, for R_sigma,
      ``pos_aug [P]`` / ``neg_aug [Q]``: which columns pair an augmented feature with an
      original one.
    """
    batch = features[0].shape[0]
    off_diagonal = ~jnp.eye(batch, dtype=bool)
    pos, pos_aug, neg, neg_where, neg_aug = [], [], [], [], []
    for j, k in itertools.permutations(range(len(features)), 2):
        mixed = augmented[j] != augmented[k]
        pos.append((jnp.sum(features[j] * features[k], axis=-1, keepdims=True) + 1.0) / 2.0)
        pos_aug.append(mixed)
        neg.append(unit_similarity(features[j], features[k]))
        neg_where.append(off_diagonal)
        neg_aug.extend([mixed] * batch)
        keys, valid = queues[k]
        neg.append(
            unit_similarity(features[j], jax.lax.stop_gradient(keys).astype(features[j].dtype))
        )
        neg_where.append(jnp.broadcast_to(valid[None, :], (batch, valid.shape[0])))
        neg_aug.extend([augmented[j]] * valid.shape[0])
    return {
        "pos": jnp.concatenate(pos, axis=1),
        "neg": jnp.concatenate(neg, axis=1),
        "neg_where": jnp.concatenate(neg_where, axis=1),
        "pos_aug": jnp.asarray(pos_aug, bool),
        "neg_aug": jnp.asarray(neg_aug, bool),
    }
