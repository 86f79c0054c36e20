"""Benchmark: one SimCLR training step of ResNet-18 on 32x32 images, jaxcl against PyTorch.

The step, on both sides: two SimCLR views of every image of a uint8 batch (random resized crop
of area 0.08-1 and ratio 3/4-4/3 back to 32x32, horizontal flip, colour jitter of strength
0.5 (brightness, contrast, saturation 0.4, hue 0.1, random order) with p 0.8, grayscale with
p 0.2, no blur: SimCLR's CIFAR setting), both views through ResNet-18 (CIFAR stem: 3x3
convolution of stride 1, no max pool) and the projection head as one batch of 2N, NT-Xent
at temperature 0.5 over the 2N views, one LARS update; float32. The augmentation is part of
the timed step on both sides.

jaxcl's side is the trainer's own step: ``jaxcl.methods.SimCLR`` built from
``jaxcl.training.base_config('cifar10', 'simclr')`` with ``model.resnet_depth = 18`` (width
64, CIFAR stem) and a head of ``model.head_depth = 2`` layers, Linear(512, 512) -> BN -> ReLU
-> Linear(512, 128) -> BN (bias-free linear layers, as jaxcl's ``projection_head``), the
default step (``make_default_train_step``) jitted with ``donate_argnums=0``, LARS from the
method's ``optimizer`` (``config.optim``: lr 0.1 at the end of warm-up, momentum 0.9, weight
decay 1e-6 and trust ratio 0.001 on kernels only) on the trainer's warm-up + cosine schedule.
The views are drawn inside the step, on the device (``jaxcl.methods._images.simclr_views``:
one key per image and view, vmapped).

PyTorch's side is written here: ``torchvision.models.resnet18`` with ``conv1`` replaced by a
3x3 stride-1 bias-free convolution, ``maxpool`` and ``fc`` by ``nn.Identity``; the same head
(bias-free ``nn.Linear``, ``BatchNorm1d``); the views by ``torchvision.transforms.v2`` applied
image by image to the float batch (``RandomResizedCrop(32, scale=(0.08, 1))``,
``RandomHorizontalFlip()``, ``RandomApply([ColorJitter(0.4, 0.4, 0.4, 0.1)], p=0.8)``,
``RandomGrayscale(0.2)``), as a PyTorch user's dataset would apply them (here in the step,
not in DataLoader workers, as jaxcl's are in its step; the time they take is reported on its
own); NT-Xent as SimCLR's; a LARS that is ``optax.lars`` with jaxcl's masks (the one of
``train_step_benchmark.py``). ``torch.set_num_threads(os.cpu_count())``
(``--torch-threads``). With ``--torch-compile`` (on by default, off in ``--quick``) the
PyTorch step is also timed with the model and the loss under ``torch.compile`` (forward and,
through AOTAutograd, backward); the augmentation and the optimiser stay eager.

Same loss, checked first: the PyTorch model loads jaxcl's initial weights (kernels
HWIO -> OIHW, linear kernels transposed, batch-norm scale, bias and running statistics) and
the two views jaxcl's first step draws (``simclr_views`` with that step's key, computed
outside the step), bypassing its own augmentation, and makes one update. The script reports
the two losses and their difference (jaxcl's step's loss, and the loss of a jitted forward
pass of jaxcl's model on the exported views), the largest differences of the encoder's
features and of the embeddings (absolute, and relative to their spread over the rows), the
gradient norms, the worst tensor's difference of the updated weights relative to the size
of the update, and the parameter gradients on those views (float32 at full precision on
both sides, relative l2; with ``--precision bfloat16`` also each side's bfloat16 gradient
against its own float32 one). jaxcl computes its side of the check after its timed steps,
from a host copy of its initial state, so that its device peak is the step's own; PyTorch
checks before its timing.

Each side runs in its own subprocess (so neither framework's thread pool disturbs the
other, and each peak RSS is its own): warm-up steps, then ``--steps`` timed steps, each
waited for; images/s = batch / median step time. The peak RSS compared is jaxcl's through
its timed steps (compilation included), before its checks compile and run float32 programs
of their own (its whole-process peak is saved and printed beside it), against PyTorch's
through its eager steps, its check (one float32 forward and backward, as a step) included.

Target (issue): at batch 512, jaxcl's images/s at least 1.3x PyTorch eager's and at least
1x PyTorch's under ``torch.compile``, on the same CPU.

On a GPU (PyTorch's ``--torch-device`` is ``auto``: CUDA where PyTorch sees it; jaxcl takes
JAX's default device): ``--precision bfloat16`` computes jaxcl's model in bfloat16
(``model.compute_dtype``) and runs PyTorch's model and loss under ``torch.autocast`` (AMP);
parameters, LARS and batch-norm statistics stay float32 on both sides. PyTorch's model and
batches are ``channels_last`` there (cuDNN's fast layout). Its views are still made image by
image, on the GPU; since that costs it more than its model does, the PyTorch step's parts
are each waited for and its update alone (model, loss, LARS on views made beforehand, as if
by loader processes) is a row of its own. The same-loss check stays float32 on both sides
(TF32 off in PyTorch for it); jaxcl's loss in the step's precision is reported beside it.
Memory is the peak of each side's device allocator. ``--depth 50`` times ResNet-50 (CIFAR
stem, SimCLR's head of 2048). Target on a GPU: ResNet-18 at batch 512 in bfloat16, jaxcl's
images/s at least 1.3x PyTorch AMP's. ``run_gpu.sh`` runs the GPU rows of every benchmark.

XLA:CPU's convolutions: jaxcl's side runs them with Eigen, as jaxcl's trainer does
(``config.train.eigen_cpu_convolutions``, :func:`jaxcl.training.eigen_cpu_convolutions`);
``--cpu-convolutions ynnpack`` keeps jaxlib 0.10's default, YNNPACK (figures saved with a
``_ynnpack`` suffix).

Time on a quiet machine: on cores shared with other jobs PyTorch's OpenMP threads wait for
each other at every operation, which says nothing about either library. ``--torch-threads``
sets PyTorch's thread count (default: all cores); jaxcl uses XLA's default (all cores).

torchvision: where the installed torchvision's C++ operators cannot load (a CUDA build of
torchvision beside a CPU build of torch: torchvision 0.28 then fails at import, registering
fake kernels of ``torchvision::nms`` and ``qnms``), the PyTorch worker declares those two
operators' schemas (no kernels) and imports it: ResNet-18 and the v2 transforms are Python
on torch's own operators and do not use them. The record says whether the C++ operators
loaded.

Usage (from the repository root; ``pip install -e '.[bench]'`` and torchvision for torch):

  python experiments/benchmarks/simclr_step_benchmark.py                # batch 512, 5 steps
  python experiments/benchmarks/simclr_step_benchmark.py --steps 10 --warmup 2
  python experiments/benchmarks/simclr_step_benchmark.py --quick        # batch 32, minutes
  python experiments/benchmarks/simclr_step_benchmark.py --precision bfloat16 --depth 50 \
      --batch 256 --no-torch-compile                                     # on a GPU

Writes simclr_step_benchmark[_quick][_host_default][_gpu][_r50][_bf16].json and .png to
--out (default experiments/benchmarks/results).
"""

