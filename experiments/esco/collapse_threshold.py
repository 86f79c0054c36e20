"""ESCo's synthetic study: the trade-off lambda above which training starts by collapsing.

Near a collapsed encoder (every normalised embedding close to one point) ESCo's loss per
anchor, ``lam * |a_i - b_i|^2 + log sum_j exp(-|a_i - c_j|^2 / (2 tau))``, is to first
order in the spread

    log M + lam * pos - neg / (2 tau),

with ``pos`` the mean squared distance of the positive pairs and ``neg`` the mean over an
anchor's ``M`` kernel terms (its negative set; with ``negatives='both'``, the other view's
rows, its own positive among them, and its own view's other rows). Scaling every
deviation from the common point by ``s`` scales both by ``s^2``: shrinking the spread lowers
the loss, and gradient descent follows it into collapse, when

    lam > lam* = neg / (2 tau pos) = 1 / (2 tau rho),   rho = pos / neg,

``rho`` being the share of the spread that differs between the two views of an example. It
holds for every estimator (exact, RFF, SORF) alike: they estimate the same kernel sums.
This script measures ``rho`` and ``lam*`` on the untrained encoder of the Table 1 configs
(``jaxcl/configs/esco_synthetic.py``: ``mlp_plain`` 1024-1024-1024-512, flax's default
initialisation from ``nnx.Rngs(seed)``), on the 4000 views of the study's data under each
reading of App. B.1 the README reports: ReLU hidden layers with a softmax output, fed as
they are (the configs') or standardised; softmax after every layer, standardised. It says
from which lambda a run is expected to collapse at its first steps, to set beside the
sweep (``synthetic_lambda_sweep.py``), where the ESCo rows collapse from lambda 0.9 on.

Usage (2 CPU cores: about a minute)::

    python experiments/esco/collapse_threshold.py [--seeds 0 1 2] [--out DIR]

Writes ``collapse_threshold.json`` (and prints the table) to ``--out`` (default
``experiments/esco/results``).
"""

from __future__ import annotations

import argparse
import json
import os
import time

import jax
import jax.numpy as jnp
import numpy as np
from flax import nnx

from jaxcl import data, methods
from jaxcl.configs.esco_synthetic import make

HERE = os.path.dirname(os.path.abspath(__file__))
READINGS = {  # name -> esco_synthetic keywords
    "relu_softmax_output_raw (Table 1 configs)": dict(hidden_activation="relu", standardize=False),
    "relu_softmax_output_standardized": dict(hidden_activation="relu", standardize=True),
    "softmax_every_layer_standardized": dict(hidden_activation="softmax", standardize=True),
}


def geometry(a: np.ndarray, b: np.ndarray, tau: float) -> dict:
    """``pos``, ``neg`` over the 'both' negative set (2N - 1 terms an anchor), ``rho`` and
    ``lam*`` of l2-normalised views ``a``, ``b`` (anchored on each view, averaged)."""
    a = a / np.linalg.norm(a, axis=1, keepdims=True)
    b = b / np.linalg.norm(b, axis=1, keepdims=True)
    n = len(a)
    pos = float(np.mean(np.sum((a - b) ** 2, axis=1)))
    sa, sb = a.sum(0), b.sum(0)
    # mean |x_i - y_j|^2 = 2 - 2 mean x_i . y_j for unit rows
    cross = 2.0 - 2.0 * float(sa @ sb) / n**2  # j over all of the other view, positive included
    own = 2.0 - 2.0 * (float(sa @ sa) - n) / (n * (n - 1))  # j != i in the anchor's view
    own_b = 2.0 - 2.0 * (float(sb @ sb) - n) / (n * (n - 1))
    neg = 0.5 * ((n * cross + (n - 1) * own) + (n * cross + (n - 1) * own_b)) / (2 * n - 1)
    both = np.concatenate([a, b])
    total = both.sum(0)
    mean_cosine = (float(total @ total) - 2 * n) / (2 * n * (2 * n - 1))
    rho = pos / neg
    return {
        "pos": pos,
        "neg": neg,
        "rho": rho,
        "lam_star": 1.0 / (2.0 * tau * rho),
        "mean_cosine": mean_cosine,
    }


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--out", default=os.path.join(HERE, "results"))
    args = parser.parse_args(argv)
    config = make("rff")
    tau = float(config.method.temperature)
    t0 = time.perf_counter()
    rows = []
    for reading, kw in READINGS.items():
        ds = data.esco_synthetic(
            config.data.num_samples,
            seed=config.data.data_seed,
            num_features=config.data.num_features,
            **kw,
        )
        spec = methods.DataSpec("paired", ds.num_features, ds.num_classes)
        for seed in args.seeds:
            encoder, _ = methods.build_encoder(config.model, spec, nnx.Rngs(seed))
            forward = jax.jit(lambda x, encoder=encoder: encoder(x))
            a = np.asarray(forward(jnp.asarray(ds.x_a)), np.float64)
            b = np.asarray(forward(jnp.asarray(ds.x_b)), np.float64)
            rows.append({"reading": reading, "seed": seed, **geometry(a, b, tau)})
            r = rows[-1]
            print(
                f"{reading:44s} seed {seed}: mean cosine {r['mean_cosine']:.6f}  "
                f"pos {r['pos']:.3e}  neg {r['neg']:.3e}  rho {r['rho']:.3f}  "
                f"lam* {r['lam_star']:.2f}",
                flush=True,
            )
    os.makedirs(args.out, exist_ok=True)
    path = os.path.join(args.out, "collapse_threshold.json")
    record = {
        "temperature": tau,
        "negatives": "both",
        "jax_version": jax.__version__,
        "device": str(jax.devices()[0]),
        "wall_s": time.perf_counter() - t0,
        "rows": rows,
    }
    with open(path, "w") as f:
        json.dump(record, f, indent=1)
    print(f"wrote {path} ({record['wall_s']:.0f} s)")


if __name__ == "__main__":
    main()
