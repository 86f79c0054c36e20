"""What m-Mix's node mixers weigh: statistics of trained runs' mixing weights over the graph.

m-Mix's premise (Section 3, Proposition 1) is that a node's hard negative mixes the nodes
*most similar* to it. This script loads finished node runs (``mvgrl_mmix``, partners
``wp``), recomputes each node's mixing weights over itself and its neighbours from the
trained parameters, checks them against the mixer's own output (``mixers.mp_mix`` /
``mo_mix``), and reports per run:

* ``corr_logit_cos``: Pearson correlation over the edges between the mixing logit of ``j``
  for ``i`` and the cosine similarity of their embeddings ``z_i``, ``z_j`` (mo-mix's logit
  *is* that cosine: 1; mp-mix's is ``cos(z_i p_m, z_j p_n)``);
* ``entropy_ratio``: each node's weight entropy over its partners and itself divided by
  that of uniform weights (1: the mix is a plain mean; mean over nodes with neighbours);
* ``logit_range``: each node's largest minus smallest partner logit (mean), the room the
  softmax at temperature 1 has (weights differ by at most ``exp(range)``), and
  ``mean_logit`` over the edges;
* ``self_weight``: the mean weight of the node itself;
* ``same_label_weight`` against ``same_label_share``: the weight the neighbours of the
  node's own class get, against their share among its neighbours;
* mp-mix: ``cos_pm_minus_pn``, the cosine between ``p_m`` and ``-p_n`` (flattened): Eq. 6's
  diversity loss is at its minimum when ``z p_n = -c z p_m``.

Usage (Cora, seed 0; runs of ``experiments/mmix/node_<row>.py``)::

    python experiments/mmix/mixing_weights.py --data cora --runs mp=/tmp/w_mp mo=/tmp/w_mo

writes ``experiments/mmix/results/mixing_weights_<data><tag>.{json,png}``.
"""

from __future__ import annotations

import argparse
import json
import os

import numpy as np

from jaxcl import training

HERE = os.path.dirname(os.path.abspath(__file__))


def _unit(x: np.ndarray) -> np.ndarray:
    return x / np.maximum(np.linalg.norm(x, axis=-1, keepdims=True), 1e-12)


def weights_of(run, state) -> dict:
    """Per-edge logits and weights of one trained run, checked against its mixer."""
    import jax
    import jax.numpy as jnp

    from jaxcl import mixers

    hp = run.method.hp
    if hp.partners != "wp" or hp.mixing not in ("mp", "mo"):
        raise ValueError(f"{hp.mixing!r} / {hp.partners!r}: expected mp or mo with partners wp")
    model = run.model(state)
    inputs = run.task.graph
    with jax.set_mesh(run.mesh):
        z_a, _ = model.embed(inputs)
    z = np.asarray(z_a, np.float64)
    g = inputs.graph
    s, r = np.asarray(g.senders), np.asarray(g.receivers)
    n = z.shape[0]
    if hp.mixing == "mp":
        p_m, p_n = (np.asarray(p, np.float64) for p in model.projections())
        q, k = _unit(z @ p_m), _unit(z @ p_n)
        edge_logit, self_logit = np.sum(q[r] * k[s], 1), np.sum(q * k, 1)
    else:
        u = _unit(z)
        edge_logit, self_logit = np.sum(u[r] * u[s], 1), np.ones(n)
    # softmax per receiver at mix_temperature: mp over itself and its neighbours; mo over
    # its neighbours, the node itself weighted C
    t = hp.get("mix_temperature", 1.0)
    top = np.full(n, -np.inf)
    np.maximum.at(top, r, edge_logit / t)
    if hp.mixing == "mp":
        top = np.maximum(top, self_logit / t)
    e_edge = np.exp(edge_logit / t - top[r])
    denom = np.zeros(n)
    np.add.at(denom, r, e_edge)
    if hp.mixing == "mp":
        e_self = np.exp(self_logit / t - top)
        denom += e_self
        w_edge, w_self = e_edge / denom[r], e_self / denom
    else:
        has = denom > 0
        w_edge = (1.0 - hp.self_weight) * e_edge / np.where(has, denom, 1.0)[r]
        w_self = np.where(has, hp.self_weight, 1.0)
    mixed = w_self[:, None] * z
    np.add.at(mixed, r, w_edge[:, None] * z[s])
    edges = dict(senders=g.senders, receivers=g.receivers)
    zj = jnp.asarray(z_a)
    want = (
        mixers.mp_mix(zj, *model.projections(), temperature=t, **edges)
        if hp.mixing == "mp"
        else mixers.mo_mix(zj, self_weight=hp.self_weight, temperature=t, **edges)
    )
    err = float(np.max(np.abs(mixed - np.asarray(want))) / np.max(np.abs(want)))
    if err > 1e-4:
        raise AssertionError(f"recomputed weights do not give the mixer's output: {err:.2e}")
    u = _unit(z)
    out = dict(
        mixing=hp.mixing,
        mix_temperature=float(t),
        z=z,
        senders=s,
        receivers=r,
        edge_logit=edge_logit,
        edge_cos=np.sum(u[r] * u[s], 1),
        w_edge=w_edge,
        w_self=w_self,
        check_rel_err=err,
    )
    if hp.mixing == "mp":
        out["cos_pm_minus_pn"] = float(
            np.sum(p_m * -p_n) / (np.linalg.norm(p_m) * np.linalg.norm(p_n))
        )
    return out