from __future__ import annotations

import argparse
import functools
import json
import pathlib
import statistics
import time

import _common  # experiments/benchmarks/_common.py: the script's folder is on sys.path
from _common import GIB

DEFAULT_OUT = pathlib.Path(__file__).resolve().parent / "results"
IMAGE_SIZE, CHANNELS = 32, 3
CIFAR10_TRAIN = 50_000  # images per epoch: the schedule's steps per epoch at this batch
HEAD_DEPTH, EMBED_DIM = 2, 128
# ResNet depth -> (torchvision's constructor, blocks per stage, inner names of a block, width
# of the encoder's features = the head's hidden width, as SimCLR's).
RESNETS = {
    18: ("resnet18", (2, 2, 2, 2), ("conv1", "bn1", "conv2", "bn2"), 512),
    50: ("resnet50", (3, 4, 6, 3), ("conv1", "bn1", "conv2", "bn2", "conv3", "bn3"), 2048),
}
COLOR_STRENGTH, BLUR_P, CROP_MIN_SCALE, TEMPERATURE = 0.5, 0.0, 0.08, 0.5
TARGET_VS_EAGER, TARGET_VS_COMPILE, TARGET_BATCH = 1.3, 1.0, 512


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch", type=int, default=512, help="images per step (2x views)")
    parser.add_argument("--steps", type=int, default=5, help="timed steps per side")
    parser.add_argument("--warmup", type=int, default=1, help="untimed steps after compiling")
    parser.add_argument(
        "--torch-compile",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="also time the PyTorch step under torch.compile (default: on, off with --quick)",
    )
    parser.add_argument(
        "--cpu-convolutions",
        choices=["eigen", "ynnpack"],
        default="eigen",
        help="XLA:CPU's convolution library for jaxcl: eigen (default; what the trainer sets, "
        "jaxcl.training.eigen_cpu_convolutions) or ynnpack (jaxlib 0.10's own default)",
    )
    parser.add_argument(
        "--depth", type=int, choices=sorted(RESNETS), default=18, help="ResNet-18 or ResNet-50"
    )
    parser.add_argument(
        "--precision",
        choices=["float32", "bfloat16"],
        default="float32",
        help="bfloat16: jaxcl's model.compute_dtype, PyTorch's autocast (AMP) of the model "
        "and the loss; parameters, optimiser and batch-norm statistics stay float32 on both",
    )
    parser.add_argument(
        "--torch-device",
        choices=["auto", "cpu", "cuda"],
        default="auto",
        help="PyTorch's device (auto: cuda where PyTorch sees one); jaxcl uses JAX's default",
    )
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=pathlib.Path, default=DEFAULT_OUT)
    _common.add_worker_flags(parser)
    parser.add_argument("--quick", action="store_true", help="batch 32, 2 steps, no compile")
    args = parser.parse_args()
    if args.quick:
        args.batch, args.steps, args.warmup = 32, 2, 1
    if args.torch_compile is None:
        args.torch_compile = not args.quick
    return args


def summarize(seconds: list[float], batch: int) -> dict:
    median = statistics.median(seconds)
    return {
        "median_s": median,
        "min_s": min(seconds),
        "all_s": seconds,
        "images_per_s": batch / median,
    }


# --------------------------------------------------------------------------------------------
# jaxcl


