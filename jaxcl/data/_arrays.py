"""The in-memory form of a tabular data set, and the preprocessing that produced it.

Every tabular loader in ``jaxcl.data`` returns an :class:`ArrayDataset`: host-side NumPy
arrays (``float32`` features, ``int32`` labels) that the trainer shards across devices
itself. The preprocessing is recorded next to the arrays as a :class:`FeatureTransform`
(permutation, scale, training-split statistics), so the same numbers can be reproduced
or applied to new raw rows.
"""

from __future__ import annotations

import dataclasses

import numpy as np

# A feature whose training-split standard deviation is below this (in scaled units) is only
# centred, not divided: dividing by a tiny std would blow up any test value that differs
# from the constant. This is scikit-learn's StandardScaler convention (scale 1 for
# near-constant features).
MIN_STD = 1e-6


@dataclasses.dataclass(frozen=True, eq=False)
class FeatureTransform:
    """The map from raw rows to the features stored in an :class:`ArrayDataset`.

    ``transform(raw) = ((raw.reshape(n, -1)[:, permutation] * scale) - mean) / std``, with each
    step skipped when its field is ``None``. ``mean`` and ``std`` are indexed like the
    *permuted* columns and come from the training split only.

    Attributes:
      scale: multiplier applied to the raw values (``1/255`` for 8-bit pixels, so the
        unstandardised features lie in ``[0, 1]``).
      permutation: ``[num_features]`` int64 column order (``out[:, j] = raw[:, permutation[j]]``),
        or ``None`` for the identity.
      mean: ``[num_features]`` float64 training-split mean of the scaled features, or ``None``.
      std: ``[num_features]`` float64 divisor; features whose training std was below
        ``MIN_STD`` (constant pixels) have ``std == 1``, so they are only centred.
      permutation_seed: the seed that drew ``permutation`` (``None`` when not permuted).
    """

    scale: float
    permutation: np.ndarray | None = None
    mean: np.ndarray | None = None
    std: np.ndarray | None = None
    permutation_seed: int | None = None

    def __call__(self, raw: np.ndarray) -> np.ndarray:
        """Applies the transform to raw rows.

        Args:
          raw: ``[n, ...]`` raw values (e.g. ``uint8`` images); trailing axes are flattened
            in C order.

        Returns:
          ``[n, num_features]`` float32 features.
        """
        x = np.asarray(raw).reshape(len(raw), -1)
        if self.permutation is not None:
            if x.shape[1] != len(self.permutation):
                raise ValueError(
                    f"FeatureTransform: `raw` has {x.shape[1]} features per row, the permutation "
                    f"has {len(self.permutation)}"
                )
            x = x[:, self.permutation]
        x = x.astype(np.float32) * np.float32(self.scale)
        if self.mean is not None:
            if x.shape[1] != len(self.mean):
                raise ValueError(
                    f"FeatureTransform: `raw` has {x.shape[1]} features per row, the transform "
                    f"was fitted on {len(self.mean)}"
                )
            x -= self.mean.astype(np.float32)
            x /= self.std.astype(np.float32)
        return x


def fit_feature_transform(
    train_raw: np.ndarray,
    *,
    scale: float,
    permutation_seed: int | None,
    standardize: bool,
) -> FeatureTransform:
    """Fits a :class:`FeatureTransform` on the training split's raw rows.

    Args:
      train_raw: ``[n_train, ...]`` raw training values.
      scale: multiplier for the raw values.
      permutation_seed: seed of the fixed column permutation
        (``np.random.default_rng(seed).permutation(num_features)``); ``None`` keeps the order.
      standardize: whether to subtract the training mean and divide by the training std.

    Returns:
      The fitted transform.
    """
    num_features = int(np.prod(train_raw.shape[1:]))
    permutation = None
    if permutation_seed is not None:
        permutation = np.random.default_rng(permutation_seed).permutation(num_features)
    transform = FeatureTransform(
        scale=scale, permutation=permutation, permutation_seed=permutation_seed
    )
    if not standardize:
        return transform
    x = transform(train_raw)
    mean = x.mean(axis=0, dtype=np.float64)
    std = x.std(axis=0, dtype=np.float64)
    std = np.where(std < MIN_STD, 1.0, std)
    return dataclasses.replace(transform, mean=mean, std=std)


