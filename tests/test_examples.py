"""The worked example (examples/own-model/) run as a user's project runs it: gnnbench built as a wheel and installed
outside the checkout, the example's files copied to a folder outside the repository, ``gnnbench run suite.yaml
--cores 2`` there. Its tables must hold the user's model beside GCN and GIN under all three protocols, with the
numbers of the committed expected tables (examples/own-model/expected/)."""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from setuptools import find_packages
from test_tutorial import tutorial_commands

REPO_ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = REPO_ROOT / "examples" / "own-model"
EXPECTED = EXAMPLE / "expected"
# CPU results are deterministic for a given machine and thread count (one thread per run here); another machine's
# floating-point kernels may move a mean test score a little
# percentage points, on every mean and standard deviation of a test score: scores are deterministic on one machine,
# but another CPU rounds differently (up to 1.7 between two x86 machines on these small test sets)
TOLERANCE = 2.0
TABLES = {"PATTERN": "benchmarking-gnns", "CSBM": "pitfalls", "GRAPH-FAMILIES": "fair-comparison"}
CHANCE = {"PATTERN": 50.0, "CSBM": 100 / 3, "GRAPH-FAMILIES": 100 / 3}  # weighted accuracy; 3 balanced classes


def test_the_package_list_holds_every_folder_of_gnnbench_and_the_mapped_workflow():
    """pyproject.toml lists the packages (find cannot map workflow/ and config/suites/ into gnnbench): a new
    subpackage missing from the list would be missing from every wheel."""
    tomllib = pytest.importorskip("tomllib")  # Python 3.11+
    setuptools = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    assert sorted(setuptools["packages"]) == sorted(find_packages(str(REPO_ROOT), include=["gnnbench*"])
                                                    + ["gnnbench._workflow", "gnnbench._suites"])
    assert setuptools["package-dir"] == {"gnnbench._workflow": "workflow", "gnnbench._suites": "config/suites"}


def test_a_model_files_folder_does_not_change_its_fair_comparison_seeds():
    """Run configs name a model file by its absolute path; the grid points' seeds must not depend on it, or the
    example's tables would change with the folder it runs in."""
    from gnnbench.protocols.fair_comparison import grid as fc_grid

    here = {"model": "/home/me/project/my_gnn.py:MixJK", "hidden_channels": 32, "num_layers": 2}
    assert fc_grid.seed_key(here) == fc_grid.seed_key({**here, "model": "/tmp/elsewhere/my_gnn.py:MixJK"}) == (
        fc_grid.seed_key({**here, "model": "my_gnn.py:MixJK"}))
    assert fc_grid.seed_key(here) != fc_grid.seed_key({**here, "num_layers": 4})
    assert fc_grid.seed_key(here) != fc_grid.seed_key({**here, "model": "/home/me/project/other.py:MixJK"})
    for config in ({"model": "GIN", "hidden_units": [32, 32]}, {"model": "torch_geometric.nn.models.GIN"}):
        # every other model: the seeds as before
        assert fc_grid.seed_key(config) == int(fc_grid.config_id(config)[:8], 16)


def read_rows(path: Path) -> list[dict[str, str]]:
    """The rows (column -> cell) of the first Markdown table in ``path``."""
    lines = [line for line in path.read_text().splitlines() if line.startswith("|")]
    header = [cell.strip() for cell in lines[0].strip("|").split("|")]
    return [dict(zip(header, [cell.strip() for cell in line.strip("|").split("|")], strict=True)) for line in lines[2:]]


def read_table(path: Path) -> dict[str, dict[str, str]]:
    """Model (the first column) -> its row, of the first Markdown table in ``path``."""
    return {next(iter(row.values())): row for row in read_rows(path)}


def test_score(row: dict[str, str]) -> tuple[float, float]:
    """(mean, std) of a row's test score: the column whose name starts with "test" (every protocol's table)."""
    cell = next(value for key, value in row.items() if key.lower().startswith("test"))
    mean, std = re.fullmatch(r"\**([-\d.]+) ± ([\d.]+)\**", cell).groups()
    return float(mean), float(std)


test_score.__test__ = False  # a helper, not a test


