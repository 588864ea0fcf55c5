"""Wide stacks (gnnbench.training.wide): every member of a wide stack trains exactly as the same model trained alone
(float64, several optimiser steps with per-member learning rates and weight decays, batch norm in training mode,
gradient clipping, members dropped mid-run), per-member dropout rates, and clear refusals."""

from __future__ import annotations

import copy
import dataclasses

import pytest
import torch
import torch.nn.functional as F
from conftest import meta_for, one_batch, random_graphs
from torch import nn

from gnnbench.config.presets import run_config
from gnnbench.models.build import build_model
from gnnbench.models.graph_classifiers.gin import GIN as ErricaGIN
from gnnbench.training.wide import NotWidenable, WideOptimizer, WideStack, check_widened, clip_members

ZINC = "molecules_graph_regression_{}_ZINC_100k"
P1_NETS = {
    # float32 only: the GCN's normalised adjacency is float32 (gcn_adjacency); no batch norm, whose bias gradients
    # are rounding noise that Adam scales up to steps of size lr
    "GCN": dict(L=2, hidden_dim=8, out_dim=8, batch_norm=False),
    "GatedGCN": dict(L=2, hidden_dim=8, out_dim=8, edge_feat=True),
    "GatedGCN-constant-edges": dict(L=2, hidden_dim=8, out_dim=8, edge_feat=False),
    "GIN": dict(L=2, hidden_dim=8, out_dim=8),
    "MLP": dict(L=2, hidden_dim=8, out_dim=8),
}


@pytest.fixture(autouse=True)
def float64():
    """Run the test with float64 as torch's default dtype (exact comparisons of members with separate runs)."""
    previous = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    yield
    torch.set_default_dtype(previous)


def _batches(count: int, continuous: int | None = None) -> list:
    batches = [one_batch(random_graphs(5, seed=seed)) for seed in range(count)]
    if continuous is None:
        return batches
    generator = torch.Generator().manual_seed(0)
    return [dataclasses.replace(b, x=torch.randn(b.num_nodes, continuous, generator=generator)) for b in batches]


def _members(build, seeds) -> list[nn.Module]:
    models = []
    for seed in seeds:
        torch.manual_seed(seed)
        models.append(build())
    return models


def _p1(name: str):
    cfg = run_config(ZINC.format(name.split("-")[0]), P1_NETS[name])
    meta = meta_for("graph_regression", 1)
    return lambda: build_model(cfg, meta)


def _errica(train_eps: bool = True, dropout: float = 0.0):
    return lambda: ErricaGIN(5, 3, 8, 2, train_eps, "sum", dropout)


def _loss(out: torch.Tensor, batch) -> torch.Tensor:
    """A loss of one model's output (or of its block of the wide output: (G, 1) for a regression head that returns
    (G,) alone): cross entropy for 3-class logits, squared error for regression."""
    if out.dim() == 2 and out.shape[-1] == 3:
        return F.cross_entropy(out, torch.arange(out.shape[0]) % 3)
    return (out.reshape(-1) - torch.linspace(-1, 1, out.numel())).square().mean()


def _assert_members_equal(stack: WideStack, models: list[nn.Module], rows: list[int], atol: float = 1e-9,
                          rtol: float = 1e-7) -> None:
    for row, r in enumerate(rows):
        wide, own = stack.member_state_dict(row), models[r].state_dict()
        assert list(wide) == list(own)
        for name, tensor in own.items():
            assert wide[name].shape == tensor.shape, name
            torch.testing.assert_close(wide[name], tensor, rtol=rtol, atol=atol, msg=f"member {r}: {name}")


def _train_side_by_side(build, seeds, batches, *, lr, weight_decay, clip=None, drop_after=None, keep=None,
                        kind="adam", momentum=0.0, atol=1e-9, rtol=1e-7):
    """Train a wide stack of ``build()`` models (seeds) and the same models alone with torch's optimiser, on the same
    batches; after ``drop_after`` steps keep only ``keep``. Members' state dicts must agree after every step."""
    models = _members(build, seeds)
    stack = WideStack(models)
    check_widened(stack, models, (batches[0],))
    optimizer = WideOptimizer(stack, kind, torch.tensor(lr), torch.tensor(weight_decay), momentum=momentum)
    make = (lambda p, r: torch.optim.Adam(p, lr=lr[r], weight_decay=weight_decay[r])) if kind == "adam" else (
        lambda p, r: torch.optim.SGD(p, lr=lr[r], weight_decay=weight_decay[r], momentum=momentum))
    alone = [make(m.parameters(), r) for r, m in enumerate(models)]
    rows = list(range(len(models)))
    stack.train()
    for step, batch in enumerate(batches):
        if step == drop_after:
            stack.keep(torch.tensor(keep))
            optimizer.keep(torch.tensor(keep))
            rows = [rows[k] for k in keep]
        optimizer.zero_grad()
        losses = torch.stack([_loss(block, batch) for block in stack.split(stack(batch))])
        losses.sum().backward()
        norms = clip_members(stack, clip) if clip is not None else None
        optimizer.step()
        for position, r in enumerate(rows):
            model, opt = models[r], alone[r]
            opt.zero_grad()
            _loss(model(batch), batch).backward()
            if clip is not None:
                norm = torch.nn.utils.clip_grad_norm_(model.parameters(), clip)
                torch.testing.assert_close(norms[position], norm)
            opt.step()
        _assert_members_equal(stack, models, rows, atol, rtol)
    return stack, models, rows


