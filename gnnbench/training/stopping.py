"""Early stopping, the one implementation of every protocol, vectorised over R runs trained side by side (R = 1
for a single run).

Each rule sees, after every epoch, the validation loss and accuracy of every active run and answers two masks:
``save`` (this epoch's weights become the run's best state) and ``stop`` (the run is finished). The trainer keeps
the best state and restores it at the end.

``gnnbench`` — the released code's ``KDDCriterion`` (shchur/gnn-benchmark ``gnnbench/early_stopping.py``; the
    rule of every model of Shchur et al.): if val_loss ≤ best_loss (non-strict) the weights are saved and the
    counter reset, else the counter grows; stop when it reaches ``patience``. Validation accuracy plays no role.
``gat_tol`` — ``GATCriterionWithTolerance`` as coded (used by label propagation): if val_acc ≥ best_acc or
    val_loss ≤ best_loss, both bests are updated (max / min) and the state saved; the counter is reset only when
    the improvement exceeds ``tolerance`` — but that test compares against the bests *after* the update, so it
    never passes and the counter grows every epoch: the rule always stops after exactly ``patience`` epochs,
    keeping the last state at which either quantity was at least as good as before. Reproduced as coded
    (docs/protocols/pitfalls.md#reproduced-as-released).
``loss`` / ``accuracy`` — the fair-comparison protocol's ``Patience``: an epoch improves iff val_loss ≤ best_loss
    (as ``gnnbench``) or iff val_acc ≥ best_acc (non-strict, so a later tie becomes the best); stop when the counter
    of epochs without improvement reaches ``patience``.
"""

from __future__ import annotations

import torch

from gnnbench.errors import ConfigError

CRITERIA = ("gnnbench", "gat_tol", "loss", "accuracy")


class EarlyStopping:
    """State of one rule for R runs: best loss/accuracy, patience counters, best epoch (all (R,) tensors)."""

    def __init__(self, criterion: str, patience: int, runs: int, tolerance: float = 0.0,
                 device: torch.device | str = "cpu",
                 keys: tuple[str, str] = ("early_stopping_criterion", "early_stopping_tolerance")) -> None:
        """``keys``: the config keys of the criterion and the patience, named in errors."""
        if criterion not in CRITERIA:
            raise ConfigError(f"{keys[0]}: unknown criterion {criterion!r}; choose one of {', '.join(CRITERIA)}")
        if patience < 1:
            raise ConfigError(f"{keys[1]} (the patience) must be at least 1, got {patience}")
        self.criterion, self.patience, self.tolerance = criterion, patience, tolerance
        self.best_loss = torch.full((runs,), float("inf"), dtype=torch.float64, device=device)
        self.best_accuracy = torch.zeros(runs, dtype=torch.float64, device=device)
        self.counter = torch.zeros(runs, dtype=torch.int64, device=device)
        self.best_epoch = torch.full((runs,), -1, dtype=torch.int64, device=device)  # -1: the initial weights

    def update(self, epoch: int | torch.Tensor, val_loss: torch.Tensor, val_accuracy: torch.Tensor
               ) -> tuple[torch.Tensor, torch.Tensor]:
        """(save, stop) masks for this epoch's validation loss and accuracy of every run (``epoch``: the 0-based
        epoch, or each run's)."""
        val_loss, val_accuracy = val_loss.double(), val_accuracy.double()
        if self.criterion in ("gnnbench", "loss"):
            save = val_loss <= self.best_loss
            self.best_loss = torch.where(save, val_loss, self.best_loss)
            self.counter = torch.where(save, torch.zeros_like(self.counter), self.counter + 1)
        elif self.criterion == "accuracy":
            save = val_accuracy >= self.best_accuracy
            self.best_accuracy = torch.where(save, val_accuracy, self.best_accuracy)
            self.counter = torch.where(save, torch.zeros_like(self.counter), self.counter + 1)
        else:
            save = (val_accuracy >= self.best_accuracy) | (val_loss <= self.best_loss)
            self.best_accuracy = torch.where(save, torch.maximum(val_accuracy, self.best_accuracy), self.best_accuracy)
            self.best_loss = torch.where(save, torch.minimum(val_loss, self.best_loss), self.best_loss)
            # the original's tolerance test, made against the bests just updated (never true; kept for fidelity)
            reset = save & ((val_accuracy >= self.best_accuracy + self.tolerance)
                            | (val_loss <= self.best_loss - self.tolerance))
            self.counter = torch.where(reset, torch.zeros_like(self.counter), self.counter + 1)
        epochs = epoch.to(self.best_epoch) if torch.is_tensor(epoch) else torch.full_like(self.best_epoch, epoch)
        self.best_epoch = torch.where(save, epochs, self.best_epoch)
        return save, self.counter >= self.patience

    def update_rows(self, rows: torch.Tensor | None, epoch: int | torch.Tensor, val_loss: torch.Tensor,
                    val_accuracy: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """:meth:`update` of the runs at positions ``rows`` only (None: every run), the others untouched: (save,
        stop) masks over ``rows``."""
        if rows is None:
            return self.update(epoch, val_loss, val_accuracy)
        names = ("best_loss", "best_accuracy", "counter", "best_epoch")
        full = {name: getattr(self, name) for name in names}
        for name in names:
            setattr(self, name, full[name].index_select(0, rows))
        try:
            save, stop = self.update(epoch, val_loss, val_accuracy)
            for name in names:
                full[name] = full[name].index_copy(0, rows, getattr(self, name))
        finally:
            for name in names:
                setattr(self, name, full[name])
        return save, stop

    def state_dict(self) -> dict:
        """The rule's state (bests, counters, best epochs) for a checkpoint."""
        return {name: getattr(self, name) for name in ("best_loss", "best_accuracy", "counter", "best_epoch")}

    def load_state_dict(self, state: dict) -> None:
        """Restore the state :meth:`state_dict` returned."""
        for name, value in state.items():
            setattr(self, name, value)