@dataclasses.dataclass(frozen=True, eq=False)
class ArrayDataset:
    """A labelled tabular data set held in host memory.

    Attributes:
      name: the data set's name (e.g. ``"fashion_mnist"``).
      train_x: ``[n_train, num_features]`` float32 features.
      train_y: ``[n_train]`` int32 labels in ``[0, num_classes)``.
      test_x: ``[n_test, num_features]`` float32 features.
      test_y: ``[n_test]`` int32 labels in ``[0, num_classes)``.
      num_classes: number of classes.
      transform: how the features were made from the raw data (permutation, scale,
        training statistics), or ``None`` when unknown.

    Example:
      >>> import numpy as np
      >>> from jaxcl.data import ArrayDataset
      >>> ds = ArrayDataset(
      ...     name="toy",
      ...     train_x=np.zeros((4, 3), np.float32), train_y=np.array([0, 1, 0, 1], np.int32),
      ...     test_x=np.zeros((2, 3), np.float32), test_y=np.array([1, 0], np.int32),
      ...     num_classes=2,
      ... )
      >>> ds.num_features
      3
    """

    name: str
    train_x: np.ndarray
    train_y: np.ndarray
    test_x: np.ndarray
    test_y: np.ndarray
    num_classes: int
    transform: FeatureTransform | None = None

    def __post_init__(self):
        where = f"ArrayDataset({self.name!r})"
        for split in ("train", "test"):
            x, y = getattr(self, f"{split}_x"), getattr(self, f"{split}_y")
            if not isinstance(x, np.ndarray) or x.dtype != np.float32 or x.ndim != 2:
                raise ValueError(
                    f"{where}: `{split}_x` must be a float32 NumPy array [n, num_features], got "
                    f"{_describe(x)}"
                )
            if not isinstance(y, np.ndarray) or y.dtype != np.int32 or y.ndim != 1:
                raise ValueError(
                    f"{where}: `{split}_y` must be an int32 NumPy array [n], got {_describe(y)}"
                )
            if len(x) != len(y):
                raise ValueError(
                    f"{where}: `{split}_x` has {len(x)} rows but `{split}_y` has {len(y)} labels"
                )
        if self.train_x.shape[1] != self.test_x.shape[1]:
            raise ValueError(
                f"{where}: train has {self.train_x.shape[1]} features, test has "
                f"{self.test_x.shape[1]}"
            )
        if isinstance(self.num_classes, bool) or not isinstance(self.num_classes, int):
            raise ValueError(f"{where}: `num_classes` must be an int, got {self.num_classes!r}")
        for split in ("train", "test"):
            y = getattr(self, f"{split}_y")
            if y.size and (y.min() < 0 or y.max() >= self.num_classes):
                raise ValueError(
                    f"{where}: `{split}_y` has labels in [{y.min()}, {y.max()}], outside "
                    f"[0, num_classes={self.num_classes})"
                )

    @property
    def num_features(self) -> int:
        """Number of feature columns."""
        return self.train_x.shape[1]


def nonnegative_int(fn: str, name: str, value) -> int:
    """Checks that ``value`` is an integer >= 0 (not a bool); returns it as an int."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 0:
        raise ValueError(f"{fn}: `{name}` must be an int >= 0, got {value!r}")
    return int(value)


def _describe(a) -> str:
    if isinstance(a, np.ndarray):
        return f"dtype {a.dtype}, shape {a.shape}"
    return type(a).__name__


def tabular_from_images(
    name: str,
    train_images: np.ndarray,
    train_labels: np.ndarray,
    test_images: np.ndarray,
    test_labels: np.ndarray,
    *,
    num_classes: int,
    permute: bool,
    permutation_seed: int,
    standardize: bool,
) -> ArrayDataset:
    """DACL's tabular proxy (§5.1): uint8 images flattened, column-permuted, scaled, standardised.

    The idx and tfds readers both end here, so the same images give the same arrays.
    """
    for what, images in (("train", train_images), ("test", test_images)):
        if images.dtype != np.uint8:
            raise ValueError(f"{name}: {what} images must be uint8, got {images.dtype}")
    if train_images.shape[1:] != test_images.shape[1:]:
        raise ValueError(
            f"{name}: train images have shape {train_images.shape[1:]}, test images "
            f"{test_images.shape[1:]}; both splits must hold images of one shape"
        )
    transform = fit_feature_transform(
        train_images,
        scale=1.0 / 255.0,
        permutation_seed=permutation_seed if permute else None,
        standardize=standardize,
    )
    return ArrayDataset(
        name=name,
        train_x=transform(train_images),
        train_y=np.asarray(train_labels, dtype=np.int32),
        test_x=transform(test_images),
        test_y=np.asarray(test_labels, dtype=np.int32),
        num_classes=num_classes,
        transform=transform,
    )
