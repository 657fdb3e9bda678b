"""The study's Figure 3 quantities, per configuration: where each method's own band acts, split
by the sign of the advantage, and the share of the KL to π_ref carried by each of 8 token
groups.

Each method's own band (:func:`own_band_keys`), as the study's code measures it:

- PPO clip, GSPO (on the sequence ratio) and SAPO (whose gate has no hard band: the study
  reports the PPO band [1 − ε_low, 1 + ε_high] as its diagnostic): the tokens where the clip
  binds, the lower-bound part at A < 0 (ratio below 1 − ε_low) and the upper-bound part at
  A > 0 (ratio above 1 + ε_high); the loss's own count;
- CISPO: the tokens whose importance weight is clipped (ratio outside [1 − ε_low, 1 + ε_high],
  on either side: with the study's ε_low = 1 only the upper bound can act), at A < 0 and at
  A > 0; the loss's own lower count (A < 0, below the band) is 0 there, so it is read from the
  stability diagnostics, which count either side with the method's band.

The 8 groups: (sign of A) × (sequence ratio below 1 or not) × (token entropy below the
step's median or not); logged only when the run holds a reference model (a KL term, or
``rl.reference_kl``). Holds :func:`own_band_keys`, :func:`kl_shares_logged` and
:func:`figure3_section`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from arlarena_baselines.algos import METHODS, get_method
from arlarena_baselines.algos import metric_names as mn
from arlarena_baselines.arena.tables import num, table

__all__ = ["figure3_section", "kl_shares_logged", "own_band_keys"]


def own_band_keys(method: str) -> tuple[str, str]:
    """The metric keys of ``method``'s out-of-own-band token fractions at A < 0 and A > 0
    (a name outside ``METHODS``, such as the start's: the loss's own).

    >>> own_band_keys("CISPO_SM")
    ('stability/ratio_oob_neg_frac', 'stability/ratio_oob_pos_frac')
    >>> own_band_keys("GRPO")
    ('actor/ratio_oob_low_frac', 'actor/ratio_oob_high_frac')
    """
    if method in METHODS and get_method(method).clipping == "cispo":
        return mn.OOB_NEG_FRAC, mn.OOB_POS_FRAC
    return mn.OOB_LOW_FRAC, mn.OOB_HIGH_FRAC


def kl_shares_logged(config: Any) -> bool:
    """Whether any step of ``config``'s runs logged the 8 KL shares."""
    return any(all(r.get(k) is not None for k in mn.KL_REF_SHARE_KEYS)
               for run in config.runs for r in run.steps)


def _share_label(key: str) -> str:
    adv, ratio, ent = key.split("/")[-3:]
    return (f"A{'≥' if adv == 'adv_pos' else '<'}0 "
            f"s{'≥' if ratio == 'ratio_ge1' else '<'}1 "
            f"H{'↑' if ent == 'ent_high' else '↓'}")


def figure3_section(configs: Sequence[Any], figure: str | None) -> list[str]:
    """The report's Figure 3 table (every configuration but the start and the stress grid's,
    which gives the same two fractions in its own table) and the KL shares where logged."""
    rows, shares, zero = [], [], []
    for c in configs:
        if c.role in ("start", "stress"):
            continue
        low, high = own_band_keys(c.method)
        values = [c.mean(low), c.peak(low), c.mean(high), c.peak(high)]
        if all(v == 0 for v in values):
            zero.append(f"{c.method} ({c.setting})")
        else:
            rows.append([c.method, c.setting, *(num(v, 3) for v in values)])
        if kl_shares_logged(c):
            shares.append([c.method, c.setting,
                           *(num(c.mean(k), 3) for k in mn.KL_REF_SHARE_KEYS)])
    if not rows and not zero:
        return []
    intro = (
        "The study's Figure 3 quantities. Out of band: the fraction of response tokens where "
        "the method's own band acts (PPO clip, GSPO's sequence ratio, SAPO's diagnostic band "
        "as the study logs it: the lower bound at A < 0, the upper bound at A > 0; CISPO: the "
        "importance weight clipped on either side, at A < 0 and at A > 0), mean and peak over "
        "the steps and seeds. At one update a step the ratio is 1 when the loss is taken, so "
        "they are 0 there.")
    lines = ["", "## Figure 3: out-of-band tokens and KL shares", "", intro, ""]
    if rows:
        lines += [*table(["method", "setting", "A<0 mean", "A<0 peak", "A>0 mean", "A>0 peak"],
                         rows), ""]
    if zero:
        lines += [f"0 at every step and seed: {', '.join(zero)}.", ""]
    if shares:
        lines += ["The share of the summed k3 KL to πref carried by each token group, mean over "
                  "the steps and seeds: A < 0 or A ≥ 0 × sequence ratio s below 1 or not × token "
                  "entropy H below the step's median (↓) or not (↑).", "",
                  *table(["method", "setting", *map(_share_label, mn.KL_REF_SHARE_KEYS)],
                         shares)]
        if figure is not None:
            lines += ["", f"![kl_shares]({figure})"]
    else:
        lines.append("KL shares: not logged. The runs keep no reference model (no KL term, "
                     "and `rl.reference_kl` off), so there is no KL to πref to divide among "
                     "the token groups.")
    return lines
