"""Model zoo: one architecture per module, composed with input encoders and a task head.

Every network of the three papers' zoos is registered in :mod:`gnnbench.models.registry` (family + variant, the
model contract, the key-ownership rules); ``build_model(config, data)`` there is the single entry point and is
re-exported here. ``ARCHITECTURES`` maps the benchmark's (``dwivedi2020``) families to their architecture classes
(imported on first use, so a run loads only its own model's module). The contract a benchmark architecture
implements inside the composition is in :mod:`gnnbench.models.base`.

Input dropout: ``in_feat_dropout`` is applied after the input encoders by every model on every dataset. The
released code of Dwivedi et al. ignores it for some networks (GatedGCN on most datasets, GIN and MoNet everywhere);
every published config that has the key sets it to 0, so results are unaffected and a user's explicit setting is
honoured (``docs/protocols/benchmarking-gnns.md``, departures from the released code).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping

from gnnbench.models.base import Architecture
from gnnbench.models.net import GraphNet, count_parameters
from gnnbench.models.registry import (
    DWIVEDI2020,
    REGISTRY,
    ModelData,
    build_model,
    build_stacked,
    families,
    model_info,
)


class _Architectures(Mapping):
    """Family → architecture class of the benchmark's zoo, importing ``gnnbench.models.<module>`` lazily."""

    def __getitem__(self, name: str) -> type[Architecture]:
        if (name, DWIVEDI2020) not in REGISTRY:
            raise KeyError(name)
        return REGISTRY[(name, DWIVEDI2020)].load()

    def __iter__(self) -> Iterator[str]:
        return iter(families(DWIVEDI2020))

    def __len__(self) -> int:
        return len(families(DWIVEDI2020))


ARCHITECTURES: Mapping[str, type[Architecture]] = _Architectures()

__all__ = ["ARCHITECTURES", "GraphNet", "ModelData", "build_model", "build_stacked", "count_parameters",
           "model_info"]
