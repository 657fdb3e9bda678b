"""ARLArena inside OpenRLHF (Ray + DeepSpeed + vLLM): plugged in, not forked.

OpenRLHF 0.11.2 is extended through two of its own entry points, never copied:

- :mod:`.agent`: the file given to ``--train.agent_func_path``; its ``AgentExecutor`` plays each
  sample as one episode of an ARLArena env (``gymnasium.make`` + the wrapper stack);
- :mod:`.plugin`: Ray's ``worker_process_setup_hook``; in every Ray worker it patches
  OpenRLHF's ``PolicyLoss.forward``, ``RemoteExperienceMaker.compute_advantages_and_returns``
  and ``SamplesGenerator.generate_samples`` (when those modules load), among others, so that
  they run the method of :data:`~arlarena_baselines.algos.METHODS` named by
  ``ARLARENA_METHOD`` (:mod:`.loss`, :mod:`.advantages`, :mod:`.sampling`).

:mod:`.settings` holds the environment variables both read, :mod:`.turn_logs` the per-turn
columns the agent sends to the advantage hook, :mod:`.sampling` a step's samples drawn and
filtered by the method's own rule and the evaluation's sampling and metrics (the plug-in's
other patches), :mod:`.launch` builds the ``ray job submit`` command of
``scripts/openrlhf/train.sh`` per env × method at the study's settings, :mod:`.cli` checks it
with OpenRLHF's own argument parser, and :mod:`.sizing` measures episode lengths and the
memory a micro-batch needs. Importing this package imports neither Ray nor OpenRLHF.
"""
