"""ESCo's controlled synthetic data (ESCo §5.1, Fig. 2, App. B.1): two views that share a
label-deciding hidden vector and differ in a superfluous one."""

from __future__ import annotations

import dataclasses
import numbers

import numpy as np

# App. B.1: h, s, s^A, s^B are 64-dimensional; the features come from a fixed random MLP
# 128-256-256-1024 of [h, s]; the label from a fixed random MLP 64-256-8 of h (argmax).
LATENT_DIM = 64
HIDDEN = (256, 256)
LABEL_HIDDEN = 256
ACTIVATIONS = ("softmax", "relu", "tanh")


@dataclasses.dataclass(frozen=True)
class PairedViews:
    """Examples ``x`` with two views each and labels (ESCo's synthetic data).

    Attributes:
      name: the data set's name.
      x: ``[n, num_features]`` float32, the examples themselves (what evaluation embeds).
      x_a: ``[n, num_features]`` float32, view A of each example (training sees the views).
      x_b: ``[n, num_features]`` float32, view B.
      y: ``[n]`` int32 labels in ``[0, num_classes)``.
      num_classes: number of classes.
    """

    name: str
    x: np.ndarray
    x_a: np.ndarray
    x_b: np.ndarray
    y: np.ndarray
    num_classes: int

    @property
    def num_features(self) -> int:
        return self.x.shape[1]


def _check_int(name: str, value, low: int) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < low:
        raise ValueError(f"esco_synthetic: {name} = {value!r}: expected an integer >= {low}")
    return int(value)


def _linear(rng: np.random.Generator, fan_in: int, fan_out: int):
    """PyTorch's ``nn.Linear`` initialisation: weights and bias ~ U(-1/sqrt(fan_in), ...)."""
    bound = 1.0 / np.sqrt(fan_in)
    return rng.uniform(-bound, bound, (fan_in, fan_out)), rng.uniform(-bound, bound, fan_out)


def _activate(x: np.ndarray, activation: str) -> np.ndarray:
    if activation == "relu":
        return np.maximum(x, 0.0)
    if activation == "tanh":
        return np.tanh(x)
    x = x - x.max(axis=-1, keepdims=True)
    e = np.exp(x)
    return e / e.sum(axis=-1, keepdims=True)


def _mlp(layers, x: np.ndarray, activation: str, *, last: bool, hidden: str | None = None):
    """``layers`` applied to ``x``: ``hidden`` (default ``activation``) after every hidden
    layer, ``activation`` after the last one if ``last``."""
    for i, (w, b) in enumerate(layers):
        x = x @ w + b
        if i < len(layers) - 1:
            x = _activate(x, hidden or activation)
        elif last:
            x = _activate(x, activation)
    return x


