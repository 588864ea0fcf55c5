"""The run optimisers (gnnbench.training.eager_optim via make_optimizer) do not import torch's compiler in a process
that compiles nothing, and their updates are bit for bit torch.optim's, with and without the compiler loaded."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import torch

from gnnbench.training.engine import make_optimizer

# trains a small model with make_optimizer (Adam with weight decay under ReduceLROnPlateau, then SGD), round-trips
# the optimiser state, and saves the weights and whether torch._dynamo was imported
SCRIPT = textwrap.dedent("""
    import sys
    import torch
    from gnnbench.training.engine import make_optimizer

    def train(name, steps, out):
        torch.manual_seed(0)
        model = torch.nn.Sequential(torch.nn.Linear(6, 5), torch.nn.ReLU(), torch.nn.Linear(5, 3))
        x, y = torch.randn(32, 6), torch.randint(0, 3, (32,))
        optimizer = make_optimizer(model, 0.01, 0.05, name=name)
        schedule = torch.optim.lr_scheduler.ReduceLROnPlateau(optimizer, factor=0.5, patience=0)
        for step in range(steps):
            optimizer.zero_grad()
            loss = torch.nn.functional.cross_entropy(model(x), y)
            loss.backward()
            optimizer.step()
            schedule.step(1.0)  # never improves: the learning rate halves
            optimizer.load_state_dict(optimizer.state_dict())
        out[name] = [p.detach().clone() for p in model.parameters()]

    out = {}
    train("Adam", 6, out)
    train("SGD", 6, out)
    out["dynamo"] = "torch._dynamo" in sys.modules
    torch.save(out, sys.argv[1])
""")


def reference(name: str, steps: int) -> list[torch.Tensor]:
    """The same training with torch.optim's own classes (fused, coupled weight decay), in this process."""
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(6, 5), torch.nn.ReLU(), torch.nn.Linear(5, 3))
    x, y = torch.randn(32, 6), torch.randint(0, 3, (32,))
    cls = {"Adam": torch.optim.Adam, "SGD": torch.optim.SGD}[name]
    optimizer = cls(model.parameters(), lr=0.01, weight_decay=0.05, fused=True)
    schedule = torch.optim.lr_scheduler.ReduceLROnPlateau(optimizer, factor=0.5, patience=0)
    for _ in range(steps):
        optimizer.zero_grad()
        torch.nn.functional.cross_entropy(model(x), y).backward()
        optimizer.step()
        schedule.step(1.0)
        optimizer.load_state_dict(optimizer.state_dict())
    return [p.detach().clone() for p in model.parameters()]


def test_a_fresh_process_trains_without_importing_the_compiler_and_gets_torchs_updates(tmp_path):
    out = tmp_path / "out.pt"
    done = subprocess.run([sys.executable, "-c", SCRIPT, str(out)], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    result = torch.load(out)
    assert result["dynamo"] is False
    for name in ("Adam", "SGD"):
        assert all(torch.equal(a, b) for a, b in zip(result[name], reference(name, 6), strict=True)), name


def test_with_the_compiler_loaded_the_updates_are_still_torchs():
    import torch._dynamo  # noqa: F401  (torch's own wrappers from now on)

    namespace = {"__name__": "script"}
    exec(SCRIPT.replace("torch.save(out, sys.argv[1])", ""), namespace)
    assert namespace["out"]["dynamo"] is True
    for name in ("Adam", "SGD"):
        assert all(torch.equal(a, b) for a, b in zip(namespace["out"][name], reference(name, 6), strict=True)), name
    assert isinstance(make_optimizer(torch.nn.Linear(2, 2), 0.1, name="Adam"), torch.optim.Adam)
