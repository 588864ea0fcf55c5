"""Baselines of "A Critical Look at the Evaluation of GNNs under Heterophily: Are We Really Making Progress?"
(Platonov et al., ICLR 2023, arXiv:2302.11640; released code: yandex-research/heterophilous-graphs @ a431395,
``model.py`` and ``modules.py``), one file per architecture: ResNet, GCN, SAGE, GAT and GAT-sep, GT and GT-sep.
They are the ``platonov2023`` variants of the model registry (:mod:`gnnbench.models.registry`, kind
``node_classifier``), built by its ``build_model``.

Every one is the released ``Model``: an input layer (:mod:`.inputs`: a Linear on the chosen inputs) → dropout →
GELU, then ``num_layers`` residual blocks x ← x + module(norm(x)) (:mod:`.network`), a final normalisation and an
output Linear. What the blocks are, per family, is in each file; where gnnbench departs from the released code:
docs/models.md#the-heterophily-zoo-platonov2023.
"""
