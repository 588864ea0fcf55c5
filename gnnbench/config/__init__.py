"""Run configs: the keys a run config may hold and their checks, the published configs (presets) and parameter
budgets. The suite that names them is :mod:`gnnbench.suite`."""
