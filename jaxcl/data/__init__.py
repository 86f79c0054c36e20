"""Data sets as host-side NumPy arrays; nothing here downloads.

Tabular: loaders return an :class:`ArrayDataset` (float32 features, int32 labels).
Fashion-MNIST comes from its idx files (Debian package ``dataset-fashion-mnist`` or a folder
of your own), digits from scikit-learn, tfds data sets from a prepared array_record folder.

Images: :func:`open_images` streams a split of a prepared tfds array_record folder with
random access; :func:`image_batches` reads its batches by ``(seed, epoch, index)`` in grain
workers (:func:`prepare_fashion_mnist` prepares Fashion-MNIST offline from its idx files,
:func:`prepare_tiny_imagenet` Tiny ImageNet from its zip).
:func:`iterate_batches` turns the arrays into shuffled minibatches.

Graphs: TU's own format (:func:`load_tu`), the GIN text format (:func:`load_gin`) and
Planetoid's ``ind.*`` files (:func:`load_planetoid`) and PPI's GraphSAGE files
(:func:`load_ppi`: 24 graphs, multi-label nodes) give :class:`GraphDataset` /
:class:`NodeDataset`; splits for graph and node classification.

Synthetic: :func:`esco_synthetic` makes ESCo's two-view data set (:class:`PairedViews`);
:func:`synthetic_planetoid` a random graph of Cora's, Citeseer's or Pubmed's size (timing);
:func:`synthetic_tu` random graphs of REDDIT-BINARY's and COIL-DEL's sizes (checking configs,
timing); :func:`synthetic_ppi` random graphs of PPI's sizes.
"""

from jaxcl.data._arrays import ArrayDataset, FeatureTransform
from jaxcl.data._batches import iterate_batches, num_batches
from jaxcl.data._esco_synthetic import PairedViews, esco_synthetic
from jaxcl.data._fashion_mnist import load_fashion_mnist
from jaxcl.data._gin import load_gin
from jaxcl.data._graph_edit import drop_tagged_nodes, edit_triplets, with_degree_features
from jaxcl.data._graph_io import GraphFormatError
from jaxcl.data._graph_types import Graph, GraphDataset, NodeDataset
from jaxcl.data._host_crop import HostCrop
from jaxcl.data._idx import read_idx
from jaxcl.data._images import ImageSource, epoch_order, image_batches, open_images
from jaxcl.data._planetoid import load_planetoid
from jaxcl.data._ppi import load_ppi, synthetic_ppi
from jaxcl.data._sklearn import load_digits_tabular
from jaxcl.data._splits import random_node_split, stratified_kfold
from jaxcl.data._synthetic_graph import synthetic_planetoid
from jaxcl.data._synthetic_tu import synthetic_tu
from jaxcl.data._tfds import load_tfds_array_record
from jaxcl.data._tfds_write import prepare_fashion_mnist, write_tfds_images
from jaxcl.data._tiny_imagenet import prepare_tiny_imagenet
from jaxcl.data._tu import load_tu

__all__ = [
    "ArrayDataset",
    "FeatureTransform",
    "Graph",
    "GraphDataset",
    "GraphFormatError",
    "HostCrop",
    "ImageSource",
    "NodeDataset",
    "PairedViews",
    "drop_tagged_nodes",
    "edit_triplets",
    "epoch_order",
    "esco_synthetic",
    "image_batches",
    "iterate_batches",
    "load_digits_tabular",
    "load_fashion_mnist",
    "load_gin",
    "load_planetoid",
    "load_ppi",
    "load_tfds_array_record",
    "load_tu",
    "num_batches",
    "open_images",
    "prepare_fashion_mnist",
    "prepare_tiny_imagenet",
    "random_node_split",
    "read_idx",
    "stratified_kfold",
    "synthetic_planetoid",
    "synthetic_ppi",
    "synthetic_tu",
    "with_degree_features",
    "write_tfds_images",
]
