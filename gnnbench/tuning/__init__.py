"""Equal tuning: the parts that know no protocol, one concept per module.

- :mod:`~gnnbench.tuning.space`: search spaces (:class:`~gnnbench.tuning.space.Dist`), the suite syntax
  (:func:`~gnnbench.tuning.space.parse_space`), a default space for any model config
  (:func:`~gnnbench.tuning.space.default_space`), trial configs (:func:`~gnnbench.tuning.space.apply`) and which
  trials can train as one stack (:func:`~gnnbench.tuning.space.shape_key`);
- :mod:`~gnnbench.tuning.sampler`: the trials of a search (:class:`~gnnbench.tuning.sampler.Trial`) and the next
  ones, from a seeded Optuna sampler that replays the earlier ones (:func:`~gnnbench.tuning.sampler.ask`);
- :mod:`~gnnbench.tuning.pruning`: the engine rule that stops unpromising trials (ASHA, median);
- :mod:`~gnnbench.tuning.select`: the selected trial and the tuning curve;
- :mod:`~gnnbench.tuning.record`: trials as run-record rows (stage ``trial``) and back, so that the run record is
  the search's one source of truth.
"""
