"""Linear evaluation on frozen features: DACL §5.1-5.2 / SimCLR's minibatch protocol."""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import optax
from jax.typing import ArrayLike

from jaxcl import _checks, optim
from jaxcl.evaluation import _inputs
from jaxcl.evaluation import _linear_model as lm

_OPTIMIZERS = ("lars", "adam", "sgd")


@functools.partial(
    jax.jit,
    static_argnames=(
        "num_classes",
        "epochs",
        "batch_size",
        "optimizer",
        "weight_decay",
        "momentum",
        "trust_ratio",
    ),
)
def _train(
    x,
    y,
    key,
    learning_rate,
    *,
    num_classes,
    epochs,
    batch_size,
    optimizer,
    weight_decay,
    momentum,
    trust_ratio,
):
    """``epochs`` shuffled passes of minibatch updates; returns (params, last-epoch mean loss)."""
    n, dim = x.shape
    steps_per_epoch = -(-n // batch_size)
    padded = steps_per_epoch * batch_size
    schedule = optim.warmup_cosine(
        peak=learning_rate, total_steps=epochs * steps_per_epoch, warmup_steps=0
    )
    tx = optim.make_optimizer(
        optimizer, schedule, weight_decay=weight_decay, momentum=momentum, trust_ratio=trust_ratio
    )
    params = lm.zeros_init(dim, num_classes)
    # The last batch of an epoch is filled up with weight-0 rows: every example is seen once per
    # epoch and every step has one static shape.
    real_row = (jnp.arange(padded) < n).astype(jnp.float32)

    def step(carry, batch):
        params, opt_state = carry
        idx, weight = batch
        loss, grads = jax.value_and_grad(lm.weighted_cross_entropy)(params, x[idx], y[idx], weight)
        updates, opt_state = tx.update(grads, opt_state, params)
        return (optax.apply_updates(params, updates), opt_state), loss * jnp.sum(weight)

    def epoch(carry, epoch_index):
        order = jax.random.permutation(jax.random.fold_in(key, epoch_index), n)
        order = jnp.pad(order, (0, padded - n))
        batches = (
            order.reshape(steps_per_epoch, batch_size),
            real_row.reshape(steps_per_epoch, batch_size),
        )
        carry, loss_sums = jax.lax.scan(step, carry, batches)
        return carry, jnp.sum(loss_sums) / n

    (params, _), epoch_losses = jax.lax.scan(epoch, (params, tx.init(params)), jnp.arange(epochs))
    return params, epoch_losses[-1]


def linear_probe(
    train_x: ArrayLike,
    train_y: ArrayLike,
    test_x: ArrayLike,
    test_y: ArrayLike,
    *,
    num_classes: int,
    epochs: int,
    batch_size: int,
    learning_rate: float,
    optimizer: str = "lars",
    weight_decay: float = 0.0,
    momentum: float = 0.9,
    standardize: bool = False,
    seed: int = 0,
    trust_ratio: bool = False,
) -> dict:
    """Top-1 accuracy of a linear softmax classifier trained on frozen features.

    The linear evaluation protocol of SimCLR as DACL §5.1-5.2 runs it: one linear layer with
    bias, softmax cross entropy, minibatch training for ``epochs`` passes over the training
    set (reshuffled every epoch, on the device), learning rate decayed by a cosine schedule
    without restarts and no warm-up, LARS by default (DACL's tabular setting: LARS, learning
    rate 0.1, batch 256, 200 epochs). The whole training is one compiled program (a scan over
    epochs of a scan over steps) and runs on the default device.

    "LARS" here is LARS as SimCLR's code applies it to the linear classifier: its optimiser
    leaves the layers it exempts from weight decay (batch norm, biases and the supervised head
    ``head_supervised``) out of the layer adaptation too, so the classifier's kernel takes
    plain momentum-SGD steps, without the trust ratio ``0.001 * |w| / |g|``. With
    ``trust_ratio=True`` the kernel takes it (jaxcl's probe before 2026-11-29): from zeros, a
    plain first step, then steps of ``lr * 0.001 * |w|``, a probe that can stay under-fitted
    (README, "Linear probe": the same checkpoints scored both ways, with the commands).

    The classifier starts from zeros: the objective is convex, and zeros leave the seed only
    the order of the examples. The last batch of each epoch is smaller when ``batch_size``
    does not divide the training set; every example is seen once per epoch.

    ``standardize=True`` z-scores every column with the mean and standard deviation of the
    training features (constant columns are only centred) and applies the same map to the
    test features; SimCLR's probe takes the features as they are (``False``, the default;
    jaxcl's image and tabular tasks z-scored them up to 2026-11-29, ``eval.linear_standardize``).
    Because the map is affine and invertible on the informative columns, the set of
    classifiers the probe can express is unchanged; what changes is the conditioning of the
    optimisation (and, with ``weight_decay > 0``, which weights the penalty favours), so a
    fixed learning rate works across encoders whose features differ in scale. Test statistics
    are never used.

    Args:
      train_x: ``[n_train, dim]`` frozen training features (any float dtype; trained in
        float32). Host NumPy or jax arrays.
      train_y: ``[n_train]`` integer labels in ``[0, num_classes)``.
      test_x: ``[n_test, dim]`` frozen test features.
      test_y: ``[n_test]`` integer labels in ``[0, num_classes)``.
      num_classes: number of classes (outputs of the linear layer).
      epochs: number of passes over the training set, > 0.
      batch_size: minibatch size, > 0; a batch size above ``n_train`` means full batch.
      learning_rate: peak learning rate of the cosine schedule, > 0.
      optimizer: ``'lars'`` (weight decay on the kernel only; the trust ratio as
        ``trust_ratio`` says), ``'sgd'`` or ``'adam'`` (AdamW when ``weight_decay > 0``), from
        :func:`jaxcl.optim.make_optimizer`.
      weight_decay: L2 coefficient on the kernel, >= 0 (DACL: 0 for linear evaluation).
      momentum: LARS/SGD momentum in [0, 1).
      standardize: z-score features with training statistics first (see above; ``False``,
        SimCLR's practice, by default).
      seed: seed of the per-epoch shuffles; equal seeds give equal results.
      trust_ratio: with ``'lars'``, whether the kernel takes LARS's trust ratio (see above;
        ``False``, SimCLR's practice, by default). Ignored by the other optimisers.

    Returns:
      ``{'test_top1', 'train_top1', 'final_loss'}``: accuracies in [0, 1] of the final
      classifier on the test and training sets, and the mean training cross entropy over
      the last epoch (as Python floats).

    Example:
      >>> import numpy as np
      >>> from jaxcl.evaluation import linear_probe
      >>> x = np.random.default_rng(0).normal(size=(200, 8)).astype(np.float32)
      >>> y = (x[:, 0] > 0).astype(np.int32)
      >>> out = linear_probe(x[:150], y[:150], x[150:], y[150:], num_classes=2, epochs=20,
      ...                    batch_size=32, learning_rate=1.0)
      >>> out["test_top1"] > 0.9
      True

    References:
      Verma et al., "Towards Domain-Agnostic Contrastive Learning" (DACL), ICML 2021, §5.1-5.2;
      Chen et al., "A Simple Framework for Contrastive Learning of Visual Representations"
      (SimCLR), ICML 2020, Appendix B.6; You et al., "Large Batch Training of Convolutional
      Networks" (LARS), 2017; Loshchilov & Hutter, "SGDR", ICLR 2017.
    """
    fn = "linear_probe"
    train_x = _inputs.features(fn, "train_x", train_x)
    test_x = _inputs.features(fn, "test_x", test_x)
    _inputs.same_dim(fn, "train_x", train_x, "test_x", test_x)
    num_classes = _inputs.count(fn, "num_classes", num_classes)
    n_train, n_test = train_x.shape[0], test_x.shape[0]
    train_y = _inputs.labels(
        fn, "train_y", train_y, num_rows=n_train, rows_name="train_x", num_classes=num_classes
    )
    test_y = _inputs.labels(
        fn, "test_y", test_y, num_rows=n_test, rows_name="test_x", num_classes=num_classes
    )
    epochs = _inputs.count(fn, "epochs", epochs)
    batch_size = _inputs.count(fn, "batch_size", batch_size)
    learning_rate = _inputs.real(fn, "learning_rate", learning_rate, allow_zero=False)
    _checks.one_of(fn, "optimizer", optimizer, _OPTIMIZERS)
    weight_decay = _inputs.real(fn, "weight_decay", weight_decay, allow_zero=True)
    momentum = _inputs.real(fn, "momentum", momentum, allow_zero=True)
    _checks.in_range(fn, "momentum", momentum, 0.0, 1.0, high_open=True)
    seed = _inputs.seed(fn, seed)
    for name, value in (("trust_ratio", trust_ratio), ("standardize", standardize)):
        if not isinstance(value, bool):
            _checks.fail(fn, f"`{name}` must be True or False, got {value!r}")

    if standardize:
        train_x, test_x = lm.standardize(train_x, test_x)
    train_y, test_y = jnp.asarray(train_y), jnp.asarray(test_y)
    params, final_loss = _train(
        train_x,
        train_y,
        jax.random.key(seed),
        jnp.float32(learning_rate),
        num_classes=num_classes,
        epochs=epochs,
        batch_size=min(batch_size, n_train),
        optimizer=optimizer,
        weight_decay=weight_decay,
        momentum=momentum,
        trust_ratio=trust_ratio and optimizer == "lars",
    )
    return {
        "test_top1": lm.accuracy(params, test_x, test_y),
        "train_top1": lm.accuracy(params, train_x, train_y),
        "final_loss": float(final_loss),
    }
