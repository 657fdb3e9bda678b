"""Load ARLArena's methods into OpenRLHF: Ray's worker setup hook that patches six functions.

OpenRLHF 0.11.2 has no extension point for policy losses, advantage estimators or sample
filters, so :func:`install`, run in every Ray worker through Ray's ``worker_process_setup_hook``
(``scripts/openrlhf/train.sh`` submits the job with
``--runtime-env-json '{"worker_process_setup_hook":
"arlarena_baselines.openrlhf.plugin.install", ...}'``), replaces these attributes:

- ``openrlhf.models.loss.PolicyLoss.forward``: the loss of every ``PolicyLoss`` (the one the
  DeepSpeed actor workers build) becomes :func:`~.loss.openrlhf_policy_loss`;
- ``openrlhf.trainer.ppo_utils.experience_maker.RemoteExperienceMaker
  .compute_advantages_and_returns`` (run in the PPO trainer actor): OpenRLHF's length
  penalties, then :func:`~.advantages.method_advantages`;
- ``openrlhf.trainer.ppo_utils.samples_generator.SamplesGenerator.generate_samples``: one
  step's groups, filtered by the method's rule with its cold start, round limit and top-up,
  ending the run after ``ARLARENA_STEPS`` (:func:`~.sampling.step_samples`);
  ``generate_eval_samples``: the evaluation's top-p / top-k (:func:`~.sampling.eval_sampling`);
- ``openrlhf.trainer.ppo_trainer.BasePPOTrainer.init_checkpoint_states``: hands the resumed
  step to the sample generator; ``openrlhf.trainer.ppo_trainer.compute_eval_metrics``: adds
  success rate, score and return (:func:`~.sampling.eval_metrics`).

Each reads the method from ``ARLARENA_METHOD`` (:mod:`.settings`) at every call and falls
back to OpenRLHF's original when it is unset. The patches are applied when those modules are
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


def _with_method(original: Callable, patched: Callable) -> Callable:
    """``patched(*args)`` when ``ARLARENA_METHOD`` names a method, else ``original(*args)``."""
    from arlarena_baselines.openrlhf.settings import RunSettings, method_from_environ

    def call(*args: Any, **kwargs: Any) -> Any:
        method = method_from_environ()
        if method is None:
            return original(*args, **kwargs)
        return patched(method, RunSettings.from_environ(), *args, **kwargs)

    return call


def _policy_loss_forward(module: ModuleType, original: Callable) -> Callable:
    from arlarena_baselines.openrlhf.loss import openrlhf_policy_loss

    def forward(
        method: Any,
        settings: Any,
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
        if self.is_correction_level != "off":
            raise ValueError(f"ARLArena's {method.name} does not support OpenRLHF's vLLM "
                             "importance-sampling correction (--algo.advantage.is_correction_*)")
        return openrlhf_policy_loss(method, log_probs, old_log_probs, advantages, action_mask,
                                    dp_size, batch_num_tokens, global_batch_size)

    return _with_method(original, forward)


def _compute_advantages(module: ModuleType, original: Callable) -> Callable:
    from arlarena_baselines.openrlhf.advantages import method_advantages

    def compute_advantages_and_returns(method: Any, settings: Any, self: Any,
                                       experiences: list[Any]) -> list[Any]:
        args = self.strategy.args
        if args.algo.kl.init_coef > 0 and not args.algo.kl.use_loss:
            raise ValueError(f"ARLArena's {method.name} puts the KL in the loss: pass "
                             "--algo.kl.use_loss (or --algo.kl.init_coef 0)")
        for experience in experiences:
            experience.rewards = experience.rewards.float()
        module.apply_length_penalties(experiences, args)
        method_advantages(experiences, method, args.rollout.n_samples_per_prompt)
        return experiences

    return _with_method(original, compute_advantages_and_returns)


def _generate_samples(module: ModuleType, original: Callable) -> Callable:
    from arlarena_baselines.openrlhf.sampling import step_samples

    def generate_samples(method: Any, settings: Any, self: Any, **generate_kwargs: Any) -> Any:
        if self.args.algo.dynamic_filtering_enable:
            raise ValueError(f"ARLArena's {method.name} filters with its own rule: drop "
                             "--algo.dynamic_filtering_enable")
        return step_samples(self, method, settings, **generate_kwargs)

    return _with_method(original, generate_samples)


def _generate_eval_samples(module: ModuleType, original: Callable) -> Callable:
    from arlarena_baselines.openrlhf.sampling import eval_sampling

    def generate_eval_samples(method: Any, settings: Any, self: Any, **kwargs: Any) -> Any:
        return original(self, **eval_sampling(kwargs, settings))

    return _with_method(original, generate_eval_samples)


def _init_checkpoint_states(module: ModuleType, original: Callable) -> Callable:
    from arlarena_baselines.openrlhf.sampling import resume_step

    def init_checkpoint_states(method: Any, settings: Any, self: Any) -> Any:
        states = original(self)
        resume_step(self.samples_generator, states["global_step"])
        return states

    return _with_method(original, init_checkpoint_states)


def _compute_eval_metrics(module: ModuleType, original: Callable) -> Callable:
    from arlarena_baselines.openrlhf.sampling import eval_metrics

    def compute_eval_metrics(method: Any, settings: Any, loader: Any, samples: Any,
                             n_samples_per_prompt: int) -> Any:
        return eval_metrics(original(loader, samples, n_samples_per_prompt), samples)

    return _with_method(original, compute_eval_metrics)


@dataclass(frozen=True)
class Patch:
    """Replace ``module.owner.attribute`` (``module.attribute`` when ``owner`` is ``None``)
    with ``wrap(module, original)``."""

    module: str
    owner: str | None
    attribute: str
    wrap: Callable[[ModuleType, Callable], Callable]

    def apply(self, module: ModuleType) -> None:
        """Patch the loaded ``module`` (once: a patched attribute is left as it is)."""
        owner = module if self.owner is None else getattr(module, self.owner)
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
        owner = module if self.owner is None else getattr(module, self.owner)
        return getattr(getattr(owner, self.attribute), _MARK, False)


_SAMPLES = "openrlhf.trainer.ppo_utils.samples_generator"
_TRAINER = "openrlhf.trainer.ppo_trainer"
PATCHES: tuple[Patch, ...] = (
    Patch("openrlhf.models.loss", "PolicyLoss", "forward", _policy_loss_forward),
    Patch("openrlhf.trainer.ppo_utils.experience_maker", "RemoteExperienceMaker",
          "compute_advantages_and_returns", _compute_advantages),
    Patch(_SAMPLES, "SamplesGenerator", "generate_samples", _generate_samples),
    Patch(_SAMPLES, "SamplesGenerator", "generate_eval_samples", _generate_eval_samples),
    Patch(_TRAINER, "BasePPOTrainer", "init_checkpoint_states", _init_checkpoint_states),
    Patch(_TRAINER, None, "compute_eval_metrics", _compute_eval_metrics),
)


class _PatchingLoader(importlib.abc.Loader):
    """Runs the real loader, then the module's patches."""

    def __init__(self, loader: importlib.abc.Loader, patches: list[Patch]) -> None:
        self.loader, self.patches = loader, patches

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType | None:
        return self.loader.create_module(spec)

    def exec_module(self, module: ModuleType) -> None:
        self.loader.exec_module(module)
        for patch in self.patches:
            patch.apply(module)


class _PatchOnImport(importlib.abc.MetaPathFinder):
    """Finds the :data:`PATCHES` modules as the path finder does, with a patching loader."""

    def find_spec(self, name: str, path: Any, target: ModuleType | None = None) -> Any:
        patches = [p for p in PATCHES if p.module == name]
        if not patches:
            return None
        spec = importlib.machinery.PathFinder.find_spec(name, path, target)
        if spec is None or spec.loader is None:
            return None
        spec.loader = _PatchingLoader(spec.loader, patches)
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