def jax_worker(args) -> dict:
    import dataclasses

    import jax
    import jax.numpy as jnp
    import numpy as np
    import optax
    from flax import nnx

    from jaxcl import losses, methods, models, optim, training
    from jaxcl.methods import _images

    rss_after_imports = _common.peak_rss_bytes()
    # As the trainer (config.train.eigen_cpu_convolutions), before JAX's backends exist.
    eigen = args.cpu_convolutions == "eigen" and training.eigen_cpu_convolutions()
    config = training.base_config("cifar10", "simclr", optimizer="lars")
    config.model.update(
        resnet_depth=args.depth,
        width_multiplier=1,
        base_width=0,  # 64 x width_multiplier
        resnet_stem="cifar",
        zero_init_residual=False,
        head_depth=HEAD_DEPTH,
        head_width=RESNETS[args.depth][3],
        embed_dim=EMBED_DIM,
        compute_dtype=args.precision,
    )
    config.method.update(
        color_strength=COLOR_STRENGTH,
        blur_p=BLUR_P,
        crop_min_scale=CROP_MIN_SCALE,
        temperature=TEMPERATURE,
    )
    config.train.batch_size = args.batch
    training.validate(config)
    # What the trainer does first with train.reuse_host_memory on, before JAX's CPU backend
    # exists (off in base_config(); --host-memory default to compare).
    reused = args.host_memory == "reuse" and training.reuse_host_memory()

    method = methods.get("simclr")(config)
    spec = methods.DataSpec("image", CHANNELS, 10, image_shape=(IMAGE_SIZE, IMAGE_SIZE, CHANNELS))
    model = models.set_compute_dtype(method.build(spec, nnx.Rngs(config.seed)), args.precision)
    graphdef, params, model_state = nnx.split(model, nnx.Param, ...)
    o = config.optim
    steps_per_epoch = CIFAR10_TRAIN // args.batch
    total_steps = steps_per_epoch * config.train.epochs
    warmup_steps = round(o.warmup_epochs * steps_per_epoch)
    schedule = optim.make_schedule(
        o.schedule, peak=o.lr, total_steps=total_steps, warmup_steps=warmup_steps
    )
    tx = method.optimizer(schedule)  # LARS of config.optim, as the trainer builds it
    # Start at the end of warm-up, so that the compared update has the peak learning rate.
    # optax's schedule counts its own steps: its counter starts there too.
    check_step = warmup_steps
    state = training.TrainState.create(params, model_state, tx)
    state = dataclasses.replace(
        state,
        step=jnp.asarray(check_step, jnp.int32),
        opt_state=optax.tree_utils.tree_set(state.opt_state, count=jnp.asarray(check_step)),
    )
    ctx = training.StepContext(method, graphdef, tx, schedule, config)
    train_step = jax.jit(training.make_default_train_step(ctx), donate_argnums=0)
    rng = np.random.default_rng(args.seed)
    images = rng.integers(0, 256, (args.batch, IMAGE_SIZE, IMAGE_SIZE, CHANNELS), np.uint8)
    batch = methods.Batch(x=jnp.asarray(images), y=jnp.zeros((args.batch,), jnp.int32))
    key = jax.random.key(args.seed)

    # The initial state on the host: the checks below run after the timed steps (which
    # donate the state), so that the device allocator's peak recorded is the step's own.
    initial = jax.device_get((state.params, state.model_state))
    start = time.perf_counter()
    compiled = train_step.lower(state, batch, key).compile()
    compile_s = time.perf_counter() - start
    xla = _common.xla_memory(compiled)
    rss_after_compile = _common.peak_rss_bytes()

    state, metrics = compiled(state, batch, key)  # the checked step
    flat = _common.flat_state
    np.savez(args.exchange / "jax_after.npz", **flat(state.params))
    step_loss, step_lr, step_grad_norm = (float(metrics[k]) for k in ("loss", "lr", "grad_norm"))
    state, metrics, seconds = _common.time_steps(compiled, state, batch, key, args)
    final_loss = float(metrics["loss"])
    # The peak so far: compilation and the steps, before the checks below compile and run
    # their own float32 forward and gradient programs.
    rss_through_steps = _common.peak_rss_bytes()
    device = jax.devices()[0]
    stats = device.memory_stats() if device.platform != "cpu" else None
    step_peak = {"peak_device_bytes": stats["peak_bytes_in_use"]} if stats else {}

    params0, model_state0 = jax.device_put(initial)
    # The views SimCLR.loss draws at this step (the default step folds the step into the key),
    # for PyTorch, and jaxcl's model on them outside the step: features, embeddings, loss.
    step_key = jax.random.fold_in(key, check_step)
    x1, x2 = jax.jit(lambda k, x: _images.simclr_views(k, x, method.hp))(step_key, batch.x)

    @functools.partial(jax.jit, static_argnums=4)
    def forward(params, model_state, x1, x2, dtype):
        # In float32 for the comparison with PyTorch's float32 model; in the step's precision
        # for its loss.
        m = models.set_compute_dtype(ctx.merge(params, model_state), dtype)
        h = m.encoder(jnp.concatenate([x1, x2], axis=0))
        z = m.head(h)
        z1, z2 = jnp.split(z, 2, axis=0)
        return h, z, losses.nt_xent(z1, z2, temperature=TEMPERATURE)

    @functools.partial(jax.jit, static_argnums=4)
    def gradients(params, model_state, x1, x2, dtype):
        """The loss's gradient with respect to the parameters, as the step takes it."""

        def loss_of(params):
            m = models.set_compute_dtype(ctx.merge(params, model_state), dtype)
            z1, z2 = jnp.split(m.head(m.encoder(jnp.concatenate([x1, x2], axis=0))), 2, axis=0)
            return losses.nt_xent(z1, z2, temperature=TEMPERATURE)

        return jax.grad(loss_of)(params)

    # float32 at full precision (a GPU's default is TF32), as PyTorch's float32 check.
    with jax.default_matmul_precision("highest"):
        h, z, forward_loss = forward(params0, model_state0, x1, x2, "float32")
        grads = {"grad32": gradients(params0, model_state0, x1, x2, "float32")}
    step_precision_loss = forward(params0, model_state0, x1, x2, args.precision)[2]
    if args.precision != "float32":  # the step's precision, for PyTorch's AMP gradient
        grads["grad16"] = gradients(params0, model_state0, x1, x2, args.precision)
    np.savez(
        args.exchange / "jax.npz",
        images=images,
        x1=np.asarray(x1),
        x2=np.asarray(x2),
        features=np.asarray(h),
        embeddings=np.asarray(z),
        **flat(params0),
        **flat(model_state0),
        **{k: v for name, g in grads.items() for k, v in flat(g, name + ":").items()},
    )

    check = {
        "step": check_step,
        "lr": step_lr,
        "loss": step_loss,
        "forward_loss": float(forward_loss),
        "forward_loss_step_precision": float(step_precision_loss),
        "grad_norm": step_grad_norm,
    }
    # The learning rate of each update PyTorch makes, in order (the checked one first; then
    # warm-up and timed steps, eager and compiled), from jaxcl's schedule.
    updates = 2 + 2 * (args.warmup + args.steps)
    setup = {
        "check": check,
        "lrs": [float(schedule(check_step + i)) for i in range(updates)],
        "optim": {
            "name": o.name,
            "lr": o.lr,
            "momentum": o.momentum,
            "weight_decay": o.weight_decay,
            "trust_coefficient": o.trust_coefficient,
            "schedule": o.schedule,
            "warmup_steps": warmup_steps,
            "total_steps": total_steps,
        },
        "model": config.model.to_dict(),
        "method": config.method.to_dict(),
    }
    (args.exchange / "setup.json").write_text(json.dumps(setup))

    return _common.jax_report(
        eigen_cpu_convolutions=bool(eigen),
        reused=reused,
        rss_after_imports=rss_after_imports,
        check=check,
        compile_s=compile_s,
        xla=xla,
        final_loss=final_loss,
        peak_rss_after_compile_bytes=rss_after_compile,
        peak_rss_through_steps_bytes=rss_through_steps,
        **step_peak,
        **summarize(seconds, args.batch),
    )


