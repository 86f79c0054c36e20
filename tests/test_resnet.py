"""ResNet encoders: torchvision's parameter counts, a NumPy forward pass (im2col
convolutions, batch norm on batch statistics, max pool) as the reference, the
zero-initialised residual, bfloat16 compute, and batch norm over a sharded global batch."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import nnx
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P

from jaxcl import models


def _params(model) -> int:
    return sum(x.size for x in jax.tree.leaves(nnx.state(model, nnx.Param)))


@pytest.mark.parametrize(
    "depth, k, expected",
    [
        # torchvision's resnet18/34/50 totals (11,689,512 / 21,797,672 / 25,557,032) less the
        # 1000-class classifier (512 * 1000 + 1000 or 2048 * 1000 + 1000).
        (18, 1, 11_689_512 - 513_000),
        (34, 1, 21_797_672 - 513_000),
        (50, 1, 25_557_032 - 2_049_000),
        # ResNet-50 (4x) of SimCLR and DACL: "375M" parameters.
        (50, 4, 375_378_176),
    ],
)
def test_parameter_counts_match_torchvision(depth, k, expected):
    model = nnx.eval_shape(lambda: models.ResNet(depth, width_multiplier=k, rngs=nnx.Rngs(0)))
    assert _params(model) == expected
    assert model.features == (512 if depth < 50 else 2048) * k


# --------------------------------------------------------------------------------------------
# NumPy reference


def _np_conv(x, kernel, stride):
    """x [N, H, W, C], kernel [kh, kw, C, O], symmetric zero padding kh // 2."""
    kh, kw = kernel.shape[:2]
    p = kh // 2
    x = np.pad(x, ((0, 0), (p, p), (p, p), (0, 0)))
    n, h, w, _ = x.shape
    oh, ow = (h - kh) // stride + 1, (w - kw) // stride + 1
    out = np.zeros((n, oh, ow, kernel.shape[3]))
    for i in range(kh):
        for j in range(kw):
            patch = x[:, i : i + stride * oh : stride, j : j + stride * ow : stride, :]
            out += patch @ kernel[i, j]
    return out


def _np_bn(x, norm):
    mean = x.mean(axis=(0, 1, 2))
    var = x.var(axis=(0, 1, 2))
    scale, bias = np.asarray(norm.scale[...], np.float64), np.asarray(norm.bias[...], np.float64)
    return (x - mean) / np.sqrt(var + 1e-5) * scale + bias


def _np_max_pool(x):
    x = np.pad(x, ((0, 0), (1, 1), (1, 1), (0, 0)), constant_values=-np.inf)
    n, h, w, c = x.shape
    oh, ow = (h - 3) // 2 + 1, (w - 3) // 2 + 1
    return np.max(
        [x[:, i : i + 2 * oh : 2, j : j + 2 * ow : 2] for i in range(3) for j in range(3)], axis=0
    )


def _k(conv):
    return np.asarray(conv.kernel[...], np.float64)


def _np_block(block, x):
    relu = lambda v: np.maximum(v, 0)  # noqa: E731
    stride = (
        block.conv2.strides[0] if isinstance(block, models.Bottleneck) else block.conv1.strides[0]
    )
    if isinstance(block, models.BasicBlock):
        y = relu(_np_bn(_np_conv(x, _k(block.conv1), stride), block.norm1))
        y = _np_bn(_np_conv(y, _k(block.conv2), 1), block.norm2)
    else:
        y = relu(_np_bn(_np_conv(x, _k(block.conv1), 1), block.norm1))
        y = relu(_np_bn(_np_conv(y, _k(block.conv2), stride), block.norm2))
        y = _np_bn(_np_conv(y, _k(block.conv3), 1), block.norm3)
    if block.shortcut is not None:
        x = _np_bn(_np_conv(x, _k(block.shortcut.conv), stride), block.shortcut.norm)
    return relu(y + x)


def _np_resnet(model, x):
    stride = 2 if model.stem == "imagenet" else 1
    x = np.maximum(_np_bn(_np_conv(x, _k(model.conv), stride), model.norm), 0)
    if model.stem == "imagenet":
        x = _np_max_pool(x)
    for block in model.blocks:
        x = _np_block(block, x)
    return x.mean(axis=(1, 2))