LR = [1e-2, 3e-3, 1e-3]
# weight decay > 0: Adam scales the rounding noise of gradients that are zero in exact arithmetic (biases before a
# training-mode batch norm) up to steps of size lr; weight decay makes those gradients non-zero
WD = [1e-4, 1e-3, 5e-2]


@pytest.mark.parametrize("name", list(P1_NETS))
def test_p1_members_train_as_alone(name):
    if name == "GCN":
        torch.set_default_dtype(torch.float32)
        _train_side_by_side(_p1(name), [0, 1, 2], _batches(3), lr=LR, weight_decay=WD, atol=1e-5, rtol=1e-4)
        return
    _train_side_by_side(_p1(name), [0, 1, 2], _batches(3), lr=LR, weight_decay=WD, atol=1e-8)


@pytest.mark.parametrize("train_eps", [True, False])
def test_errica_gin_members_train_as_alone_with_clipping_and_dropped_members(train_eps):
    stack, _, rows = _train_side_by_side(_errica(train_eps), [0, 1, 2], _batches(5, continuous=5), lr=LR,
                                         weight_decay=WD, clip=0.05, drop_after=2, keep=[2, 0], atol=1e-8)
    assert rows == [2, 0] and stack.members == 2
    eps = dict(stack.model.named_parameters() if train_eps else stack.model.named_buffers())["convs.0.eps"]
    assert eps.shape == (2, 1)


def test_sgd_with_momentum_equals_torch_sgd():
    _train_side_by_side(_errica(), [3, 4], _batches(3, continuous=5), lr=[0.05, 0.01], weight_decay=[1e-3, 0.0],
                        kind="sgd", momentum=0.9, atol=1e-8)


def test_optimizer_checkpoint_resumes_to_the_same_weights():
    batches = _batches(3, continuous=5)
    runs = []
    for resume in (False, True):
        models = _members(_errica(), [0, 1])
        stack = WideStack(models).train()
        optimizer = WideOptimizer(stack, "adam", torch.tensor([1e-2, 2e-3]), 1e-3)
        for step, batch in enumerate(batches):
            if resume and step == 2:  # a new stack and optimiser from the checkpoint
                state, opt_state = copy.deepcopy(stack.state_dict()), copy.deepcopy(optimizer.state_dict())
                stack = WideStack(models).train()
                stack.load_state_dict(state)
                optimizer = WideOptimizer(stack, "adam", 0.0, 0.0)
                optimizer.load_state_dict(opt_state)
            optimizer.zero_grad()
            torch.stack([_loss(block, batch) for block in stack.split(stack(batch))]).sum().backward()
            optimizer.step()
        runs.append(stack.state_dict())
    for name, tensor in runs[0].items():
        torch.testing.assert_close(runs[1][name], tensor, rtol=0, atol=0)


def test_per_member_dropout_rates_and_identity_in_eval():
    rates = [0.0, 0.2, 0.5, 0.9]
    stack = WideStack([nn.Sequential(nn.Linear(3, 400), nn.Dropout(p)) for p in rates])
    x = torch.randn(50, 3)
    stack.eval()
    clean = stack.split(stack(x))
    stack.train()
    torch.manual_seed(0)
    dropped = stack.split(stack(x))
    for r, p in enumerate(rates):
        kept = dropped[r] != 0
        assert abs(1 - kept.double().mean().item() - p) < 0.01, (p, kept.double().mean())  # 20,000 draws
        torch.testing.assert_close(dropped[r][kept], clean[r][kept] / (1 - p))
    # equal rates: one F.dropout on the wide tensor, its mask fresh for every member
    same = WideStack([nn.Sequential(nn.Linear(3, 400), nn.Dropout(0.5)) for _ in range(2)]).train()
    masks = same.split(same(x)) != 0
    assert abs(masks.double().mean().item() - 0.5) < 0.01 and not torch.equal(masks[0], masks[1])


def test_errica_gin_with_different_dropout_rates_widens():
    models = [_errica(dropout=p)() for p in (0.0, 0.5)]
    stack = WideStack(models)
    check_widened(stack, models, (_batches(1, continuous=5)[0],))
    assert stack.model.dropouts[0].p.tolist() == [0.0, 0.5]


def test_a_model_that_mixes_the_members_channels_is_refused():
    class Heads(nn.Module):  # attention-like: a softmax over heads of C channels each
        def __init__(self) -> None:
            super().__init__()
            self.linear = nn.Linear(4, 6)

        def forward(self, x):
            h = self.linear(x)
            return torch.softmax(h.view(h.shape[0], 2, -1), dim=1).flatten(1)

    models = _members(Heads, [0, 1, 2])
    stack = WideStack(models)  # nothing in its structure says so: the dry run finds it
    with pytest.raises(NotWidenable, match="differs from its block"):
        check_widened(stack, models, (torch.randn(5, 4),))