# --------------------------------------------------------------------------------------------
# PyTorch

# Keeps the schema-only torchvision operators of import_torchvision alive.
_TORCHVISION_SHIM = []


def import_torchvision():
    """``import torchvision``; where its C++ operators do not load and the import fails on
    their fake kernels (a CUDA torchvision beside a CPU torch), declares the operators it
    registers them for (schemas only) and imports it again."""
    import importlib
    import sys

    import torch

    try:
        return importlib.import_module("torchvision")
    except RuntimeError as err:
        if "torchvision::" not in str(err):
            raise
    for name in [m for m in sys.modules if m == "torchvision" or m.startswith("torchvision.")]:
        del sys.modules[name]
    lib = torch.library.Library("torchvision", "FRAGMENT")
    for op in ("nms", "qnms"):
        lib.define(f"{op}(Tensor dets, Tensor scores, float iou_threshold) -> Tensor")
    _TORCHVISION_SHIM.append(lib)
    return importlib.import_module("torchvision")


def torch_parameter_names(model, depth: int) -> dict:
    """``{torch parameter or buffer name: (jaxcl's flat name, layout)}``, layout ``'conv'``
    (HWIO -> OIHW), ``'linear'`` ([in, out] -> [out, in]) or ``'plain'``."""
    from torch import nn

    _, stages, _, _ = RESNETS[depth]
    first_block = [sum(stages[:i]) for i in range(len(stages))]  # jaxcl numbers blocks 0, 1, ..

    def jax_module(name: str) -> str:
        if name.startswith("head."):
            return name  # head.linears.i / head.norms.i, as jaxcl's MLP
        parts = name.split(".")  # encoder.conv1, encoder.layer2.0.downsample.1, ...
        if parts[1:] == ["conv1"]:
            return "encoder.net.conv"
        if parts[1:] == ["bn1"]:
            return "encoder.net.norm"
        block = first_block[int(parts[1].removeprefix("layer")) - 1] + int(parts[2])
        inner = {
            "conv1": "conv1",
            "bn1": "norm1",
            "conv2": "conv2",
            "bn2": "norm2",
            "conv3": "conv3",
            "bn3": "norm3",
            "downsample.0": "shortcut.conv",
            "downsample.1": "shortcut.norm",
        }[".".join(parts[3:])]
        return f"encoder.net.blocks.{block}.{inner}"

    names = {}
    for name, module in model.named_modules():
        if isinstance(module, nn.Conv2d | nn.Linear):
            layout = "conv" if isinstance(module, nn.Conv2d) else "linear"
            names[f"{name}.weight"] = (f"{jax_module(name)}.kernel", layout)
        elif isinstance(module, nn.BatchNorm1d | nn.BatchNorm2d):
            prefix = jax_module(name)
            for torch_name, jax_name in (
                ("weight", "scale"),
                ("bias", "bias"),
                ("running_mean", "mean"),
                ("running_var", "var"),
            ):
                names[f"{name}.{torch_name}"] = (f"{prefix}.{jax_name}", "plain")
    return names


def to_torch_layout(value, layout: str):
    return {
        "conv": lambda v: v.transpose(3, 2, 0, 1),
        "linear": lambda v: v.T,
        "plain": lambda v: v,
    }[layout](value)


