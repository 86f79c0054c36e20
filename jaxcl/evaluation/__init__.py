"""Evaluation protocols for frozen representations: linear probes, k-fold, SVM, node LR, kNN.

The classifiers take frozen features ``[n, dim]`` (host NumPy or jax arrays) and integer
labels ``[n]`` and return accuracies in [0, 1]; the multi-label classifier takes ``[n, C]``
0/1 labels and returns micro-F1, the clustering NMI and ARI (ARI can be negative), the edit
triplets an accuracy and an AUC. The classifiers are trained in JAX, each training run one
compiled program on the default device (a GPU/TPU when there is one); ``svm_kfold_accuracy``
runs on the host (scikit-learn's liblinear, or jaxcl's exact Newton solver of the same SVM
with ``solver='newton'``), as do the clustering and the edit triplets' scores. Results are
deterministic given ``seed``.

* :func:`linear_probe` -- SimCLR/DACL linear evaluation: minibatch LARS/SGD/Adam, cosine decay.
* :func:`kfold_linear_accuracy` -- DACL's graph protocol: full-batch Adam, stratified 10-fold.
* :func:`svm_kfold_accuracy` -- InfoGraph's (and m-Mix's) linear SVM with C chosen by inner CV.
* :func:`node_logistic_regression` -- GRACE/PyGCL node classification, best-validation test acc.
  :func:`node_logistic_regression_runs` the same for many seeds at once (MVGRL's 50 runs),
  :func:`node_multilabel_logistic_regression_runs` its multi-label form (PPI, micro-F1).
* :func:`kmeans_nmi_ari` -- node clustering (MVGRL, m-Mix Table 8): k-means, NMI and ARI.
* :func:`edit_triplet_scores` -- graph-edit triplets (m-Mix Table 6): triplet accuracy, pair
  AUC; :func:`wl_kernel_similarity` its WL-kernel baseline (:func:`discrete_labels`: whether
  node features can label it), :func:`similarity_scores` the two scores from any similarities.
* :func:`knn_accuracy`, :func:`knn_predict` -- cosine-similarity weighted kNN (InstDisc).
"""

from jaxcl.evaluation._clustering import kmeans_nmi_ari
from jaxcl.evaluation._graph_edit import (
    discrete_labels,
    edit_triplet_scores,
    similarity_scores,
    wl_kernel_similarity,
)
from jaxcl.evaluation._kfold import kfold_linear_accuracy
from jaxcl.evaluation._knn import knn_accuracy, knn_predict
from jaxcl.evaluation._linear_probe import linear_probe
from jaxcl.evaluation._node import node_logistic_regression, node_logistic_regression_runs
from jaxcl.evaluation._node_multilabel import node_multilabel_logistic_regression_runs
from jaxcl.evaluation._svm import svm_kfold_accuracy

__all__ = [
    "discrete_labels",
    "edit_triplet_scores",
    "kfold_linear_accuracy",
    "kmeans_nmi_ari",
    "knn_accuracy",
    "knn_predict",
    "linear_probe",
    "node_logistic_regression",
    "node_logistic_regression_runs",
    "node_multilabel_logistic_regression_runs",
    "similarity_scores",
    "svm_kfold_accuracy",
    "wl_kernel_similarity",
]
