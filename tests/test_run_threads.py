"""``run.threads=0`` / ``--threads 0``: torch threads from the machine's cores."""

from __future__ import annotations

import os

import torch

from arlarena_baselines.trainer.runs import TorchThreads, auto_threads


def test_auto_threads_take_half_the_cores_whatever_the_load(monkeypatch):
    monkeypatch.setattr(torch, "get_num_threads", lambda: 64)
    for cores, threads in ((1, 1), (2, 1), (3, 1), (16, 8)):
        monkeypatch.setattr(os, "sched_getaffinity", lambda _, n=cores: set(range(n)))
        for load in (0.0, 40.0):
            monkeypatch.setattr(os, "getloadavg", lambda value=load: (value, value, value))
            assert auto_threads() == threads
    monkeypatch.setattr(torch, "get_num_threads", lambda: 4)
    assert auto_threads() == 4  # never more than torch's default


def test_torch_threads_are_set_for_a_run_and_restored():
    before = torch.get_num_threads()
    threads = TorchThreads(1)
    assert torch.get_num_threads() == threads.threads == 1
    threads.restore()
    assert torch.get_num_threads() == before
    automatic = TorchThreads(0)
    assert 1 <= automatic.threads == torch.get_num_threads() <= before
    automatic.restore()
