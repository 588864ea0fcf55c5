"""gnnbench works installed as a wheel, not only editable: what it reads at run time ships inside the package."""

from __future__ import annotations

import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.slow
def test_a_wheel_installed_elsewhere_finds_its_presets_and_schema_from_any_directory(tmp_path, installed_wheel):
    wheel, target = installed_wheel
    names = set(zipfile.ZipFile(wheel).namelist())
    assert {"gnnbench/suite.schema.yaml", "gnnbench/config/presets/pitfalls.yaml",
            "gnnbench/config/presets/CSL_graph_classification.yaml", "gnnbench/config/presets/fair_comparison.yaml",
            *(f"gnnbench/reporting/published/{paper}.yaml" for paper in ("dwivedi2020", "shchur2018", "errica2020"))
            } <= names
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    env = {**os.environ, "PYTHONPATH": str(target)}
    env.pop("GNNBENCH_PRESETS", None)

    def gnnbench(*args):
        return subprocess.run([sys.executable, "-c", "import sys, gnnbench.cli; print(gnnbench.cli.__file__, "
                               "file=sys.stderr); sys.exit(gnnbench.cli.main(sys.argv[1:]))", *args],
                              cwd=elsewhere, env=env, capture_output=True, text=True)

    result = gnnbench("params", "--preset", "CSL_graph_classification_GCN_CSL_100k")
    assert result.returncode == 0, result.stderr
    assert result.stderr.startswith(str(target))  # the installed copy ran, not the checkout
    assert result.stdout.strip() == "100927"  # the published count (its preset's total_params)
    result = gnnbench("params", "--preset", "pitfalls_GCN")
    assert result.returncode == 0 and result.stdout.strip() == "92231", result.stderr
    listed = gnnbench("presets").stdout
    # 219 presets of the first three papers and the nine baselines of Platonov et al.'s heterophily protocol
    assert "pitfalls_GAT\tpitfalls\tGAT\tCORA" in listed and len(listed.splitlines()) == 228
    assert "heterophily_ResNet+SGC\theterophily\tResNet\troman-empire" in listed
    # GIN's grid: diningphil/gnn-comparison config_GIN.yml
    assert "fair_GIN\tfair-comparison\tGIN\tany\t\t128 configurations" in listed
    paper = subprocess.run([sys.executable, "-c", "from gnnbench.reporting.published import fair_comparison; "
                            "print(fair_comparison()['ENZYMES']['GIN'])"], cwd=elsewhere, env=env, capture_output=True,
                           text=True)
    assert paper.stdout.strip() == "[59.6, 4.5]", paper.stderr  # Table 3, read from the installed package
    check = subprocess.run([sys.executable, "-c", "from gnnbench.suite import load_suite_file; "
                            f"print(len(load_suite_file({str(REPO_ROOT / 'config' / 'suites' / 'pitfalls.yaml')!r})"
                            ".benchmarks))"], cwd=elsewhere, env=env, capture_output=True, text=True)
    assert check.returncode == 0 and check.stdout.strip() == "14", check.stderr
    # the report's figures and pages come from the installed package too (they read no file of the checkout)
    draw = subprocess.run([sys.executable, "-c", "import pandas as pd; from gnnbench.reporting import plots, report; "
                           "t = pd.DataFrame({'model': ['A'], 'metric': ['mae'], 'test_metric_mean': [1.0], "
                           "'test_metric_std': [0.1]}); t.to_parquet('t.parquet'); "
                           "plots.score_bars('t.parquet', 'D', 'b.png', 'b.svg'); "
                           "print(plots.__file__, report.markdown_to_html('| a |\\n|---|\\n| 1 |', 'x').count('<td'))"],
                          cwd=elsewhere, env=env, capture_output=True, text=True)
    assert draw.returncode == 0, draw.stderr
    assert draw.stdout.startswith(str(target)) and draw.stdout.split()[-1] == "1"
    assert (elsewhere / "b.svg").read_text().lstrip().startswith("<?xml")
