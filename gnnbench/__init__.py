"""gnnbench: reproducible benchmarking of graph neural networks.

Subpackages: ``data`` (graph store, batching, generators), ``features`` (positional encodings),
``models`` (architectures, encoders, heads), ``training`` (losses, metrics, loop, runs),
``reporting`` (tables), ``config`` (presets and the workflow suite); ``splits`` and ``pipeline`` (one
function per workflow stage); ``cli`` (the ``gnnbench`` command).
"""

__version__ = "0.1.0"
