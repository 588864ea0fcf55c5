"""benchmarks/dense_floor.py: what its dispatch mode counts for the floor — FLOPs of dense products, bytes of every
other op (views nothing, indexed reads and accumulations the rows they touch) — on ops whose traffic is known."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import torch

SCRIPT = Path(__file__).resolve().parent.parent / "benchmarks" / "dense_floor.py"


def _module():
    module_spec = importlib.util.spec_from_file_location("dense_floor", SCRIPT)
    module = importlib.util.module_from_spec(module_spec)
    sys.modules.setdefault("dense_floor", module)
    module_spec.loader.exec_module(module)
    return module


def test_products_count_flops_and_other_ops_count_input_and_output_bytes():
    floor = _module()
    a, b = torch.randn(64, 32), torch.randn(32, 16)
    x, y = torch.randn(1000), torch.randn(1000)
    with floor.OpBytes() as mode:
        torch.mm(a, b)
        x + y  # two reads, one write
        x.view(10, 100).t()  # views move nothing
        y.mul_(2.0)  # read and written
    assert mode.flops == 2 * 64 * 32 * 16
    assert mode.matmul_bytes == 4 * (64 * 32 + 32 * 16 + 64 * 16)
    assert mode.other == {"add": 3 * 4000, "mul_": 2 * 4000}


def test_indexed_ops_count_the_rows_they_touch_not_the_whole_table():
    floor = _module()
    table, index = torch.randn(10_000, 8), torch.tensor([3, 5, 3])
    accumulator = torch.zeros(10_000, 8)
    with floor.OpBytes() as mode:
        rows = table.index_select(0, index)  # 3 rows read, 3 written, the index
        accumulator.index_add_(0, index, rows)  # index, source, 3 rows read and written
        torch.ones(1, 8).expand(5, 8).sum()  # a broadcast row counts once
    row = 8 * 4
    assert mode.other["index_select"] == 2 * 3 * row + 3 * 8
    assert mode.other["index_add_"] == 3 * 8 + 3 * 3 * row
    assert mode.other["sum"] == row + 4
