"""The fused Hadamard-chain kernel (``implementation='pallas'``) of fwht and SORF.

The kernel is a Pallas Triton kernel for NVIDIA GPUs. Here (CPU) its body runs through
Pallas' interpreter, which executes the same jaxpr: every value is checked against float64
NumPy (Sylvester's H from SciPy, SORF's dense matrix built from the signs), the gradients
against the transposed products, and the public entry points against the XLA implementation.
The lowering to Triton for CUDA is checked too (no GPU needed); whether Triton then compiles
it is checked by experiments/benchmarks/fwht_bandwidth_benchmark.py on a GPU.
"""

from __future__ import annotations

import itertools

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from test_fwht import dense_reference
from test_random_features import np_sorf_matrix

from jaxcl import random_features as rf
from jaxcl.random_features import _hadamard_pallas as hp


@pytest.fixture
def interpret(monkeypatch):
    """The public entry points run the kernel through the interpreter (CPU)."""
    monkeypatch.setattr(hp, "_FORCE_INTERPRET", True)


def hadamard(d: int) -> np.ndarray:
    """Orthonormal Sylvester ``H_d`` in float64 (test_fwht's reference on the identity)."""
    return dense_reference(np.eye(d))


def sorf_dense(params, temperature) -> np.ndarray:
    """``W_SORF^T`` ([dim, num_features]) in float64 (test_random_features' reference), with
    the chi norms' per-projection scales when drawn."""
    w = np_sorf_matrix(params.signs, params.dim, params.num_features, temperature)
    if params.scales is not None:
        w = w * np.asarray(params.scales, np.float64).reshape(-1)[: params.num_features]
    return w


def rel_err(got, want) -> float:
    got = np.asarray(jnp.asarray(got).astype(jnp.float32), np.float64)
    return float(np.max(np.abs(got - want)) / np.sqrt(np.mean(want**2)))


# Float32: the kernel's float32 matmuls; bfloat16: one rounding of the result (2^-9 relative).
TOL = {"float32": 1e-5, "bfloat16": 2e-2}


@pytest.mark.parametrize(
    "d,dtype,variant",
    list(itertools.product(hp.SUPPORTED_DIMS, ("float32", "bfloat16"), hp.VARIANTS)),
)
def test_fwht_rows_matches_float64(d, dtype, variant):
    rows = 13  # not a multiple of the rows per program: the last block is padded
    x = jax.random.normal(jax.random.key(d), (rows, d)).astype(dtype)
    got = hp.fwht_rows(x, variant=variant, block_rows=4, interpret=True)
    assert got.dtype == x.dtype and got.shape == x.shape
    want = np.asarray(x.astype(jnp.float32), np.float64) @ hadamard(d)
    assert rel_err(got, want) < TOL[dtype]


@pytest.mark.parametrize("d", [512, 2048])  # r1 != r2: the transposed layout is not square
@pytest.mark.parametrize("variant", ["alternate", "rowloop"])
def test_sorf_chain_variants_match_dense(d, variant):
    """The kernel's other variants compute SORF's chain and its transpose too; 'alternate'
    meets the second sign vector in the transposed layout (permuted by the caller)."""
    params = rf.draw_sorf(jax.random.key(11), d, 2 * d)
    x = jax.random.normal(jax.random.key(12), (5, d))
    w = sorf_dense(params, 0.5)
    kwargs = dict(variant=variant, block_rows=2, interpret=True)
    got = hp.sorf_projection_rows(x, params, 0.5, **kwargs)
    assert rel_err(got, np.asarray(x, np.float64) @ w) < 1e-5
    g = jax.random.normal(jax.random.key(13), got.shape)
    _, pullback = jax.vjp(lambda v: hp.sorf_projection_rows(v, params, 0.5, **kwargs), x)
    assert rel_err(pullback(g)[0], np.asarray(g, np.float64) @ w.T) < 1e-5


def test_layouts_alternate_between_transforms():
    assert hp._layouts("sHsHsH", "alternate") == ("n", "t", "n", "t")
    assert hp._layouts("HsHsHs", "alternate") == ("t", "n", "t", "t")
    assert hp._layouts("sHsHsH", "transpose") == ("n", "n", "n", "n")