@pytest.mark.parametrize(
    "depth, stem, shape",
    [
        # Spatial sizes that leave at least 2 x 2 positions at the last stage: batch norm over
        # two values alone is ill-conditioned (float32 and float64 may differ in sign).
        (18, "cifar", (4, 16, 16, 3)),
        (50, "imagenet", (2, 64, 64, 1)),
        (34, "imagenet", (3, 65, 71, 3)),  # odd sides: the strided convolutions' padding
    ],
)
def test_forward_matches_a_numpy_reference(depth, stem, shape):
    model = models.ResNet(depth, stem=stem, in_channels=shape[3], rngs=nnx.Rngs(1))
    # Non-trivial batch-norm affine parameters, so that they are tested too.
    rng = np.random.default_rng(0)
    for _, m in nnx.iter_modules(model):
        if isinstance(m, nnx.BatchNorm):
            m.scale[...] = jnp.asarray(rng.uniform(0.5, 1.5, m.scale.shape), jnp.float32)
            m.bias[...] = jnp.asarray(rng.normal(0, 0.1, m.bias.shape), jnp.float32)
    x = rng.normal(size=shape).astype(np.float32)
    want = _np_resnet(model, x.astype(np.float64))
    got = np.asarray(nnx.jit(lambda m, v: m(v))(model, jnp.asarray(x)))
    # float32 against float64 through up to 50 layers of batch norm over small batches.
    np.testing.assert_allclose(got, want, rtol=1e-3, atol=1e-3 * np.abs(want).max())


def test_zero_init_residual_starts_every_block_as_its_shortcut():
    model = models.ResNet(18, stem="cifar", zero_init_residual=True, rngs=nnx.Rngs(0))
    assert all(float(jnp.abs(b.norm2.scale[...]).max()) == 0 for b in model.blocks)
    x = jax.nn.relu(jax.random.normal(jax.random.key(0), (4, 8, 8, 64)))
    first = model.blocks[0]  # no shortcut convolution: the identity
    np.testing.assert_allclose(np.asarray(first(x)), np.asarray(x), atol=1e-6)
    plain = models.ResNet(18, stem="cifar", rngs=nnx.Rngs(0))
    assert float(jnp.abs(plain.blocks[0](x) - x).max()) > 0.1


def test_bfloat16_compute_keeps_float32_parameters():
    model = models.ResNet(18, stem="cifar", rngs=nnx.Rngs(0))
    x = jax.random.uniform(jax.random.key(0), (8, 16, 16, 3))
    forward = nnx.jit(lambda m, v: m(v))  # (op by op, the test took 20 s)
    want = forward(model, x)
    models.set_compute_dtype(model, "bfloat16")
    got = forward(model, x)
    assert got.dtype == jnp.bfloat16
    assert {p.dtype for p in jax.tree.leaves(nnx.state(model, nnx.Param))} == {jnp.dtype("float32")}
    rel = float(jnp.linalg.norm(got.astype(jnp.float32) - want) / jnp.linalg.norm(want))
    assert rel < 0.05, rel  # bfloat16's 8-bit mantissa through 18 layers


def test_batch_norm_is_over_the_global_batch_when_the_batch_is_sharded():
    model = models.ResNet(18, stem="cifar", rngs=nnx.Rngs(0))
    graphdef, state = nnx.split(model)
    x = jax.random.normal(jax.random.key(1), (16, 8, 8, 3))

    def forward(state, x):
        return nnx.merge(graphdef, state)(x)

    want = jax.jit(forward)(state, x)
    mesh = jax.make_mesh((8,), ("data",))
    sharded = jax.device_put(x, NamedSharding(mesh, P("data")))
    got = jax.jit(forward)(state, sharded)
    # One device's rows alone would give other statistics: the check can fail.
    alone = jax.jit(forward)(state, x[:2])
    assert float(jnp.abs(alone - want[:2]).max()) > 1e-2
    # The same statistics summed in another order: float32 rounding only.
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-3, atol=1e-4)


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"depth": 20}, "`depth` must be one of"),
        ({"depth": 18, "stem": "tiny"}, "`stem` must be one of"),
        ({"depth": 18, "width_multiplier": 0}, "`width_multiplier` must be a positive int"),
        # A 4x model asked for with a base width too: refused, not built at the base width.
        ({"depth": 18, "width_multiplier": 4, "base_width": 16}, "not both"),
    ],
)
def test_bad_arguments(kwargs, match):
    assert models.ResNet(18, width_multiplier=1, base_width=16, rngs=nnx.Rngs(0)).features == 128
    with pytest.raises(ValueError, match=match):
        models.ResNet(**kwargs, rngs=nnx.Rngs(0))
    with pytest.raises(ValueError, match="images"):
        models.ResNet(18, rngs=nnx.Rngs(0))(jnp.zeros((32, 32, 3)))


@pytest.mark.parametrize(
    "depth, want_shortcuts",
    [
        # torchvision's downsample (1x1 conv + BN): the first block of layer2-4, and of layer1
        # too for the bottleneck (64 -> 256 channels); elsewhere the input is added unchanged
        (18, [2, 4, 6]),
        (34, [3, 7, 13]),
        (50, [0, 3, 7, 13]),
    ],
)
def test_blocks_project_their_shortcut_where_torchvisions_downsample(depth, want_shortcuts):
    model = nnx.eval_shape(lambda: models.ResNet(depth, stem="imagenet", rngs=nnx.Rngs(0)))
    assert [i for i, b in enumerate(model.blocks) if b.shortcut is not None] == want_shortcuts
