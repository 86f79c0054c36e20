"""ESCo Table 1 row ``sorf``: see :mod:`jaxcl.configs.esco_synthetic`.

    python -m jaxcl.main --config=experiments/esco/synthetic_sorf.py:cpu \
        --workdir=/tmp/esco_synthetic_sorf
    # paper scale (1500 epochs at lr 1e-5): no argument; smoke test: :quick

RESULTS_PLACEHOLDER
"""

from jaxcl.configs import esco_synthetic


def get_config(arg: str | None = None):
    return esco_synthetic.make("sorf", arg)
