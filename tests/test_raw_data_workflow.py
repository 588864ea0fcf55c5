"""Datasets made from raw files, end to end through Snakemake: a download job per raw file (the released CYCLES
pickle from a local HTTP server given as `mirror`), its checksum record and verification, caching, a failed
download, and the offline superpixel (digits) dataset trained and tabulated like any other."""

from __future__ import annotations

import json
import os
import pickle
import subprocess
import sys
from pathlib import Path

import networkx as nx
import pandas as pd
import pytest
import yaml
from test_download import LocalServer, closed_port_url

from gnnbench.data.generators import cycles_release
from gnnbench.io import sha256_file

REPO_ROOT = Path(__file__).resolve().parents[1]

pytestmark = pytest.mark.slow
RAW = f"resources/raw/{cycles_release.RELATIVE_PATH}"


def release_pickle() -> bytes:
    """8 + 4 + 4 samples in the released structure: positives hold a 6-cycle, negatives are paths."""
    samples = []
    for i in range(16):
        if i % 2:
            g = nx.cycle_graph(6)
            g.add_edge(5, 6 + i % 3)
        else:
            g = nx.path_graph(7 + i % 4)
        samples.append((g, None, "has-kcycle" if i % 2 else "no-kcycle"))
    return pickle.dumps(([{"n": 31}, {"n": 56}], [[], samples]))


def suite(mirror: str) -> dict:
    tiny = {"epochs": 1, "batch_size": 4, "L": 2, "hidden_dim": 8, "out_dim": 8}
    return {
        "datasets": {
            "CYCLES-release": {"generator": "cycles_release",
                               "params": {"num_train": 8, "num_val": 4, "num_test": 4, "mirror": mirror}},
            "MNIST-digits": {"generator": "superpixels_digits", "seed": 1,
                             "params": {"num_train": 12, "num_val": 6, "num_test": 6}},
        },
        "benchmarks": {
            "CYCLES-release": {"seeds": [1], "set": tiny,
                               "models": {"GatedGCN": "CYCLES_graph_classification_GatedGCN_CYCLES_100k"}},
            "MNIST-digits": {"seeds": [1], "set": tiny,
                             "models": {"GCN": "superpixels_graph_classification_GCN_MNIST_100k"}},
        },
    }


def snakemake(workdir, config, *args):
    (workdir / "suite.yaml").write_text(yaml.safe_dump(config))
    cmd = [sys.executable, "-m", "snakemake", "-s", str(REPO_ROOT / "workflow/Snakefile"), "--directory", str(workdir),
           "--configfile", str(workdir / "suite.yaml"), "--cores", "2", *args]
    # Offline even where the internet is reachable: the canonical URL goes to a dead proxy, the local server not.
    dead = closed_port_url()
    env = {**os.environ, "http_proxy": dead, "https_proxy": dead, "HTTP_PROXY": dead, "HTTPS_PROXY": dead,
           "no_proxy": "127.0.0.1,localhost", "NO_PROXY": "127.0.0.1,localhost"}
    return subprocess.run(cmd, capture_output=True, text=True, timeout=600, env=env)


@pytest.fixture(scope="module")
def served():
    server = LocalServer()
    data = release_pickle()
    server.routes[f"/{cycles_release.FILE_NAME}"] = data
    yield server, data
    server.stop()


def test_download_job_feeds_the_dataset_and_is_cached(served, tmp_path):
    server, data = served
    config = suite(server.url + "/")
    result = snakemake(tmp_path, config)
    assert result.returncode == 0, result.stderr[-3000:]
    raw = tmp_path / RAW
    assert raw.read_bytes() == data
    recorded = (tmp_path / f"{RAW}.sha256").read_text().split()[0]
    assert recorded == sha256_file(raw)  # no published MD5: the SHA-256 of the download is recorded
    meta = json.loads((tmp_path / "results/datasets/CYCLES-release/meta.json").read_text())
    assert meta["source"]["raw_sha256"] == {cycles_release.RELATIVE_PATH: recorded}
    assert meta["statistics"]["train"]["label_fraction"] == [0.5, 0.5]
    assert meta["statistics"]["test"]["nodes_per_graph"]["min"] == 7
    for dataset in ("CYCLES-release", "MNIST-digits"):
        table = pd.read_csv(tmp_path / f"results/tables/{dataset}.csv")
        assert len(table) == 1 and table["runs"].iloc[0] == 1
    digits = json.loads((tmp_path / "results/datasets/MNIST-digits/meta.json").read_text())
    assert digits["split_sizes"] == {"train": 12, "val": 6, "test": 6} and digits["node_features"]["size"] == 3
    assert server.requests.count(f"/{cycles_release.FILE_NAME}") == 1
    # Nothing to do the second time; the server is not asked again.
    again = snakemake(tmp_path, config)
    assert again.returncode == 0 and "Nothing to be done" in again.stdout + again.stderr
    assert server.requests.count(f"/{cycles_release.FILE_NAME}") == 1
    # A changed raw file is refused before anything is overwritten.
    dataset = tmp_path / "results/datasets/CYCLES-release/graphs.parquet"
    before = dataset.read_bytes()
    raw.write_bytes(data + b"tampered")
    forced = snakemake(tmp_path, config, "--forcerun", "dataset", "results/datasets/CYCLES-release/meta.json")
    assert forced.returncode != 0
    log = (tmp_path / "results/logs/dataset/CYCLES-release.log").read_text()
    # The download stage's check of the existing file catches it, before the dataset is built.
    assert (f"existing file has SHA-256 {sha256_file(raw)}, but {Path(RAW).name}.sha256 recorded {recorded} "
            "when it was downloaded") in log
    assert not dataset.exists() or dataset.read_bytes() == before


def test_failed_download_is_one_clear_error(served, tmp_path):
    server, _ = served
    config = suite(server.url + "/missing/")
    config["datasets"]["CYCLES-release"]["params"]["mirror"] = server.url + "/missing/"
    # The canonical URL is unreachable offline too: every URL fails, and the job says so in its log.
    result = snakemake(tmp_path, config, "results/datasets/CYCLES-release/meta.json")
    assert result.returncode != 0
    log = (tmp_path / f"results/logs/download/{cycles_release.RELATIVE_PATH}.log").read_text()
    assert "download failed from every URL" in log and f"{server.url}/missing/{cycles_release.FILE_NAME}" in log
    assert not (tmp_path / RAW).exists()