def test_p1_gat_is_refused_with_the_module_and_tensor_named():
    cfg = run_config(ZINC.format("GAT"), dict(L=2, hidden_dim=4, n_heads=2, out_dim=8))
    models = _members(lambda: build_model(cfg, meta_for("graph_regression", 1)), [0, 1])
    with pytest.raises(NotWidenable, match=r"architecture\.layers\.0: GATLayer holds a parameter 'attn_l'"):
        WideStack(models)


def test_members_that_differ_in_structure_or_settings_are_refused():
    with pytest.raises(NotWidenable, match=r"first_h\.0\.weight: member 1's tensor is \(16, 5\) float64"):
        WideStack([ErricaGIN(5, 3, 8, 2, True, "sum", 0.0), ErricaGIN(5, 3, 16, 2, True, "sum", 0.0)])
    with pytest.raises(NotWidenable, match="attribute 'aggregation' differs"):
        WideStack([ErricaGIN(5, 3, 8, 2, True, "sum", 0.0), ErricaGIN(5, 3, 8, 2, True, "mean", 0.0)])
    # learnt ε in one, fixed in the other
    with pytest.raises(NotWidenable, match=r"convs\.0: member 1 has parameters \[\], member 0 \[.eps.\]"):
        WideStack([ErricaGIN(5, 3, 8, 2, True, "sum", 0.0), ErricaGIN(5, 3, 8, 2, False, "sum", 0.0)])
    with pytest.raises(NotWidenable, match=r"0: GRU holds a parameter"):
        WideStack([nn.Sequential(nn.GRU(4, 4)) for _ in range(2)])


def test_layer_norm_embedding_and_shared_input_members_train_as_alone():
    class Toy(nn.Module):  # a shared input (Linear 5 → 8 reads the same x for every member), LayerNorm, Embedding
        def __init__(self) -> None:
            super().__init__()
            self.linear, self.norm = nn.Linear(5, 8), nn.LayerNorm(8)
            self.table, self.out = nn.Embedding(4, 8), nn.Linear(8, 3)

        def forward(self, x):
            h = torch.relu(self.norm(self.linear(x[:, 1:]))) + self.table(x[:, 0].long())
            return self.out(h)

    generator = torch.Generator().manual_seed(0)
    batches = [torch.cat([torch.randint(0, 4, (12, 1), generator=generator).double(),
                          torch.randn(12, 5, generator=generator)], 1) for _ in range(4)]
    _train_side_by_side(Toy, [0, 1, 2], batches, lr=LR, weight_decay=WD, clip=0.5, drop_after=2, keep=[1])


def test_check_runs_without_dropout_so_models_with_functional_dropout_widen():
    cfg = run_config(ZINC.format("GIN"), dict(L=2, hidden_dim=8, out_dim=8, dropout=0.3, in_feat_dropout=0.2))
    models = _members(lambda: build_model(cfg, meta_for("graph_regression", 1)), [0, 1])
    stack = WideStack(models)
    batch = _batches(1)[0]
    state = torch.get_rng_state()
    check_widened(stack, models, (batch,))
    assert torch.equal(torch.get_rng_state(), state)
    stack.train()
    torch.manual_seed(0)
    first = stack(batch)
    assert not torch.allclose(first, stack(batch))  # dropout is on again: fresh masks per call


def test_gcn_with_batch_norm_widens_in_float32_and_a_wrong_gradient_is_still_caught():
    """The P1 GCN runs in float32 only, and the bias before a training-mode batch norm has a gradient of 0 in exact
    arithmetic: its float32 rounding is large relative to itself but not to the model's gradients, so the check
    compares gradients at the member's largest gradient. A gradient error of that size is still refused."""
    torch.set_default_dtype(torch.float32)
    cfg = run_config("SBMs_node_clustering_GCN_PATTERN_100k", dict(L=2, hidden_dim=16, out_dim=16))
    assert cfg["batch_norm"]
    models = _members(lambda: build_model(cfg, meta_for("node_classification", 2)), [0, 1])
    batch = one_batch(random_graphs(32, seed=0, min_nodes=15, max_nodes=30))  # sums large enough to round
    check_widened(WideStack(models), models, (batch,))

    class Doubled(torch.autograd.Function):  # the forward as is, member 1's gradient twice what it should be
        @staticmethod
        def forward(ctx, h):
            return h.clone()

        @staticmethod
        def backward(ctx, grad):
            grad = grad.clone()
            grad[:, grad.shape[1] // 2:] *= 2
            return grad

    stack = WideStack(models)
    stack.model.architecture.layers[0].register_forward_hook(lambda module, args, out: Doubled.apply(out))
    with pytest.raises(NotWidenable, match="gradient differs"):
        check_widened(stack, models, (batch,))
