"""scikit-learn's bundled digits as a small tabular data set (the quickstart data set)."""

from __future__ import annotations

import numbers

import numpy as np

from jaxcl.data._arrays import ArrayDataset, fit_feature_transform, nonnegative_int

# Digits pixels are integers in [0, 16].
_DIGITS_MAX = 16.0


def load_digits_tabular(
    *,
    test_fraction: float = 0.2,
    seed: int = 0,
    standardize: bool = True,
) -> ArrayDataset:
    """Loads scikit-learn's digits (8x8 images as 64 columns) with a stratified split.

    The data ship inside scikit-learn, so this works on a fresh machine with no download.
    Pixels (integers in ``[0, 16]``) are scaled to ``[0, 1]``, then standardised per column
    with the training split's mean and standard deviation; columns that are constant in the
    training split (e.g. corner pixels) are only centred, so they become 0.

    Args:
      test_fraction: fraction of the 1797 examples held out, in ``(0, 1)``; the split keeps
        each class's share (``sklearn.model_selection.train_test_split(stratify=y)``).
      seed: seed of the split.
      standardize: whether to standardise with training statistics; otherwise features are
        the scaled pixels in ``[0, 1]``.

    Returns:
      An :class:`ArrayDataset` named ``"digits"``: 64 float32 features, int32 labels,
      10 classes; with the default ``test_fraction=0.2``, 1437 train and 360 test rows.

    Example:
      >>> from jaxcl.data import load_digits_tabular
      >>> ds = load_digits_tabular()
      >>> ds.train_x.shape, ds.test_x.shape, ds.num_classes
      ((1437, 64), (360, 64), 10)
    """
    fn = "load_digits_tabular"
    if (
        isinstance(test_fraction, bool)
        or not isinstance(test_fraction, numbers.Real)
        or not 0.0 < test_fraction < 1.0
    ):
        raise ValueError(f"{fn}: `test_fraction` must lie in (0, 1), got {test_fraction!r}")
    seed = nonnegative_int(fn, "seed", seed)

    # Imported here so that `import jaxcl.data` stays light.
    from sklearn.datasets import load_digits
    from sklearn.model_selection import train_test_split

    digits = load_digits()
    x = digits.data.astype(np.uint8)  # exact: the values are integers 0..16
    y = digits.target.astype(np.int32)
    train_x, test_x, train_y, test_y = train_test_split(
        x, y, test_size=test_fraction, random_state=seed, stratify=y
    )
    transform = fit_feature_transform(
        train_x, scale=1.0 / _DIGITS_MAX, permutation_seed=None, standardize=standardize
    )
    return ArrayDataset(
        name="digits",
        train_x=transform(train_x),
        train_y=train_y,
        test_x=transform(test_x),
        test_y=test_y,
        num_classes=int(len(digits.target_names)),
        transform=transform,
    )
