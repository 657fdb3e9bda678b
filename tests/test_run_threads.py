"""``run.threads=0`` / ``--threads 0``: torch threads from the cores the machine's load leaves."""

from __future__ import annotations

import os

import torch

from arlarena_baselines.trainer.runs import TorchThreads, auto_threads


def test_auto_threads_leave_the_busy_cores_to_their_processes(monkeypatch):
    cores = len(os.sched_getaffinity(0))
    monkeypatch.setattr(torch, "get_num_threads", lambda: cores)
    monkeypatch.setattr(os, "getloadavg", lambda: (0.2, 0.0, 0.0))
    assert auto_threads() == cores
    monkeypatch.setattr(os, "getloadavg", lambda: (cores - 0.8, 0.0, 0.0))
    assert auto_threads() == 1
    monkeypatch.setattr(os, "getloadavg", lambda: (3.0 * cores, 0.0, 0.0))
    assert auto_threads() == 1


def test_torch_threads_are_set_for_a_run_and_restored():
    before = torch.get_num_threads()
    threads = TorchThreads(1)
    assert torch.get_num_threads() == threads.threads == 1
    threads.restore()
    assert torch.get_num_threads() == before
    automatic = TorchThreads(0)
    assert 1 <= automatic.threads == torch.get_num_threads() <= before
    automatic.restore()
