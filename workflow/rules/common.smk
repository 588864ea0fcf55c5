# Target lists, wildcard constraints and input functions shared by the rules.
import re

from gnnbench.config.suite import DATASET_DIR, PE_FILE, RUN_DIR, SPLITS_FILE


def _alternatives(names):
    return "|".join(re.escape(n) for n in sorted(names)) or "(?!)"


wildcard_constraints:
    dataset=_alternatives(SUITE.datasets),
    model=_alternatives({m for b in SUITE.benchmarks.values() for m in b.models}),
    seed=r"\d+",
    fold=r"\d+",
    k=r"\d+",


def dataset_files(dataset):
    folder = DATASET_DIR.format(dataset=dataset)
    return {"graphs": f"{folder}/graphs.parquet", "meta": f"{folder}/meta.json"}


def run_inputs(wildcards):
    """Dataset, split file and — when the model uses positional encodings — the PE file of one run."""
    benchmark = SUITE.benchmarks.get(wildcards.dataset)
    if benchmark is None or wildcards.model not in benchmark.models:
        raise ValueError(f"no model {wildcards.model!r} in benchmarks.{wildcards.dataset} of the config")
    files = dataset_files(wildcards.dataset)
    files["splits"] = SPLITS_FILE.format(dataset=wildcards.dataset)
    k = SUITE.pe_dim(wildcards.dataset, wildcards.model)
    if k:
        files["pe"] = PE_FILE.format(dataset=wildcards.dataset, k=k)
    return files