def summarize(w: dict, labels: np.ndarray) -> dict:
    s, r, n = w["senders"], w["receivers"], w["z"].shape[0]
    deg = np.bincount(r, minlength=n)
    has = deg > 0
    ent = np.zeros(n)
    np.add.at(ent, r, -w["w_edge"] * np.log(np.maximum(w["w_edge"], 1e-30)))
    ent += -w["w_self"] * np.log(np.maximum(w["w_self"], 1e-30))
    # The entropy of uniform neighbour weights beside the node's own weight: mo-mix fixes that
    # at C, so even uniform weights stay below log(deg + 1) (0.94 of it on Cora at C = 0.2).
    c = np.clip(w["w_self"], 1e-30, 1.0)
    uniform = -c * np.log(c) - (1 - c) * np.log(np.maximum(1 - c, 1e-30) / np.maximum(deg, 1))
    lo, hi = np.full(n, np.inf), np.full(n, -np.inf)
    np.minimum.at(lo, r, w["edge_logit"])
    np.maximum.at(hi, r, w["edge_logit"])
    same = labels[s] == labels[r]
    w_same, n_same = np.zeros(n), np.zeros(n)
    np.add.at(w_same, r, np.where(same, w["w_edge"], 0.0))
    np.add.at(n_same, r, same.astype(float))
    w_nb = 1.0 - w["w_self"]
    out = {
        "corr_logit_cos": float(np.corrcoef(w["edge_logit"], w["edge_cos"])[0, 1]),
        "entropy_ratio": float(np.mean(ent[has] / np.log(deg[has] + 1.0))),
        # ... and against uniform neighbour weights with the node's own weight as it is
        "entropy_ratio_to_uniform": float(np.mean(ent[has] / uniform[has])),
        # the logits before mix_temperature divides them (recorded beside)
        "logit_range": float(np.mean((hi - lo)[deg > 1])),
        "mix_temperature": w["mix_temperature"],
        "mean_logit": float(np.mean(w["edge_logit"])),
        "self_weight": float(np.mean(w["w_self"][has])),
        "same_label_weight": float(np.mean(w_same[has] / w_nb[has])),
        "same_label_share": float(np.mean(n_same[has] / deg[has])),
        "check_rel_err": w["check_rel_err"],
    }
    if "cos_pm_minus_pn" in w:
        out["cos_pm_minus_pn"] = w["cos_pm_minus_pn"]
    return out


def plot(weights: dict, path: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(weights), figsize=(4.5 * len(weights), 4), squeeze=False)
    for ax, (name, w) in zip(axes[0], weights.items(), strict=True):
        ax.scatter(w["edge_cos"], w["edge_logit"], s=2, alpha=0.3)
        ax.set_xlabel("cos(z_i, z_j) over the edges")
        ax.set_ylabel("mixing logit of j for i")
        ax.set_title(name)
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", required=True)
    parser.add_argument("--runs", nargs="+", required=True, help="name=workdir")
    parser.add_argument("--tag", default="")
    parser.add_argument("--out", default=os.path.join(HERE, "results"))
    args = parser.parse_args(argv)
    import ml_collections

    weights, table = {}, {}
    for item in args.runs:
        name, workdir = item.split("=", 1)
        cfg = json.load(open(os.path.join(workdir, "config.json")))
        config = training.conform(ml_collections.ConfigDict(cfg))
        run, state = training.load_run(config, workdir)
        weights[name] = weights_of(run, state)
        labels = np.asarray(run.task.ds.labels)
        table[name] = {"workdir": workdir, "seed": config.seed, **summarize(weights[name], labels)}
        print(name, json.dumps({k: v for k, v in table[name].items() if k != "workdir"}))
    os.makedirs(args.out, exist_ok=True)
    stem = os.path.join(args.out, f"mixing_weights_{args.data}{args.tag}")
    with open(stem + ".json", "w") as f:
        json.dump(table, f, indent=1)
    plot(weights, stem + ".png")
    print(f"wrote {stem}.json and .png")


if __name__ == "__main__":
    main()