def torch_worker(args) -> dict:
    import numpy as np
    import torch
    import torch.nn.functional as F
    from torch import nn

    reused, rss_after_imports = _common.torch_worker_setup(args)
    torchvision = import_torchvision()
    device_name = args.torch_device
    if device_name == "auto":
        device_name = "cuda" if torch.cuda.is_available() else "cpu"
    device = torch.device(device_name)
    cuda = device.type == "cuda"
    # bfloat16: autocast of the model and the loss (PyTorch's AMP); float32 otherwise.
    amp = args.precision == "bfloat16"

    def sync():
        if cuda:
            torch.cuda.synchronize()

    from torchvision.transforms import v2

    setup = json.loads((args.exchange / "setup.json").read_text())
    lrs = iter(setup["lrs"])

    class Head(nn.Module):
        """jaxcl's ``projection_head``: ``Linear(no bias) -> BatchNorm1d -> ReLU`` per layer,
        no ReLU after the last."""

        def __init__(self, sizes):
            super().__init__()
            pairs = list(zip(sizes[:-1], sizes[1:], strict=True))
            self.linears = nn.ModuleList(nn.Linear(a, b, bias=False) for a, b in pairs)
            self.norms = nn.ModuleList(nn.BatchNorm1d(b) for _, b in pairs)

        def forward(self, x):
            last = len(self.linears) - 1
            for i, (linear, norm) in enumerate(zip(self.linears, self.norms, strict=True)):
                x = norm(linear(x))
                if i < last:
                    x = F.relu(x)
            return x

    class Model(nn.Module):
        def __init__(self):
            super().__init__()
            encoder = getattr(torchvision.models, RESNETS[args.depth][0])()
            # SimCLR's CIFAR stem: 3x3 stride-1 convolution, no max pool; no classifier.
            encoder.conv1 = nn.Conv2d(CHANNELS, 64, 3, stride=1, padding=1, bias=False)
            encoder.maxpool = nn.Identity()
            encoder.fc = nn.Identity()
            self.encoder = encoder
            width = RESNETS[args.depth][3]
            self.head = Head([width] + [width] * (HEAD_DEPTH - 1) + [EMBED_DIM])

        def forward(self, x):
            return self.head(self.encoder(x))

    from _torch_parts import LARS, nt_xent  # as in train_step_benchmark.py

    # SimCLR's CIFAR view (colour strength s = 0.5), per image, on [3, 32, 32] floats in [0, 1].
    s = COLOR_STRENGTH
    view = v2.Compose(
        [
            # Crops are never larger than the image: upsampled, so antialiasing plays no part.
            v2.RandomResizedCrop(IMAGE_SIZE, scale=(CROP_MIN_SCALE, 1.0), antialias=False),
            v2.RandomHorizontalFlip(),
            v2.RandomApply([v2.ColorJitter(0.8 * s, 0.8 * s, 0.8 * s, 0.2 * s)], p=0.8),
            v2.RandomGrayscale(p=0.2),
        ]
    )

    def simclr_views(x):
        """Two views of every image of a uint8 batch ``[N, 3, H, W]``."""
        x = x.float().div_(255.0)
        return (
            torch.stack([view(image) for image in x]),
            torch.stack([view(image) for image in x]),
        )

    torch.manual_seed(args.seed)
    model = Model()
    names = torch_parameter_names(model, args.depth)
    jx = dict(np.load(args.exchange / "jax.npz"))
    tensors = dict(model.named_parameters()) | {
        n: b for n, b in model.named_buffers() if not n.endswith("num_batches_tracked")
    }
    jax_names = {k for k in jx if k.startswith(("encoder.", "head."))}
    if set(names) != set(tensors) or {v[0] for v in names.values()} != jax_names:
        raise SystemExit(
            "the PyTorch model's tensors do not map one to one onto jaxcl's: "
            f"{sorted(set(tensors) ^ set(names))} "
            f"{sorted(jax_names ^ {v[0] for v in names.values()})}"
        )
    with torch.no_grad():
        for name, tensor in tensors.items():
            value = to_torch_layout(jx[names[name][0]], names[name][1])
            tensor.copy_(torch.from_numpy(np.ascontiguousarray(value)))
    model.to(device)
    if cuda:  # NHWC convolutions, the layout cuDNN's fast kernels (and AMP's tensor cores) want
        model.to(memory_format=torch.channels_last)
    model.train()

    o = setup["optim"]
    opt = LARS(
        [
            {"params": [p for p in model.parameters() if p.ndim > 1], "adapt": True},
            {"params": [p for p in model.parameters() if p.ndim <= 1], "adapt": False},
        ],
        momentum=o["momentum"],
        weight_decay=o["weight_decay"],
        trust_coefficient=o["trust_coefficient"],
    )

    def loss_of(x1, x2):
        """Both views through the model as one batch of 2N (batch norm sees all 2N rows)."""
        x = torch.cat([x1, x2])
        if cuda:
            x = x.contiguous(memory_format=torch.channels_last)
        with torch.autocast(device.type, dtype=torch.bfloat16, enabled=amp):
            z1, z2 = model(x).chunk(2)
            return nt_xent(z1, z2, TEMPERATURE)

    aug_seconds, update_seconds = [], []

    def make_step(loss_fn):
        def update(x1, x2, lr):
            loss = loss_fn(x1, x2)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step(lr)
            return loss.detach()

        def train_step(x, lr):
            # On a GPU each part is waited for, so that the views' time and the update's are
            # each their own (the step's total is waited for in time_steps either way).
            start = time.perf_counter()
            with torch.no_grad():
                x1, x2 = simclr_views(x)
            sync()
            middle = time.perf_counter()
            aug_seconds.append(middle - start)
            loss = update(x1, x2, lr)
            sync()
            update_seconds.append(time.perf_counter() - middle)
            return loss

        return train_step

    # Same loss: jaxcl's weights and the views jaxcl's checked step draws; one update.
    x1, x2 = (
        torch.from_numpy(jx[k]).permute(0, 3, 1, 2).contiguous().to(device) for k in ("x1", "x2")
    )
    # In float32, without TF32, to compare with jaxcl's float32 forward pass.
    tf32 = torch.backends.cudnn.allow_tf32, torch.backends.cuda.matmul.allow_tf32
    torch.backends.cudnn.allow_tf32 = torch.backends.cuda.matmul.allow_tf32 = False
    features = model.encoder(torch.cat([x1, x2]))
    embeddings = model.head(features)
    loss = nt_xent(*embeddings.chunk(2), TEMPERATURE)
    opt.zero_grad(set_to_none=True)
    loss.backward()
    grad_norm = float(
        torch.linalg.vector_norm(torch.stack([p.grad.norm() for p in model.parameters()]))
    )

    def gradients():
        return {n: p.grad.detach().cpu().numpy().astype(np.float64) for n, p in params}

    params = list(model.named_parameters())
    grads = {"grad32": gradients()}
    if amp:  # the same gradient under AMP; the float32 one stays for the update
        kept = [p.grad for _, p in params]
        opt.zero_grad(set_to_none=True)
        loss_of(x1, x2).backward()
        grads["amp"] = gradients()
        for (_, p), g in zip(params, kept, strict=True):
            p.grad = g
    jax_grads = {
        key: {
            n: to_torch_layout(jx[f"{key}:{names[n][0]}"], names[n][1]).astype(np.float64)
            for n, _ in params
        }
        for key in ("grad32", "grad16")
        if f"{key}:{names[params[0][0]][0]}" in jx
    }

    def rel_l2(a: dict, b: dict) -> float:
        """|a - b| / |b| over all parameters."""
        diff = sum(float(np.sum((a[n] - b[n]) ** 2)) for n in b)
        return (diff / max(sum(float(np.sum(v**2)) for v in b.values()), 1e-300)) ** 0.5

    gradient_check = {"grads_f32_jaxcl_vs_pytorch": rel_l2(jax_grads["grad32"], grads["grad32"])}
    if amp and "grad16" in jax_grads:
        gradient_check.update(
            grads_bf16_vs_f32_jaxcl=rel_l2(jax_grads["grad16"], jax_grads["grad32"]),
            grads_amp_vs_f32_pytorch=rel_l2(grads["amp"], grads["grad32"]),
            grads_bf16_jaxcl_vs_amp_pytorch=rel_l2(jax_grads["grad16"], grads["amp"]),
        )
    jax_check = setup["check"]
    opt.step(next(lrs))
    torch.backends.cudnn.allow_tf32, torch.backends.cuda.matmul.allow_tf32 = tf32

    def compare(ours, theirs):
        ours = ours.detach().cpu().numpy().astype(np.float64)
        spread = float(theirs.std(axis=0).mean())
        diff = float(np.abs(ours - theirs).max())
        return diff, diff / max(spread, 1e-30)

    # The update each side made: per tensor, the largest difference relative to the largest
    # entry of jaxcl's update; over all tensors, the l2 norm of the difference relative to it.
    after = dict(np.load(args.exchange / "jax_after.npz"))
    worst, diff_sq, update_sq = ("", 0.0), 0.0, 0.0
    for name, p in model.named_parameters():
        jax_name, layout = names[name]
        new, old = (to_torch_layout(a[jax_name], layout).astype(np.float64) for a in (after, jx))
        ours = p.detach().cpu().numpy().astype(np.float64)
        scale = max(float(np.abs(new - old).max()), 1e-30)
        worst = max(worst, (name, float(np.abs(ours - new).max()) / scale), key=lambda w: w[1])
        diff_sq += float(np.sum((ours - new) ** 2))
        update_sq += float(np.sum((new - old) ** 2))
    feat_abs, feat_rel = compare(features, jx["features"])
    emb_abs, emb_rel = compare(embeddings, jx["embeddings"])
    loss = float(loss)
    check = {
        "loss_jaxcl_step": jax_check["loss"],
        "loss_jaxcl_forward": jax_check["forward_loss"],
        "loss_pytorch": loss,
        "loss_abs_diff": abs(loss - jax_check["loss"]),
        "loss_rel_diff": abs(loss - jax_check["loss"]) / abs(jax_check["loss"]),
        "loss_abs_diff_forward": abs(loss - jax_check["forward_loss"]),
        "loss_jaxcl_forward_step_precision": jax_check["forward_loss_step_precision"],
        "features_max_abs_diff": feat_abs,
        "features_max_diff_over_spread": feat_rel,
        "embeddings_max_abs_diff": emb_abs,
        "embeddings_max_diff_over_spread": emb_rel,
        "grad_norm_jaxcl": jax_check["grad_norm"],
        "grad_norm_pytorch": grad_norm,
        "update_error_jaxcl_vs_pytorch": worst[1],
        "update_error_tensor": worst[0],
        "update_rel_l2_jaxcl_vs_pytorch": diff_sq**0.5 / max(update_sq**0.5, 1e-30),
        "lr": jax_check["lr"],
        **gradient_check,
    }

    # uint8 NCHW, on the device (as a loader's batch, copied before the step)
    images = torch.from_numpy(jx["images"]).permute(0, 3, 1, 2).contiguous().to(device)

    def time_steps(step_fn):
        for _ in range(args.warmup):
            step_fn(images, next(lrs))
        sync()
        aug_seconds.clear()
        update_seconds.clear()
        seconds = []
        for _ in range(args.steps):
            start = time.perf_counter()
            loss = step_fn(images, next(lrs))
            sync()
            seconds.append(time.perf_counter() - start)
        out = {
            "final_loss": float(loss),
            "augment_median_s": statistics.median(aug_seconds),
            **summarize(seconds, args.batch),
        }
        if cuda:  # the model, loss and update alone, as if the views came from loaders
            out["update_only"] = summarize(update_seconds, args.batch)
        return out

    result = {
        "torchvision": torchvision.__version__,
        "torchvision_cpp_ops": bool(torchvision.extension._has_ops()),
        "amp": amp,
        "channels_last": cuda,
        "check": check,
        "eager": time_steps(make_step(loss_of)),
        # The peak before torch.compile runs: eager PyTorch's own.
        "peak_rss_eager_bytes": _common.peak_rss_bytes(),
    }
    if args.torch_compile:
        # Model + loss compiled (forward and, through AOTAutograd, backward); the views and the
        # optimizer stay eager (per-image transforms; a learning rate that changes every step).
        compiled_step = make_step(torch.compile(loss_of))
        start = time.perf_counter()
        compiled_step(images, next(lrs))
        result["compile_s"] = time.perf_counter() - start
        result["compiled"] = time_steps(compiled_step)
    return _common.torch_report(
        reused=reused, rss_after_imports=rss_after_imports, device=device_name, **result
    )


