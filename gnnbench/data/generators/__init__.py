"""Registry of dataset generators.

A generator turns (parameters, seed) into graphs in columnar form plus their :class:`DatasetMeta`.
Every random draw comes from NumPy generators seeded from ``seed`` in a fixed order, so the same seed
and parameters give byte-identical files.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gnnbench.data.meta import DatasetMeta
from gnnbench.data.store import GraphColumns
from gnnbench.errors import ConfigError
from gnnbench.io import sha256_file

if TYPE_CHECKING:
    from gnnbench.data.download import RawFile

RAW_DIR = Path("resources/raw")  # default download cache of raw files (raw_dir/<source>/<file>)


class NonNegative(float):
    """Marks a generator default as a real number ≥ 0 (e.g. an average degree); a plain float default is a
    probability in [0, 1]."""


@dataclass(frozen=True)
class Generator:
    """A dataset generator: its parameters with their defaults, its default split, and the functions that describe
    the dataset (without making it), build its graph columns and name the raw files it needs."""

    name: str
    description: str
    defaults: dict[str, Any]  # every parameter with its default; the default's type is the expected type (int:
    # a count ≥ 1, or ≥ 0 when the default is 0; float: a probability in [0, 1]; NonNegative: a real number ≥ 0)
    # split scheme (and its parameters) used when the config names none; a function of the parameters where they
    # decide it (released: the given split, CSL's published folds)
    default_split: dict[str, Any] | Callable[[dict], dict[str, Any]]
    describe: Callable[[str, dict, int], DatasetMeta]  # metadata without generating (validation, counts)
    build: Callable[..., GraphColumns]  # (params, seed), or (params, seed, raw_dir) when raw_files is set
    check: Callable[[dict, str], None] | None = None  # constraints between parameters; raises ConfigError
    raw_files: Callable[[dict], list[RawFile]] | None = None  # raw files needed (fetched into raw_dir before build)
    # the split files a paper released for (params, source) — split scheme "published"; None: the dataset has none
    published_splits: Callable[[dict, str], PublishedSplit | None] | None = None
    # parameters naming a user's file: a relative path is relative to the suite file's folder (resolve_params)
    path_params: tuple[str, ...] = ()
    # files outside the raw cache the dataset is made from (a user's graph file): inputs of the workflow's dataset job
    input_files: Callable[[dict], list[str]] | None = None
    # a dataset made in shards, one workflow job each, then merged (instead of one build job)
    sharding: Sharding | None = None
    # non-learnt baselines scored on the dataset like a run and reported beside the models in its table
    baselines: tuple[Baseline, ...] = ()


@dataclass(frozen=True)
class Sharding:
    """How a generator makes a dataset in shards, so that a cluster spreads the expensive part (TSP: solving every
    instance). ``count(params)`` shards; ``label(params, seed, shard, out, workers)`` writes shard ``shard``'s file
    atomically; ``merge(params, seed, files)`` builds the dataset's graph columns from every shard's file (and
    refuses files of other parameters, a missing shard or one given twice)."""

    count: Callable[[dict], int]
    label: Callable[..., None]
    merge: Callable[[dict, int, list], GraphColumns]


@dataclass(frozen=True)
class Baseline:
    """A non-learnt baseline a generator's datasets are reported with: ``name`` names its files (``results/baselines
    /{dataset}/{name}.json`` and its run record); ``method`` is one of :data:`gnnbench.baselines.METHODS`, called with
    ``params``."""

    name: str
    method: str
    params: dict[str, Any]


@dataclass(frozen=True)
class PublishedSplit:
    """A split released with a paper: its files (raw downloads, in the order the source's reader takes them —
    :func:`gnnbench.splits.read_published_folds`) and how many folds the release has."""

    files: tuple[RawFile, ...]
    folds: int


def _registry() -> dict[str, Generator]:
    from gnnbench.data.generators import (
        csbm,
        csl,
        cycles,
        cycles_release,
        graph_families,
        graph_files,
        graph_theory_prop,
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

    generators = (sbm.PATTERN, sbm.CLUSTER, csl.CSL, tsp.TSP, graph_theory_prop.GRAPH_THEORY_PROP, cycles.CYCLES,
                  superpixels.SUPERPIXELS_MNIST, superpixels.SUPERPIXELS_CIFAR10, superpixels.SUPERPIXELS_DIGITS,
                  cycles_release.CYCLES_RELEASE, planetoid.PLANETOID, npz.NPZ, csbm.CSBM, tu.TU,
                  graph_families.GRAPH_FAMILIES, wikics.WIKICS, released.RELEASED, molecules.ZINC, molecules.AQSOL,
                  ogbl_collab.OGBL_COLLAB, pyg.PYG, graph_files.GRAPH_FILE)
    return {g.name: g for g in generators}


def generator_names() -> list[str]:
    """Names of every registered generator, sorted."""
    return sorted(_registry())


def get_generator(name: str, where: str = "generator") -> Generator:
    """The generator registered as ``name``; a ConfigError at ``where`` listing the known names otherwise."""
    registry = _registry()
    if name not in registry:
        raise ConfigError(f"{where}: unknown generator {name!r}; choose one of {', '.join(sorted(registry))}")
    return registry[name]


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
    from gnnbench.data.download import fetch

    raw_dir = Path(RAW_DIR if raw_dir is None else raw_dir)
    files = {raw.relative_path: fetch(raw, raw_dir, mirror=resolved.get("mirror") or None)
             for raw in gen.raw_files(resolved)}
    columns = gen.build(resolved, seed, raw_dir)  # first: a generator that describes from its data (pyg) reuses it
    meta = gen.describe(dataset, resolved, seed)
    meta.source["raw_sha256"] = {name: sha256_file(path) for name, path in files.items()}  # what was read
    return columns, meta
