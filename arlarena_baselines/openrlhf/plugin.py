"""Load ARLArena's methods into OpenRLHF: Ray's worker setup hook that patches two functions.

OpenRLHF 0.11.2 has no extension point for policy losses or advantage estimators, so
:func:`install`, run in every Ray worker through Ray's ``worker_process_setup_hook``
(``scripts/openrlhf/train.sh`` submits the job with
``--runtime-env-json '{"worker_process_setup_hook":
"arlarena_baselines.openrlhf.plugin.install", ...}'``), replaces two class attributes:

- ``openrlhf.models.loss.PolicyLoss.forward``: the loss of every ``PolicyLoss`` (the one the
  DeepSpeed actor workers build) becomes :func:`~.loss.openrlhf_policy_loss`;
- ``openrlhf.trainer.ppo_utils.experience_maker.RemoteExperienceMaker
  .compute_advantages_and_returns`` (run in the PPO trainer actor): OpenRLHF's length
  penalties, then :func:`~.advantages.method_advantages`.

Both read the method from ``ARLARENA_METHOD`` (:mod:`.settings`) at every call and fall back
to OpenRLHF's original when it is unset. The patches are applied when those modules are
imported (an import hook), not by importing them: the hook also runs in the vLLM workers,
which OpenRLHF keeps free of DeepSpeed, so it imports nothing until a patch is applied. No
OpenRLHF code is copied.
"""

from __future__ import annotations

import functools
import importlib.abc
import importlib.machinery
import sys
from collections.abc import Callable
from dataclasses import dataclass
from types import ModuleType
from typing import Any

__all__ = ["PATCHES", "Patch", "install"]

_MARK = "__arlarena_patched__"


def _policy_loss_forward(module: ModuleType, original: Callable) -> Callable:
    from arlarena_baselines.openrlhf.loss import openrlhf_policy_loss
    from arlarena_baselines.openrlhf.settings import method_from_environ

    def forward(
        self: Any,
        log_probs: Any,
        old_log_probs: Any,
        advantages: Any,
        action_mask: Any = None,
        rollout_log_probs: Any = None,
        dp_size: int = 1,
        batch_num_tokens: Any = None,
        global_batch_size: Any = None,
    ) -> Any:
        method = method_from_environ()
        if method is None:
            return original(self, log_probs, old_log_probs, advantages, action_mask,
                            rollout_log_probs, dp_size, batch_num_tokens, global_batch_size)
        if self.is_correction_level != "off":
            raise ValueError(f"ARLArena's {method.name} does not support OpenRLHF's vLLM "
                             "importance-sampling correction (--algo.advantage.is_correction_*)")
        return openrlhf_policy_loss(method, log_probs, old_log_probs, advantages, action_mask,
                                    dp_size, batch_num_tokens, global_batch_size)

    return forward


def _compute_advantages(module: ModuleType, original: Callable) -> Callable:
    from arlarena_baselines.openrlhf.advantages import method_advantages
    from arlarena_baselines.openrlhf.settings import method_from_environ

    def compute_advantages_and_returns(self: Any, experiences: list[Any]) -> list[Any]:
        method = method_from_environ()
        if method is None:
            return original(self, experiences)
        args = self.strategy.args
        if args.algo.kl.init_coef > 0 and not args.algo.kl.use_loss:
            raise ValueError(f"ARLArena's {method.name} puts the KL in the loss: pass "
                             "--algo.kl.use_loss (or --algo.kl.init_coef 0)")
        for experience in experiences:
            experience.rewards = experience.rewards.float()
        module.apply_length_penalties(experiences, args)
        method_advantages(experiences, method, args.rollout.n_samples_per_prompt)
        return experiences

    return compute_advantages_and_returns


@dataclass(frozen=True)
class Patch:
    """Replace ``module.owner.attribute`` with ``wrap(module, original)``."""

    module: str
    owner: str
    attribute: str
    wrap: Callable[[ModuleType, Callable], Callable]

    def apply(self, module: ModuleType) -> None:
        """Patch the loaded ``module`` (once: a patched attribute is left as it is)."""
        owner = getattr(module, self.owner)
        original = getattr(owner, self.attribute)
        if getattr(original, _MARK, False):
            return
        replacement = functools.wraps(original)(self.wrap(module, original))
        setattr(replacement, _MARK, True)
        setattr(owner, self.attribute, replacement)

    def applied(self) -> bool:
        """Whether the module is loaded and patched."""
        module = sys.modules.get(self.module)
        if module is None:
            return False
        return getattr(getattr(getattr(module, self.owner), self.attribute), _MARK, False)


PATCHES: tuple[Patch, ...] = (
    Patch("openrlhf.models.loss", "PolicyLoss", "forward", _policy_loss_forward),
    Patch("openrlhf.trainer.ppo_utils.experience_maker", "RemoteExperienceMaker",
          "compute_advantages_and_returns", _compute_advantages),
)


class _PatchingLoader(importlib.abc.Loader):
    """Runs the real loader, then the patch."""

    def __init__(self, loader: importlib.abc.Loader, patch: Patch) -> None:
        self.loader, self.patch = loader, patch

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType | None:
        return self.loader.create_module(spec)

    def exec_module(self, module: ModuleType) -> None:
        self.loader.exec_module(module)
        self.patch.apply(module)


class _PatchOnImport(importlib.abc.MetaPathFinder):
    """Finds the :data:`PATCHES` modules as the path finder does, with a patching loader."""

    def find_spec(self, name: str, path: Any, target: ModuleType | None = None) -> Any:
        patch = next((p for p in PATCHES if p.module == name), None)
        if patch is None:
            return None
        spec = importlib.machinery.PathFinder.find_spec(name, path, target)
        if spec is None or spec.loader is None:
            return None
        spec.loader = _PatchingLoader(spec.loader, patch)
        return spec


def install() -> None:
    """Patch the :data:`PATCHES` modules now if loaded, else as soon as they are imported.

    Idempotent; this is the ``worker_process_setup_hook``.
    """
    for patch in PATCHES:
        module = sys.modules.get(patch.module)
        if module is not None:
            patch.apply(module)
    if not any(isinstance(finder, _PatchOnImport) for finder in sys.meta_path):
        sys.meta_path.insert(0, _PatchOnImport())