# --------------------------------------------------------------------------------------------
# Driver


def run_worker(kind: str, args, exchange: pathlib.Path) -> dict:
    cmd = [
        f"--worker={kind}",
        f"--batch={args.batch}",
        f"--steps={args.steps}",
        f"--warmup={args.warmup}",
        f"--seed={args.seed}",
        f"--depth={args.depth}",
        f"--precision={args.precision}",
        f"--torch-device={args.torch_device}",
        f"--exchange={exchange}",
        f"--torch-threads={args.torch_threads}",
        f"--host-memory={args.host_memory}",
        f"--cpu-convolutions={args.cpu_convolutions}",
        "--torch-compile" if args.torch_compile else "--no-torch-compile",
    ]
    return _common.run_worker(__file__, cmd, kind)


def variants(jax_r: dict, torch_r: dict) -> list[tuple[str, dict]]:
    """The timed variants in the order of the table. On a GPU PyTorch's update alone (model,
    loss and LARS on views made beforehand, as if by loader processes) is a variant of its own:
    per-image views on the GPU cost PyTorch more than its model does there."""
    label = "pytorch amp" if torch_r.get("amp") else "pytorch eager"
    out = [("jaxcl", jax_r), (label, torch_r["eager"])]
    if "update_only" in torch_r["eager"]:
        out.append((label + ", no views", torch_r["eager"]["update_only"]))
    if "compiled" in torch_r:
        out.append(("pytorch compile", torch_r["compiled"]))
        if "update_only" in torch_r["compiled"]:
            out.append(("pytorch compile, no views", torch_r["compiled"]["update_only"]))
    return out


def peak_memory(name: str, jax_r: dict, torch_r: dict) -> tuple[int, str]:
    """The variant's peak memory and what it is: the device allocator's on a GPU, else the
    process's RSS (PyTorch's eager peak is the one before torch.compile ran, its check
    included, one float32 forward and backward as a step's; jaxcl's the one through the timed
    steps, before its checks compile programs of their own, where recorded)."""
    r = jax_r if name == "jaxcl" else torch_r
    if "peak_device_bytes" in r:
        return r["peak_device_bytes"], "device"
    if name == "jaxcl":
        return jax_r.get("peak_rss_through_steps_bytes", jax_r["peak_rss_bytes"]), "rss"
    eager = "compile" not in name
    return torch_r["peak_rss_eager_bytes" if eager else "peak_rss_bytes"], "rss"


