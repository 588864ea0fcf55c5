"""Training: losses, metrics, the epoch loop, checkpoints and one complete run."""
