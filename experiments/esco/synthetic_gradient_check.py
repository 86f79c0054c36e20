"""Does float32 carry the encoder's gradient on ESCo's synthetic data? For each reading of
App. B.1's generator and each Table 1 row, one batch's gradient at initialisation computed
in float32 (as training does) and in float64, and how far apart they are.

    python experiments/esco/synthetic_gradient_check.py            # the configs' sizes
    python experiments/esco/synthetic_gradient_check.py --variant quick

With softmax after every layer of the feature MLP the examples differ by ~3e-6 of their
size; fed unscaled, so do the l2-normalised embeddings (~3e-6 rms), the loss equals
log(2N - 1) to ~2e-8, and the float32 gradient is rounding noise. Measured at the configs'
sizes (``--variant cpu``, batch 256, seed 0; commit 90ee9de, 2026-11-29, Zen 3 AMD EPYC,
~1 min; ``experiments/esco/results/synthetic_gradient_check.json``): the float32 gradient
is off by 1.5e4 (RFF), 1.7e4 (SORF) and 1.9e5 (SimCLR) times the float64 gradient's norm,
cosine with it below 0.012. Standardised, or with ReLU hidden layers and softmax only on the
output, the two agree to 6e-7 to 2e-2 (SORF the largest), cosine 1.000. The float32 pass
runs as training does; the float64 one under ``jax.enable_x64``, random draws included.
Writes ``--out/synthetic_gradient_check.json``.
"""

from __future__ import annotations

import argparse
import json
import os

HERE = os.path.dirname(os.path.abspath(__file__))
READINGS = {
    "softmax after every layer, raw": {"standardize": False, "hidden_activation": "softmax"},
    "softmax after every layer, standardised": {
        "standardize": True,
        "hidden_activation": "softmax",
    },
    "ReLU hidden, softmax output, raw": {"standardize": False, "hidden_activation": "relu"},
}


def check(variant: str | None, batch: int, seed: int) -> list[dict]:
    import jax
    import jax.numpy as jnp
    import numpy as np
    from flax import nnx

    from jaxcl import methods
    from jaxcl.configs import esco_synthetic
    from jaxcl.training import _paired_task

    def flat(tree):
        return np.concatenate([np.ravel(np.asarray(v, np.float64)) for v in jax.tree.leaves(tree)])

    out = []
    for reading, data_keys in READINGS.items():
        for row in ("simclr", "rff", "sorf"):
            c = esco_synthetic.make(row, variant)
            with c.unlocked():
                c.data.update(data_keys)
            ds = _paired_task.load_dataset(c.data)
            method = methods.get("esco_pairs")(c)
            spec = methods.DataSpec("paired", ds.num_features, ds.num_classes)
            graphdef, params = nnx.split(method.build(spec, nnx.Rngs(seed)))
            x = np.stack([ds.x_a[:batch], ds.x_b[:batch]], axis=1)
            key = jax.random.key(seed)

            def loss(p, x, method=method, graphdef=graphdef, key=key):
                model = nnx.merge(graphdef, p)
                return method.loss(model, methods.Batch(x=x, y=None), key, {})[0]

            grad = jax.jit(jax.value_and_grad(loss))
            l32, g32 = grad(params, jnp.asarray(x, jnp.float32))  # as training computes it
            z = np.array(nnx.merge(graphdef, params)(jnp.asarray(ds.x, jnp.float32)), np.float64)
            z /= np.linalg.norm(z, axis=1, keepdims=True)
            with jax.enable_x64(True):  # everything float64, the random frequencies too
                p64 = jax.tree.map(lambda v: jnp.asarray(v, jnp.float64), params)
                l64, g64 = grad(p64, jnp.asarray(x, jnp.float64))
                a, b = flat(g32), flat(g64)
            out.append(
                {
                    "reading": reading,
                    "row": row,
                    "relative_spread": _paired_task.relative_spread(ds.x),
                    # rms distance of the l2-normalised embeddings of x from their mean
                    "embedding_spread": float(np.sqrt(((z - z.mean(0)) ** 2).sum(1).mean())),
                    "loss64_minus_log_2n_minus_1": float(l64) - float(np.log(2 * len(x) - 1)),
                    "grad64_norm": float(np.linalg.norm(b)),
                    "relative_error": float(np.linalg.norm(a - b) / np.linalg.norm(b)),
                    "cosine": float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b))),
                }
            )
            r = out[-1]
            print(
                f"| {reading} | {row} | {r['relative_spread']:.1e} | {r['embedding_spread']:.1e} "
                f"| {r['grad64_norm']:.2e} "
                f"| {r['relative_error']:.1e} | {r['cosine']:+.3f} |",
                flush=True,
            )
    return out


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--variant", choices=["cpu", "quick"], default="cpu")
    parser.add_argument("--batch", type=int, default=256)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", default=os.path.join(HERE, "results"))
    args = parser.parse_args(argv)
    print(
        "| reading | row | examples' spread | embeddings' spread | float64 gradient norm"
        " | float32 error | cosine |"
    )
    print("|---|---|---|---|---|---|---|")
    rows = check(args.variant, args.batch, args.seed)
    os.makedirs(args.out, exist_ok=True)
    path = os.path.join(args.out, "synthetic_gradient_check.json")
    with open(path, "w") as f:
        json.dump({"variant": args.variant, "batch": args.batch, "rows": rows}, f, indent=1)
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
