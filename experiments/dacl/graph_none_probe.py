"""What moves DACL Table 4's No-Pretraining row: node features, file format, GIN init.

The row scores a randomly initialised GIN (batch norm at its initial running averages, so
the identity in evaluation mode) with DACL's linear protocol (100 full-batch Adam updates
at lr 0.01, no feature scaling). Without batch-norm statistics to rescale them, the
embeddings' size follows the initial weights, and the unscaled linear classifier is
sensitive to that size. This script re-evaluates the row, 5 seeds each, under:

* ``features``: ``auto`` (ours: one-hot tags; one-hot degree for IMDB) or ``constant``
  (a 1 per node: what InfoGraph's code feeds PyG's featureless IMDB graphs);
* ``format``: ``tu`` or ``gin`` files for MUTAG;
* ``init``: ``default`` (flax: LeCun-normal kernels, zero biases) or ``xavier``
  (Glorot-uniform kernels, zero biases: the ``init_emb`` both released codes apply to
  every ``nn.Linear`` of the model, the GIN's included).

Usage::

    python experiments/dacl/graph_none_probe.py mutag:auto:tu:default mutag:auto:tu:xavier ...

Each argument is ``dataset:features:format:init``; prints one JSON line per argument.
"""

from __future__ import annotations

import functools
import json
import sys
import time

import jax
import numpy as np
from flax import nnx

from jaxcl import methods
from jaxcl.configs import dacl_graph
from jaxcl.training import make_mesh, make_task


def _xavier(model, seed):
    """Glorot-uniform kernels and zero biases for every linear layer of the encoder."""
    key = jax.random.key(10_000 + seed)
    for _, layer in nnx.iter_graph(model.encoder):
        if isinstance(layer, nnx.Linear):
            key, sub = jax.random.split(key)
            layer.kernel[...] = jax.nn.initializers.glorot_uniform()(sub, layer.kernel.shape)
            layer.bias[...] = np.zeros(layer.bias.shape, np.float32)


@functools.partial(jax.jit, static_argnums=(0, 1))
def _embed(graphdef, method, state, batch):
    return method.features(nnx.merge(graphdef, state), batch)


def probe(dataset: str, features: str, fmt: str, init: str, seeds: int = 5) -> dict:
    config = dacl_graph.make("none", dataset)
    config.data.node_features = features
    config.data.graph_format = fmt
    method = methods.get("none")(config)
    config.mesh.data = 1
    task = make_task(config, method, make_mesh(1))
    scores = []
    for seed in range(seeds):
        config.seed = seed  # the folds and the classifier init, as repeats do
        model = method.build(task.spec, rngs=nnx.Rngs(seed))
        if init == "xavier":
            _xavier(model, seed)
        model.eval()
        graphdef, state = nnx.split(model)
        embed_fn = functools.partial(_embed, graphdef, method, state)
        scores.append(task.evaluate(embed_fn, 0)["cv_top1"])
    x = task.embeddings(embed_fn)
    return {
        "run": f"{dataset}:{features}:{fmt}:{init}",
        "mean": float(np.mean(scores)),
        "std": float(np.std(scores, ddof=1)) if len(scores) > 1 else 0.0,  # sample std
        "per_seed": scores,
        "num_features": task.spec.num_features,
        "embedding_abs_mean": float(np.abs(x).mean()),
    }


if __name__ == "__main__":
    for arg in sys.argv[1:]:
        t = time.perf_counter()
        out = probe(*arg.split(":"))
        out["seconds"] = round(time.perf_counter() - t, 1)
        print(json.dumps(out), flush=True)