def test_bfloat16_is_rounded_once_like_xla(interpret):
    """bfloat16: float32 inside the kernel, one rounding at the end, as the XLA path does;
    so the two agree far more closely than bfloat16 stages would."""
    x = jax.random.normal(jax.random.key(0), (64, 1024)).astype(jnp.bfloat16)
    want = np.asarray(x.astype(jnp.float32), np.float64) @ hadamard(1024)
    pallas = rf.fwht(x, implementation="pallas")
    xla = rf.fwht(x)
    # Each differs from the exact result by at most half a bfloat16 ulp (<= 2^-8 relative),
    # plus, for the kernel, its float32 error (~2^-16 of the rows' scale, here ~1), and they
    # are equal nearly everywhere.
    half_ulp = np.abs(want) * 2.0**-8
    for got in (pallas, xla):
        assert np.all(np.abs(np.asarray(got, np.float64) - want) <= half_ulp + 1e-4)
    diff = np.abs(np.asarray(pallas, np.float64) - np.asarray(xla, np.float64))
    assert np.mean(diff == 0) > 0.99


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_fwht_public_entry_point_and_batch_shape(interpret, dtype):
    x = jax.random.normal(jax.random.key(1), (2, 3, 512)).astype(dtype)
    got = jax.jit(lambda v: rf.fwht(v, implementation="pallas"))(x)
    want = np.asarray(x.astype(jnp.float32), np.float64) @ hadamard(512)
    assert got.shape == x.shape and got.dtype == x.dtype
    assert rel_err(got, want) < TOL[dtype]
    np.testing.assert_allclose(
        np.asarray(got, np.float32), np.asarray(rf.fwht(x), np.float32), atol=TOL[dtype] * 3
    )


def test_fwht_gradient_is_the_transform_of_the_cotangent(interpret):
    x = jax.random.normal(jax.random.key(2), (6, 256))
    g = jax.random.normal(jax.random.key(3), (6, 256))
    y, pullback = jax.vjp(lambda v: rf.fwht(v, implementation="pallas"), x)
    (grad,) = pullback(g)
    np.testing.assert_allclose(grad, np.asarray(g, np.float64) @ hadamard(256), atol=1e-5)
    # and through jax.grad of a scalar loss, against the XLA implementation's
    loss = lambda v, impl: jnp.sum(jnp.sin(rf.fwht(v, implementation=impl)))  # noqa: E731
    np.testing.assert_allclose(
        jax.grad(loss)(x, "pallas"), jax.grad(loss)(x, "xla"), rtol=1e-5, atol=1e-5
    )


@pytest.mark.parametrize(
    "dim,num_features,norms",
    [(1024, 1024, "fixed"), (300, 1000, "fixed"), (256, 600, "chi"), (2048, 2048, "chi")],
)
@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_sorf_projection_matches_dense(interpret, dim, num_features, norms, dtype):
    tau = 0.5
    params = rf.draw_sorf(jax.random.key(4), dim, num_features, norms=norms)
    z = (jax.random.normal(jax.random.key(5), (11, dim)) / np.sqrt(dim)).astype(dtype)
    w = sorf_dense(params, tau)
    got = rf.sorf_projection(z, params, temperature=tau, implementation="pallas")
    assert got.shape == (11, num_features) and got.dtype == z.dtype
    z64 = np.asarray(z.astype(jnp.float32), np.float64)
    # bfloat16: the chain's result is rounded, then scaled and rounded again (documented)
    assert rel_err(got, z64 @ w) < (1e-5 if dtype == "float32" else 3e-2)
    g = jax.random.normal(jax.random.key(6), got.shape).astype(dtype)
    _, pullback = jax.vjp(
        lambda v: rf.sorf_projection(v, params, temperature=tau, implementation="pallas"), z
    )
    (grad,) = pullback(g)
    assert grad.dtype == z.dtype
    g64 = np.asarray(g.astype(jnp.float32), np.float64)
    assert rel_err(grad, g64 @ w.T) < (1e-5 if dtype == "float32" else 3e-2)


def test_sorf_features_keep_float32_angles(interpret):
    """bfloat16 inputs: the projection leaves the kernel in float32, so the cosines and sines
    see unrounded angles and agree with the XLA path (which promotes to float32) to about one
    bfloat16 rounding of the features."""
    params = rf.draw_sorf(jax.random.key(7), 1000, 2048)
    z = (jax.random.normal(jax.random.key(8), (9, 1000)) * 0.3).astype(jnp.bfloat16)
    got = rf.sorf_features(z, params, temperature=1.0, implementation="pallas")
    want = rf.sorf_features(z, params, temperature=1.0)
    assert got.dtype == jnp.bfloat16 and got.shape == (9, 4096)
    scale = 1.0 / np.sqrt(2048)
    np.testing.assert_allclose(
        np.asarray(got, np.float32), np.asarray(want, np.float32), atol=scale * 2.0**-7
    )


def test_no_rows(interpret):
    params = rf.draw_sorf(jax.random.key(0), 256, 512)
    empty = jnp.ones((0, 256), jnp.bfloat16)
    out = rf.sorf_projection(empty, params, temperature=1.0, implementation="pallas")
    assert out.shape == (0, 512) and out.dtype == jnp.bfloat16
    grad = jax.grad(
        lambda z: jnp.sum(rf.sorf_projection(z, params, temperature=1.0, implementation="pallas"))
    )(jnp.ones((0, 256)))
    assert grad.shape == (0, 256)
    assert hp.fwht_rows(jnp.ones((0, 1024)), interpret=True).shape == (0, 1024)


