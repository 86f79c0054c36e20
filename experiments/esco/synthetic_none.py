"""ESCo Table 1 row ``none``: see :mod:`jaxcl.configs.esco_synthetic`.

    python -m jaxcl.main --config=experiments/esco/synthetic_none.py:cpu \
        --workdir=/tmp/esco_synthetic_none
    # paper scale (1500 epochs at lr 1e-5): no argument; smoke test: :quick

Paper (ESCo Table 1): not in the paper (the randomly initialised encoder, a reference).
Measured (the encoder as initialised, 10-fold CV logistic regression on the embeddings of
the 4000 examples; the generator's softmax outputs fed unscaled, the default since commit
9261bcb; seeds 0, 1, 2 with ``--config.repeats=1 --config.seed=S``; commit 1230554 with
``--config.data.standardize=False``, 2026-11-29, 2 Zen 5 AMD EPYC cores shared by two runs):
54.53 ± 0.35 (54.55, 54.18, 54.88). Every trained row lies below it (SimCLR 39.07, ESCo-RFF
39.20, ESCo-SORF 39.99): on these features contrastive training lowers the accuracy from
where a random encoder starts.

With standardised features (``--config.data.standardize=True``, the default before 9261bcb;
``:cpu``, seeds 0-2, commit 98b7091, shared cores): 42.73 ± 0.36 (43.03, 42.95, 42.23). The
README's ESCo section compares the rows.
"""

from jaxcl.configs import esco_synthetic


def get_config(arg: str | None = None):
    return esco_synthetic.make("none", arg)
