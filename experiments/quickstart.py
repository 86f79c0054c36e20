"""The quickstart (also the default of ``python -m jaxcl.main``); see jaxcl/configs/quickstart.py.

python -m jaxcl.main --config=experiments/quickstart.py --workdir=/tmp/quickstart
"""

from jaxcl.configs.quickstart import get_config

__all__ = ["get_config"]
