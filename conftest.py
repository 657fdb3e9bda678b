"""pytest's root configuration: the skip policy (``tests/skip_policy.py``) for every run."""

pytest_plugins = ["tests.skip_policy"]