def esco_synthetic(
    num_samples: int = 4000,
    *,
    seed: int = 0,
    num_features: int = 1024,
    num_classes: int = 8,
    activation: str = "softmax",
    label_activation: str = "relu",
    standardize: bool = True,
    hidden_activation: str | None = None,
) -> PairedViews:
    """ESCo's synthetic multi-view data set (§5.1, Fig. 2, App. B.1).

    For every example, ``h, s, s^A, s^B ~ N(0, I_64)``. One fixed random MLP (widths
    128-256-256-``num_features``, ``hidden_activation`` (default ``activation``) after the
    hidden layers, ``activation`` after the last) maps ``[h, s]``,
    ``[h, s^A]`` and ``[h, s^B]`` to ``x``, ``x^A`` and ``x^B``; another (64-256-
    ``num_classes``, ``label_activation`` on its hidden layer) maps ``h`` to logits whose
    argmax is the label. The views share only ``h``, the variable that decides the label, so
    what they have in common is exactly the task-relevant information, and ``s`` is the
    superfluous part that ESCo's objective is meant to discard. Contrastive training sees
    only the views; evaluation embeds ``x``.

    Our readings, where App. B.1 leaves room:

    * Feature width: §5.1 says "2048 input feature dimension", App. B.1's MLPs (generator
      output and encoder input) say 1024. We take 1024 (``num_features``; 2048 is a
      keyword away).
    * Activations: App. B.1 names softmax for the feature MLP ("softmax activation to
      generate the input features"). By default we apply it after every layer;
      ``hidden_activation='relu'`` applies it to the output only, ReLU on the hidden
      layers (the reading ESCo's Table 1 configs use). It names none for the
      label MLP; softmax there makes the labels depend on the bias almost alone (with seed
      0 only 2 of the 8 classes occur: 478 and 3522 examples), so we use ReLU, with which
      all 8 classes occur.
    * Weights: PyTorch's default ``nn.Linear`` initialisation, U(-1/sqrt(fan_in),
      1/sqrt(fan_in)) for weights and biases.
    * Scale: softmax outputs of 1024 entries are ~1e-3. With softmax after every layer the
      examples differ from each other by only ~3e-6 of that (the median over columns of
      std / mean; ~3e-9 in absolute terms): fed unscaled, a float32 encoder's gradient is
      rounding noise (``experiments/esco/synthetic_gradient_check.py``), and the training
      task warns. With ReLU hidden layers they differ by ~7%. With ``standardize`` every
      column is centred and scaled by its mean and standard deviation over ``x``, ``x^A``
      and ``x^B`` together (computed in float64 before the cast to float32; a monotone
      per-column map, the same for the three). ESCo's Table 1 configs
      (:mod:`jaxcl.configs.esco_synthetic`) use ReLU hidden layers, unscaled.
    * Size: 4000 examples (§5.1; App. B.1 also mentions 2048 triples).

    With the defaults (seed 0), a logistic regression on ``h`` itself reaches ~69% in
    10-fold cross-validation and one on ``x`` ~58% (scikit-learn, C = 1); the label is
    decided by ``h`` through a nonlinear map, and ``x`` carries ``s`` as well.

    Args:
      num_samples: number of examples, >= 1.
      seed: seeds the fixed MLPs and the samples alike.
      num_features: width of ``x`` and its views.
      num_classes: number of label classes, >= 2 (labels that never win an argmax are
        simply absent).
      activation: the feature MLP's activation: ``'softmax'``, ``'relu'`` or ``'tanh'``.
      label_activation: the label MLP's hidden activation, one of the same.
      standardize: scale each column to zero mean and unit variance (see above).
      hidden_activation: the feature MLP's activation after its two hidden layers, one of
        the same; None (default) uses ``activation`` there too. ``'relu'`` with
        ``activation='softmax'`` is the reading "softmax generates the input features":
        softmax only on the output.

    Returns:
      A :class:`PairedViews` named ``"esco_synthetic"``.

    Example:
      >>> from jaxcl.data import esco_synthetic
      >>> ds = esco_synthetic(100, num_features=32)
      >>> ds.x.shape, ds.x_a.shape, ds.y.shape, ds.num_classes
      ((100, 32), (100, 32), (100,), 8)
    """
    num_samples = _check_int("num_samples", num_samples, 1)
    num_features = _check_int("num_features", num_features, 1)
    num_classes = _check_int("num_classes", num_classes, 2)
    seed = _check_int("seed", seed, 0)
    named = [("activation", activation), ("label_activation", label_activation)]
    if hidden_activation is not None:
        named.append(("hidden_activation", hidden_activation))
    for name, value in named:
        if value not in ACTIVATIONS:
            raise ValueError(
                f"esco_synthetic: {name} = {value!r}: expected one of {list(ACTIVATIONS)}"
            )
    rng = np.random.default_rng(seed)
    widths = (2 * LATENT_DIM, *HIDDEN, num_features)
    features = [_linear(rng, a, b) for a, b in zip(widths[:-1], widths[1:], strict=True)]
    labeller = [_linear(rng, LATENT_DIM, LABEL_HIDDEN), _linear(rng, LABEL_HIDDEN, num_classes)]
    h, s, s_a, s_b = rng.standard_normal((4, num_samples, LATENT_DIM))
    hz = [np.concatenate([h, z], axis=1) for z in (s, s_a, s_b)]
    views = [_mlp(features, v, activation, last=True, hidden=hidden_activation) for v in hz]
    y = np.argmax(_mlp(labeller, h, label_activation, last=False), axis=1).astype(np.int32)
    if standardize:
        stacked = np.concatenate(views)
        mean, std = stacked.mean(axis=0), stacked.std(axis=0)
        std = np.where(std > 0, std, 1.0)
        views = [(v - mean) / std for v in views]
    x, x_a, x_b = (v.astype(np.float32) for v in views)
    return PairedViews("esco_synthetic", x, x_a, x_b, y, num_classes)
