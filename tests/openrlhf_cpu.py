"""OpenRLHF's training modules on a CPU-only machine: stub what they import only for GPUs.

With ``pip install 'arlarena[openrlhf]'`` (Ray, DeepSpeed built with ``DS_BUILD_OPS=0``, PEFT,
torchdata, ...) the OpenRLHF modules ARLArena patches import on a CPU, except for two
GPU-only dependencies they import at load time: flash-attn (through
``openrlhf.models.ring_attn_utils``) and vLLM (``openrlhf.trainer.ray.vllm_engine`` and
``samples_generator``). Inside ``with gpu_only_stubs():`` a stub module stands in
``sys.modules`` for each one that cannot be imported (anything taken from a stub raises when
called); on exit the stubs leave ``sys.modules``, so later ``importorskip("vllm")`` calls
still skip. Modules imported inside keep their references to the stubs.
"""

from __future__ import annotations

import importlib.util
import sys
import types
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["GPU_ONLY", "gpu_only_stubs"]

# stub module -> (the package whose absence requires it, the names importers take from it)
GPU_ONLY: dict[str, tuple[str, tuple[str, ...]]] = {
    "openrlhf.models.ring_attn_utils": ("flash_attn", (
        "gather_and_pad_tensor", "unpad_and_slice_tensor", "get_ring_attn_group",
        "set_ring_attn_group",
    )),
    "vllm": ("vllm", ("SamplingParams",)),
    "vllm.inputs": ("vllm", ("TokensPrompt",)),
    "vllm.utils": ("vllm", ("random_uuid",)),
}


def _gpu_only(name: str) -> type:
    def fail(*args: object, **kwargs: object) -> None:
        raise RuntimeError(f"{name} is a CPU-test stub of a GPU-only module")

    return type(name, (), {"__init__": fail, "__call__": fail})


@contextmanager
def gpu_only_stubs() -> Iterator[list[str]]:
    """Stub each :data:`GPU_ONLY` module whose package is missing; yield the stubbed names."""
    packages = {package for package, _ in GPU_ONLY.values()}
    missing = {p for p in packages if p not in sys.modules and importlib.util.find_spec(p) is None}
    stubs = {}
    for name, (package, names) in GPU_ONLY.items():
        if name in sys.modules or package not in missing:
            continue
        module = types.ModuleType(name)
        for attribute in names:
            setattr(module, attribute, _gpu_only(f"{name}.{attribute}"))
        stubs[name] = sys.modules[name] = module
    try:
        yield list(stubs)
    finally:
        for name, module in stubs.items():
            if sys.modules.get(name) is module:
                del sys.modules[name]
