"""DACL Table 1, CIFAR-10 column (pixels permuted and flattened: the tabular protocol).

Paper, linear top-1: No-Pretraining 26.8, Gaussian-noise 27.4, DACL 37.6, DACL+ 39.7,
full supervised 35.2. The argument names the row (default ``dacl``):

    python -m jaxcl.main --config=experiments/dacl/tabular_cifar10.py:dacl \
        --config.data.data_dir=DIR --workdir=WD
    python -m jaxcl.main --config=experiments/dacl/tabular_cifar10.py:gaussian ...

Setup: jaxcl/configs/dacl_tabular.py (the Fashion-MNIST column's paper scale: 12-layer
MLP of 1024, batch 4096, 1000 epochs, LARS 0.1). CIFAR-10 is read from a tfds folder
prepared with `tfds build cifar10 --file_format=array_record` through the same
``tfds.data_source`` as the image task (``jaxcl.data.load_tfds_array_record``). Not run
here (CIFAR-10 is not on this machine, no accelerator was lent); ``:quick`` runs two steps
on tfds mock data in tests/test_image_task.py.
"""

from jaxcl.configs.dacl_tabular import make_cifar10


def get_config(arg=None):
    return make_cifar10(arg)