def plot(jax_r: dict, torch_r: dict, batch: int, path: pathlib.Path, env: dict) -> None:
    import textwrap

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (ax_t, ax_m) = plt.subplots(1, 2, figsize=(10, 4.2))
    named = variants(jax_r, torch_r)
    colors = [f"C{i}" for i in range(len(named))]
    ax_t.bar([n for n, _ in named], [r["images_per_s"] for _, r in named], color=colors)
    augment = [
        batch / r["median_s"] * r["augment_median_s"] / r["median_s"]
        if "augment_median_s" in r
        else 0.0
        for _, r in named
    ]
    ax_t.bar(
        [n for n, _ in named],
        augment,
        color="none",
        edgecolor="black",
        hatch="//",
        label="PyTorch's share spent on the views",
    )
    ax_t.set_ylabel("images / s (batch / median step)")
    ax_t.set_title("training step")
    ax_t.legend(fontsize=8)
    # PyTorch's process runs eager first: its peak then is eager's; its final peak covers
    # torch.compile's run too. On a GPU: the device allocators' peaks.
    names = [n for n, _ in named]
    peaks = [peak_memory(n, jax_r, torch_r) for n in names]
    on_device = peaks[0][1] == "device"
    peak = [v / GIB for v, _ in peaks]
    base = [
        0.0 if on_device else r["rss_after_imports_bytes"] / GIB
        for r in [jax_r] + [torch_r] * (len(names) - 1)
    ]
    if not on_device:
        ax_m.bar(names, base, color="lightgray", label="RSS after imports")
    ax_m.bar(
        names,
        [p - b for p, b in zip(peak, base, strict=True)],
        bottom=base,
        color=colors,
        label="peak of the device allocator" if on_device else "peak RSS above that",
    )
    ax_m.set_ylabel("GiB")
    ax_m.set_title("peak device memory" if on_device else "peak resident memory")
    ax_m.legend(fontsize=8)
    for ax in (ax_t, ax_m):
        ax.grid(True, axis="y", alpha=0.3)
        # five rows' names side by side: wrapped so that they do not run into each other
        ax.set_xticks(range(len(names)), [textwrap.fill(n, 12) for n in names], fontsize=8)
    machine = (
        env["jax_device"]
        if not env["jax_device"].startswith("cpu")
        else f"{env['cpu_model']} ({env['cpu_count']} cores)"
    )
    fig.suptitle(
        f"SimCLR step, ResNet-{env['depth']} (CIFAR stem), 32x32, batch {batch} (2 x {batch} "
        f"views), {env['precision']}\n{machine}, jax {env['jax']}, torch "
        f"{env['torch']}, torchvision {env['torchvision']}",
        fontsize=9,
    )
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def main() -> None:
    args = parse_args()
    if _common.serve_worker(args, jax_worker, torch_worker):
        return

    env = _common.environment(("jax", "jaxlib", "flax", "optax", "torch", "torchvision"))
    _common.print_environment(env)
    print(
        f"# SimCLR step: ResNet-{args.depth} (CIFAR stem) + head {HEAD_DEPTH} layers -> "
        f"{EMBED_DIM}, {IMAGE_SIZE}x{IMAGE_SIZE} uint8 images, batch {args.batch} (2 x "
        f"{args.batch} views through the model), views in the step, NT-Xent (tau "
        f"{TEMPERATURE}), LARS, {args.precision}; median of {args.steps} steps after "
        f"{args.warmup} warm-up"
    )
    jax_r, setup, torch_r = _common.run_pair(run_worker, args)
    env["jax_device"], env["torch_device"] = jax_r["device"], torch_r["device"]
    env["torch_threads"] = torch_r["threads"]
    env["host_memory"] = args.host_memory
    env["cpu_convolutions"] = args.cpu_convolutions
    env["torchvision_cpp_ops"] = torch_r["torchvision_cpp_ops"]
    env["depth"], env["precision"] = args.depth, args.precision
    gpu = not jax_r["device"].startswith("cpu")
    print(
        f"# jaxcl on {env['jax_device']}; PyTorch on {env['torch_device']} with "
        f"{env['torch_threads']} threads (torchvision C++ operators loaded: "
        f"{torch_r['torchvision_cpp_ops']}, unused here)"
    )
    print(
        f"# jaxcl's XLA:CPU convolutions: {args.cpu_convolutions} (Eigen flag applied: "
        f"{jax_r['eigen_cpu_convolutions']})"
    )
    print(
        f"# host memory: {args.host_memory} (freed memory kept for reuse: jaxcl "
        f"{jax_r['host_memory_reused']}, PyTorch {torch_r['host_memory_reused']})"
    )

    c = torch_r["check"]
    print(
        f"\nSame loss (jaxcl's initial weights and the views of its step {setup['check']['step']}"
        f"): jaxcl step {c['loss_jaxcl_step']:.7f} (forward on the exported views "
        f"{c['loss_jaxcl_forward']:.7f}), PyTorch {c['loss_pytorch']:.7f}; |diff| "
        f"{c['loss_abs_diff']:.1e} ({c['loss_rel_diff']:.1e} relative; forward "
        f"{c['loss_abs_diff_forward']:.1e}). Largest difference of the encoder's features "
        f"{c['features_max_abs_diff']:.1e} ({c['features_max_diff_over_spread']:.1e} of their "
        f"spread), of the embeddings {c['embeddings_max_abs_diff']:.1e} "
        f"({c['embeddings_max_diff_over_spread']:.1e}). Gradient norm jaxcl "
        f"{c['grad_norm_jaxcl']:.6f}, PyTorch {c['grad_norm_pytorch']:.6f}. One LARS update "
        f"(lr {c['lr']:g}): worst tensor's difference {c['update_error_jaxcl_vs_pytorch']:.1e} "
        f"of its update ({c['update_error_tensor']}); all tensors "
        f"{c['update_rel_l2_jaxcl_vs_pytorch']:.1e} of the update, relative l2. Gradients "
        f"on those views, float32 (full precision on both sides): jaxcl vs PyTorch "
        f"{c['grads_f32_jaxcl_vs_pytorch']:.1e}, relative l2."
        + (
            f" In {args.precision}, each against its own float32 gradient: jaxcl "
            f"{c['grads_bf16_vs_f32_jaxcl']:.1e}, PyTorch's autocast "
            f"{c['grads_amp_vs_f32_pytorch']:.1e}; jaxcl vs PyTorch's autocast "
            f"{c['grads_bf16_jaxcl_vs_amp_pytorch']:.1e}."
            if "grads_bf16_vs_f32_jaxcl" in c
            else ""
        )
        + (
            f" (The comparison is in float32 on both sides, TF32 off in PyTorch; jaxcl's "
            f"{args.precision} forward gives {c['loss_jaxcl_forward_step_precision']:.7f}; "
            f"the step and the update are in {args.precision} in jaxcl, float32 in PyTorch.)"
            if args.precision != "float32"
            else ""
        )
    )

    named = variants(jax_r, torch_r)
    memory = "peak dev GiB" if gpu else "peak RSS GiB"
    header = (
        f"\n{'':<25} | {'images/s':>9} {'ms/step':>9} {'min ms':>9} | {'views ms':>9} | "
        f"{memory:>12}"
    )
    print(header)
    print("-" * (len(header) - 1))
    for name, r in named:
        views = f"{r['augment_median_s'] * 1e3:9.1f}" if "augment_median_s" in r else f"{'-':>9}"
        peak = peak_memory(name, jax_r, torch_r)[0]
        print(
            f"{name:<25} | {r['images_per_s']:9.1f} {r['median_s'] * 1e3:9.1f} "
            f"{r['min_s'] * 1e3:9.1f} | {views} | {peak / GIB:12.2f}"
        )
    xla = jax_r.get("xla")
    print(
        f"jaxcl compile {jax_r['compile_s']:.1f} s"
        + (f", XLA buffers {xla['total_bytes'] / GIB:.2f} GiB" if xla else "")
        + (f"; torch.compile {torch_r['compile_s']:.1f} s" if "compile_s" in torch_r else "")
        + f". RSS after imports: jaxcl {jax_r['rss_after_imports_bytes'] / GIB:.2f} GiB, "
        f"PyTorch {torch_r['rss_after_imports_bytes'] / GIB:.2f} GiB; PyTorch's peak RSS "
        f"before torch.compile {torch_r['peak_rss_eager_bytes'] / GIB:.2f} GiB."
    )
    if "peak_rss_through_steps_bytes" in jax_r:
        print(
            f"jaxcl's peak RSS after compiling the step "
            f"{jax_r['peak_rss_after_compile_bytes'] / GIB:.2f} GiB, through the timed steps "
            f"{jax_r['peak_rss_through_steps_bytes'] / GIB:.2f} GiB, with the checks after "
            f"them (their own float32 forward and gradient programs) "
            f"{jax_r['peak_rss_bytes'] / GIB:.2f} GiB."
        )

    speedups = {"vs_pytorch_eager": jax_r["images_per_s"] / torch_r["eager"]["images_per_s"]}
    if "update_only" in torch_r["eager"]:
        speedups["vs_pytorch_eager_no_views"] = (
            jax_r["images_per_s"] / torch_r["eager"]["update_only"]["images_per_s"]
        )
    if "compiled" in torch_r:
        speedups["vs_pytorch_compile"] = jax_r["images_per_s"] / torch_r["compiled"]["images_per_s"]
        if "update_only" in torch_r["compiled"]:
            speedups["vs_pytorch_compile_no_views"] = (
                jax_r["images_per_s"] / torch_r["compiled"]["update_only"]["images_per_s"]
            )
    # On a GPU (issue #13): bfloat16 against PyTorch's AMP, ResNet-18 at batch 512; both the
    # step as timed (PyTorch's views per image, on the GPU) and PyTorch's update alone.
    amp = "PyTorch AMP" if torch_r.get("amp") else "PyTorch float32"
    checks = (
        (
            ("vs_pytorch_eager", f"{amp}'s step", TARGET_VS_EAGER),
            ("vs_pytorch_eager_no_views", f"{amp}'s update alone (views free)", TARGET_VS_EAGER),
            # the issue's CPU target against torch.compile, where --torch-compile ran
            ("vs_pytorch_compile_no_views", "torch.compile's update alone", TARGET_VS_COMPILE),
        )
        if gpu
        else (
            ("vs_pytorch_eager", "PyTorch eager's", TARGET_VS_EAGER),
            ("vs_pytorch_compile", "torch.compile's", TARGET_VS_COMPILE),
        )
    )
    targets = []
    for key, label, need in checks:
        target = f"ResNet-18, batch {TARGET_BATCH}: jaxcl images/s >= {need:g}x {label}"
        if key not in speedups:
            targets.append({"target": target, "status": "SKIP", "detail": "not timed"})
            continue
        detail = f"{speedups[key]:.2f}x"
        status = "PASS" if speedups[key] >= need else "FAIL"
        if args.batch != TARGET_BATCH or args.depth != 18:
            status, detail = "SKIP", detail + f" (ResNet-{args.depth} at batch {args.batch})"
        targets.append({"target": target, "status": status, "detail": detail})
    print()
    for t in targets:
        print(f"[{t['status']}] {t['target']}: {t['detail']}")

    record = {
        "env": env,
        "setup": {
            "batch": args.batch,
            "image_size": IMAGE_SIZE,
            "views": "jaxcl: simclr_views in the jitted step (per image and view keys, vmapped); "
            "PyTorch: torchvision.transforms.v2 per image, in the step",
            **setup,
        },
        "jaxcl": jax_r,
        "pytorch": torch_r,
        "speedups": speedups,
        "check": c,
        "targets": targets,
    }
    _common.save_record(
        args,
        "simclr_step_benchmark",
        record,
        lambda path: plot(jax_r, torch_r, args.batch, path, env),
        settings=_common.host_memory_settings(args)
        + (("ynnpack",) if args.cpu_convolutions == "ynnpack" and not gpu else ())
        + (("gpu",) if gpu else ())
        + ((f"r{args.depth}",) if args.depth != 18 else ())
        + (("bf16",) if args.precision == "bfloat16" else ()),
    )


if __name__ == "__main__":
    main()