def test_no_gradient_flows_to_the_signs(interpret):
    params = rf.draw_sorf(jax.random.key(9), 256, 256)
    z = jax.random.normal(jax.random.key(10), (4, 256))
    grads = jax.grad(
        lambda p: jnp.sum(rf.sorf_projection(z, p, temperature=1.0, implementation="pallas"))
    )(params)
    assert not np.any(np.asarray(grads.signs))


def test_errors_name_the_problem(interpret):
    with pytest.raises(ValueError, match=r"implementation.*\['xla', 'pallas'\].*'triton'"):
        rf.fwht(jnp.ones((2, 256)), implementation="triton")
    with pytest.raises(ValueError, match=r"last dimension in \(256, .*got 128"):
        rf.fwht(jnp.ones((2, 128)), implementation="pallas")
    with pytest.raises(ValueError, match="bfloat16 and float32 inputs, got float16"):
        rf.fwht(jnp.ones((2, 256), jnp.float16), implementation="pallas")
    params = rf.draw_sorf(jax.random.key(0), 100, 100)  # padded_dim 128
    with pytest.raises(ValueError, match=r"sorf_projection: .*got 128"):
        rf.sorf_projection(jnp.ones((2, 100)), params, temperature=1.0, implementation="pallas")
    with pytest.raises(ValueError, match="block_rows.*power of two.*got 3"):
        hp.fwht_rows(jnp.ones((4, 256)), block_rows=3, interpret=True)
    with pytest.raises(ValueError, match=r"`variant` must be one of .*got 'butterfly'"):
        hp.fwht_rows(jnp.ones((4, 256)), variant="butterfly", interpret=True)
    with pytest.raises(ValueError, match=r"`precision` must be one of .*got 'bf16'"):
        hp.fwht_rows(jnp.ones((4, 256)), precision="bf16", interpret=True)


@pytest.mark.skipif(jax.default_backend() == "gpu", reason="the CPU-only refusal")
def test_refused_off_gpu_without_the_interpreter():
    with pytest.raises(ValueError, match=r"NVIDIA GPUs only.*backend is 'cpu'.*'xla'"):
        rf.fwht(jnp.ones((2, 256)), implementation="pallas")


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_lowers_to_triton_for_cuda(monkeypatch, dtype):
    """The kernel's forward and backward pass lower to Triton for CUDA (on any machine):
    every operation in the body has a Pallas Triton lowering (reshapes, 3-d transposes, 2-d
    dots with float32 accumulation, the row loop)."""
    monkeypatch.setattr(hp.jax, "default_backend", lambda: "gpu")
    params = rf.draw_sorf(jax.random.key(0), 1000, 2048)

    def both(z, g):
        y, pullback = jax.vjp(
            lambda v: rf.sorf_projection(v, params, temperature=0.5, implementation="pallas"), z
        )
        return y, pullback(g)[0]

    shapes = (jax.ShapeDtypeStruct((4096, 1000), dtype), jax.ShapeDtypeStruct((4096, 2048), dtype))
    text = jax.jit(both).trace(*shapes).lower(lowering_platforms=("cuda",)).as_text()
    assert text.count("__gpu$xla.gpu.triton") == 2  # forward and backward kernels
    for variant, precision in itertools.product(hp.VARIANTS, hp.PRECISIONS):

        def fwht(x, variant=variant, precision=precision):
            return hp.fwht_rows(x, variant=variant, precision=precision, block_rows=8)

        shape = jax.ShapeDtypeStruct((64, 1024), dtype)
        text = jax.jit(fwht).trace(shape).lower(lowering_platforms=("cuda",)).as_text()
        assert text.count("__gpu$xla.gpu.triton") == 1, (variant, precision)


def test_bandwidth_benchmark_shows_no_traffic_ratio_where_xla_cannot_see_the_kernel(
    capsys, monkeypatch
):
    """XLA's cost analysis cannot see inside a Pallas custom call (it reports -1 or a few
    bytes): the benchmark's XLA/min column shows "-" there, not -0.00 as if measured."""
    import importlib.util
    from pathlib import Path

    path = Path(__file__).parents[1] / "experiments/benchmarks/fwht_bandwidth_benchmark.py"
    monkeypatch.syspath_prepend(str(path.parent))  # its shared helpers, as when run
    spec = importlib.util.spec_from_file_location("fwht_bandwidth_benchmark", path)
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    row = {
        "label": "pallas",
        "median_ms": 1.0,
        "achieved_bytes_per_s": 1e9,
        "fraction_of_peak": None,
        "minimal_bytes": 4096,
        "compile_s": 1.0,
        "check": {"passed": True, "max_error_over_rms": [1e-7]},
    }
    for xla, shown in ((-1.0, "-"), (14.0, "-"), (8192.0, "2.00")):
        bench.print_row({**row, "xla_bytes_accessed": xla})
        line = capsys.readouterr().out
        column = line[34 + 10 + 9 + 8 + 8 :][:8]  # after variant, ms, GB/s, of x*2, of peak
        assert column.strip() == shown, (xla, line)
