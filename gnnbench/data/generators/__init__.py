"""Registry of dataset generators.

A generator turns (parameters, seed) into graphs in columnar form plus their :class:`DatasetMeta`.
Every random draw comes from NumPy generators seeded from ``seed`` in a fixed order, so the same seed
and parameters give byte-identical files.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from gnnbench.data.download import fetch
from gnnbench.data.generators import (
    csbm,
    csl,
    cycles,
    cycles_release,
    graph_families,
    graph_file,
    graph_theory_prop,
    heterophily,
    molecules,
    npz,
    ogbl_collab,
    planetoid,
    pyg,
    released,
    sbm,
    superpixels,
    tsp,
    tu,
    wikics,
)
from gnnbench.data.generators.base import RAW_DIR, Generator, NonNegative
from gnnbench.data.meta import DatasetMeta
from gnnbench.data.store import GraphColumns
from gnnbench.errors import ConfigError
from gnnbench.io import sha256_file

GENERATORS: dict[str, Generator] = {g.name: g for g in (
    sbm.PATTERN, sbm.CLUSTER, csl.CSL, tsp.TSP, graph_theory_prop.GRAPH_THEORY_PROP, cycles.CYCLES,
    superpixels.SUPERPIXELS_MNIST, superpixels.SUPERPIXELS_CIFAR10, superpixels.SUPERPIXELS_DIGITS,
    cycles_release.CYCLES_RELEASE, planetoid.PLANETOID, npz.NPZ, csbm.CSBM, tu.TU, graph_families.GRAPH_FAMILIES,
    wikics.WIKICS, released.RELEASED, molecules.ZINC, molecules.AQSOL, ogbl_collab.OGBL_COLLAB, pyg.PYG,
    graph_file.GRAPH_FILE, heterophily.HETEROPHILY)}


def generator_names() -> list[str]:
    """Names of every registered generator, sorted."""
    return sorted(GENERATORS)


def get_generator(name: str, where: str = "generator") -> Generator:
    """The generator registered as ``name``; a ConfigError at ``where`` listing the known names otherwise."""
    if name not in GENERATORS:
        raise ConfigError(f"{where}: unknown generator {name!r}; choose one of {', '.join(sorted(GENERATORS))}")
    return GENERATORS[name]


def resolve_params(generator: Generator, params: dict | None, where: str,
                   base_dir: str | os.PathLike | None = None) -> dict:
    """Defaults overridden by ``params``; unknown keys and wrong types raise a ConfigError naming them. A relative
    path in one of the generator's ``path_params`` is made absolute against ``base_dir`` (the suite file's folder)
    when it is given."""
    resolved = dict(generator.defaults)
    for key, value in (params or {}).items():
        if key not in generator.defaults:
            known = ", ".join(sorted(generator.defaults))
            raise ConfigError(f"{where}.{key}: unknown parameter of generator {generator.name!r}; known: {known}")
        resolved[key] = _check_type(value, generator.defaults[key], f"{where}.{key}")
        if key in generator.path_params and base_dir is not None and value:
            resolved[key] = str(Path(base_dir, value).absolute())  # an absolute value stays as it is
    if generator.check is not None:
        generator.check(resolved, where)
    return resolved


def _check_type(value: Any, default: Any, where: str) -> Any:
    expected = None
    if isinstance(default, bool):
        ok = isinstance(value, bool)
    elif isinstance(default, int):  # a count of at least one; a default of 0 marks a count that may be 0
        low = 0 if default == 0 else 1
        ok = isinstance(value, int) and not isinstance(value, bool) and value >= low
        expected = "a non-negative integer" if low == 0 else None
    elif isinstance(default, NonNegative):
        ok = isinstance(value, (int, float)) and not isinstance(value, bool) and 0 <= value < float("inf")
        value, expected = float(value) if ok else value, "a non-negative number"
    elif isinstance(default, float):
        ok = isinstance(value, (int, float)) and not isinstance(value, bool) and 0 <= value <= 1
        value = float(value) if ok else value  # a string must be reported, not crash float()
    elif isinstance(default, list):  # inclusive integer range [low, high]
        ok = (isinstance(value, list) and len(value) == 2
              and all(isinstance(v, int) and not isinstance(v, bool) for v in value) and 1 <= value[0] <= value[1])
    else:
        ok = isinstance(value, type(default))
    if not ok:
        expected = expected or {bool: "true or false", int: "a positive integer", float: "a probability in [0, 1]",
                                list: "an inclusive range [low, high] of positive integers", str: "a string",
                                dict: "a mapping"}.get(type(default), type(default))
        raise ConfigError(f"{where}: expected {expected}, got {value!r}; fix the value in the config")
    return value


def generate(generator: str, dataset: str, params: dict | None, seed: int,
             raw_dir: str | os.PathLike | None = None) -> tuple[GraphColumns, DatasetMeta]:
    """Run generator ``generator`` for dataset ``dataset``; returns columns and metadata (no statistics yet).

    Generators with ``raw_files`` first fetch any missing raw file into ``raw_dir`` (default ``resources/raw``),
    trying ``params["mirror"]`` first when set, and build from there.
    """
    gen = get_generator(generator, f"datasets.{dataset}.generator")
    resolved = resolve_params(gen, params, f"datasets.{dataset}.params")
    if gen.raw_files is None:
        return gen.build(resolved, seed), gen.describe(dataset, resolved, seed)
    raw_dir = Path(RAW_DIR if raw_dir is None else raw_dir)
    files = {raw.relative_path: fetch(raw, raw_dir, mirror=resolved.get("mirror") or None)
             for raw in gen.raw_files(resolved)}
    columns = gen.build(resolved, seed, raw_dir)  # first: a generator that describes from its data (pyg) reuses it
    meta = gen.describe(dataset, resolved, seed)
    meta.source["raw_sha256"] = {name: sha256_file(path) for name, path in files.items()}  # what was read
    return columns, meta