@pytest.mark.slow
def test_the_example_runs_from_an_installed_wheel_in_a_folder_outside_the_repository(tmp_path, installed_wheel):
    wheel, target = installed_wheel
    names = set(zipfile.ZipFile(wheel).namelist())
    workflow = {str(p.relative_to(REPO_ROOT / "workflow")) for p in (REPO_ROOT / "workflow").rglob("*")
                if p.is_file() and "__pycache__" not in p.parts}
    assert {f"gnnbench/_workflow/{name}" for name in workflow} <= names  # the Snakefile, rules, scripts, report, ...
    assert {f"gnnbench/_suites/{p.name}" for p in (REPO_ROOT / "config" / "suites").glob("*.yaml")} <= names
    project = tmp_path / "my-project"  # the user's folder: one Python file and the suites, nothing of the checkout
    project.mkdir()
    for name in ("my_gnn.py", "suite.yaml", "suite-pyg-gin.yaml"):
        shutil.copy(EXAMPLE / name, project / name)
    env = {**os.environ, "PYTHONPATH": str(target)}
    env.pop("GNNBENCH_PRESETS", None)
    where = subprocess.run([sys.executable, "-c", "import gnnbench; print(gnnbench.__file__)"], cwd=project, env=env,
                           capture_output=True, text=True)
    assert where.stdout.strip() == str(target / "gnnbench" / "__init__.py")  # the installed copy, not the checkout

    # the installed workflow has no default suite: one line
    bare = subprocess.run([sys.executable, "-m", "snakemake", "-s", str(target / "gnnbench/_workflow/Snakefile"), "-n"],
                          cwd=project, env=env, capture_output=True, text=True, timeout=300)
    assert bare.returncode != 0
    assert ("gnnbench: error: no suite given; run `gnnbench run SUITE.yaml` (or snakemake --configfile SUITE.yaml)"
            in bare.stderr.splitlines())

    # the commands as the tutorial gives them (docs/tutorial.md), so the page and this test cannot drift
    commands = tutorial_commands()
    assert "gnnbench run suite.yaml --cores 2" in commands and "gnnbench run suite-pyg-gin.yaml --cores 2" in commands
    run = subprocess.run([str(target / "bin" / "gnnbench"), *shlex.split("run suite.yaml --cores 2"), "--quiet"],
                         cwd=project, env=env, capture_output=True, text=True, timeout=1500)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    log = next((project / ".snakemake" / "log").glob("*.log")).read_text()
    assert f"Snakefile: {target / 'gnnbench' / '_workflow' / 'Snakefile'}" in log
    assert f"Working directory: {project}" in log
    tables = project / "results" / "tables"
    for dataset, protocol in TABLES.items():
        got, expected = read_table(tables / f"{dataset}.md"), read_table(EXPECTED / "suite" / f"{dataset}.md")
        assert list(got) == ["GCN", "GIN", "MixJK"], protocol  # the user's model beside the zoo's GCN and GIN
        for model in got:
            assert test_score(got[model]) == pytest.approx(test_score(expected[model]), abs=TOLERANCE), (dataset,
                                                                                                          model)
        assert test_score(got["MixJK"])[0] > CHANCE[dataset] + 20  # it learned
        pairs = {frozenset((row["A"], row["B"])) for row in read_rows(tables / f"{dataset}_significance.md")}
        assert pairs == {frozenset(p) for p in (("GCN", "GIN"), ("GCN", "MixJK"), ("GIN", "MixJK"))}
    # the benchmark's GCN and GIN on PATTERN keep the paper's number beside ours; the user's model has none
    pattern = read_table(tables / "PATTERN.md")
    assert pattern["GCN"]["Paper"] == "85.498 ± 0.045" and pattern["GIN"]["Paper"] == "85.590 ± 0.011"
    assert pattern["MixJK"]["Paper"] == "–"
    assert not (REPO_ROOT / "examples" / "own-model" / "results").exists()

    # PyG's GIN with no Python file, in the same folder: the datasets, splits and the GCN / GIN runs are reused, so a
    # dry run (which builds every model once on a stand-in batch) plans only PyG-GIN's trainings and the tables
    dry = subprocess.run([str(target / "bin" / "gnnbench"), *shlex.split("run suite-pyg-gin.yaml --cores 2"), "-n",
                          "--quiet", "rules"],
                         cwd=project, env=env, capture_output=True, text=True, timeout=600)
    assert dry.returncode == 0, dry.stdout[-3000:] + dry.stderr[-3000:]
    counts = {line.split()[0]: int(line.split()[1]) for line in dry.stdout.splitlines()
              if len(line.split()) == 2 and line.split()[1].isdigit()}
    # PATTERN: 2 seeds; CSBM: one job of 12 splits; GRAPH-FAMILIES: 3 outer folds x (grid, selection, final run)
    assert {rule: counts.get(rule, 0) for rule in ("dataset", "splits", "train", "train_inits", "fc_inner", "fc_select",
                                                    "fc_final")} == {"dataset": 0, "splits": 0, "train": 2,
                                                                     "train_inits": 1, "fc_inner": 3, "fc_select": 3,
                                                                     "fc_final": 3}
    assert [counts.get(f"tables_{d}", 0) for d in ("PATTERN", "CSBM", "GRAPH_FAMILIES")] == [1, 1, 1]
