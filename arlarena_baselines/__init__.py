"""ARLArena baselines: the algorithm zoo, rollouts, trainers, evaluation and the CLI."""
