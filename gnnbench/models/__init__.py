"""Model zoo: one architecture per module, composed with input encoders and a task head.

Every network of the papers' zoos, and a user's own class, is named in :mod:`gnnbench.models.registry` (family
+ variant, the key-ownership rules; no torch until a class is loaded) and built by
:func:`gnnbench.models.build.build_model`, the single entry point (the model contract). Models from outside the
package: :mod:`gnnbench.models.plugins` (naming, loading, keys) and :mod:`gnnbench.models.adapters` (behind the
contract). The contract a benchmark architecture implements inside the composition is in
:mod:`gnnbench.models.base`; this package module imports nothing, so that naming a model needs no torch.

Input dropout: ``in_feat_dropout`` is applied after the input encoders by every model on every dataset. The
released code of Dwivedi et al. ignores it for some networks (GatedGCN on most datasets, GIN and MoNet everywhere);
every published config that has the key sets it to 0, so results are unaffected and a user's explicit setting is
honoured (``docs/protocols/benchmarking-gnns.md``, departures from the released code).
"""
