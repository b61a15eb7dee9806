"""Domain skins and question templates (seed 003 "Task families", "Splits and contamination").

A skin renames variables only: it maps each world variable to a name drawn at
random from the skin's pool, so no role (treatment, outcome) is ever signalled
by a name (the CLadder naming shortcut). It adds no causal information — the
nonsense skin ("blorp", "quix") exists to test exactly that, and so do the skin swap and
the renaming mutations (:func:`swapped_skin`, :func:`renamed_skin`). Questions come from
templates picked at random; the structured query travels with the text.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

SKINS: dict[str, tuple[str, ...]] = {
    "linux": (
        "swap_pressure", "oom_kill", "disk_full", "log_rotation", "cron_backlog",
        "io_wait", "nfs_stall", "kernel_update", "cache_eviction", "dns_timeout",
        "load_spike", "fd_exhaustion", "ntp_drift", "tmp_cleanup", "zombie_procs",
        "cpu_throttle",
    ),
    "logistics": (
        "late_truck", "dock_congestion", "missed_scan", "driver_shortage", "storm_delay",
        "pallet_damage", "route_change", "fuel_surcharge", "customs_hold", "overbooking",
        "label_error", "forklift_down", "late_manifest", "reefer_alarm", "short_pick",
        "yard_backlog",
    ),
    "sensors": (
        "temp_alarm", "humidity_high", "fan_fault", "vibration_peak", "power_dip",
        "calib_drift", "dust_buildup", "door_open", "pressure_low", "battery_low",
        "signal_loss", "relay_trip", "gps_jitter", "firmware_old", "ground_fault",
        "sensor_icing",
    ),
    "physics": (
        "heater_on", "gas_expands", "piston_moves", "valve_open", "spring_stretched",
        "magnet_near", "current_flows", "lamp_glows", "wire_hot", "bell_rings",
        "ice_melts", "pendulum_swings", "lens_fogs", "coil_charged", "fuse_blown",
        "plate_vibrates",
    ),
    "fiction": (
        "dragon_wakes", "village_burns", "knight_rides", "oracle_speaks", "moon_red",
        "bridge_falls", "wizard_angry", "crops_fail", "bells_toll", "river_floods",
        "queen_ill", "raven_arrives", "gate_sealed", "sword_glows", "tower_shakes",
        "fog_rolls",
    ),
    "nonsense": (
        "blorp", "quix", "zarn", "fenk", "wib", "trolm", "snerk", "plav", "gorf", "dwill",
        "yemp", "krosh", "vunt", "mizzle", "thrap", "oobit",
    ),
}
"""Name pool per skin; every pool holds 16 distinct names (enough for the largest world)."""

DOMAIN_SKINS: tuple[str, ...] = ("linux", "logistics", "sensors", "physics", "fiction")
"""The meaningful skins; ``nonsense`` is the invariance control."""


@dataclass(frozen=True)
class Skin:
    """A variable renaming for one world under one skin."""

    name: str
    """Skin name (a key of :data:`SKINS`)."""
    mapping: Mapping[str, str]
    """World variable name -> public name."""

    def rename(self, variable: str) -> str:
        """Return the public name of ``variable``."""
        return self.mapping[variable]

    def rename_event(self, event: Mapping[str, int]) -> dict[str, int]:
        """Rename the keys of an event."""
        return {self.mapping[k]: v for k, v in event.items()}

    def rename_edges(self, edges: Sequence[tuple[str, str]]) -> list[tuple[str, str]]:
        """Rename both ends of every edge, keeping order."""
        return [(self.mapping[a], self.mapping[b]) for a, b in edges]


def draw_skin(skin: str, variables: Sequence[str], rng: np.random.Generator) -> Skin:
    """Assign each variable a distinct random name from the skin's pool."""
    pool = SKINS[skin]
    if len(variables) > len(pool):
        raise ValueError(f"skin {skin!r} has {len(pool)} names, world needs {len(variables)}")
    picks = rng.choice(len(pool), size=len(variables), replace=False)
    return Skin(skin, {v: pool[int(i)] for v, i in zip(sorted(variables), picks, strict=True)})


def swapped_skin(skin: Skin, variables: Sequence[str], rng: np.random.Generator) -> Skin:
    """A skin swap of ``skin``: another domain skin, drawn at random, its names drawn afresh."""
    others = [s for s in DOMAIN_SKINS if s != skin.name]
    return draw_skin(others[int(rng.integers(len(others)))], variables, rng)


RENAMING_TRIES = 64
"""Fresh name draws tried for a renaming that differs from the original's."""


def renamed_skin(skin: Skin, variables: Sequence[str], rng: np.random.Generator) -> Skin:
    """A renaming of ``skin``: the same skin, its names drawn afresh until at least one
    variable's name differs (ValueError after :data:`RENAMING_TRIES` draws)."""
    for _ in range(RENAMING_TRIES):
        other = draw_skin(skin.name, variables, rng)
        if dict(other.mapping) != dict(skin.mapping):
            return other
    raise ValueError(f"no renaming of skin {skin.name!r} found in {RENAMING_TRIES} draws")


def render_event(event: Mapping[str, int], order: Sequence[str]) -> str:
    """Events in the case's listing order, so the text order carries no skin-specific cue."""
    rank = {name: i for i, name in enumerate(order)}
    return ", ".join(f"{k}={event[k]}" for k in sorted(event, key=lambda k: (rank.get(k, 0), k)))


TEMPLATES: dict[str, tuple[str, ...]] = {
    "rung1": (
        "Among observed cases with {evidence}, what is P({target})?",
        "Looking only at records where {evidence}, how often is {target}?",
        "Given that we see {evidence}, what is the probability of {target}?",
    ),
    "rung1_marginal": (
        "What is P({target}) in the observed population?",
        "How often is {target} observed overall?",
    ),
    "rung2": (
        "If we force {do}{given}, what is P({target})?",
        "Suppose an operator sets {do}{given}. What is the probability of {target}?",
        "Under the intervention do({do}){given}, what is P({target})?",
    ),
    "rung3": (
        "In this episode we saw {evidence}. Had {do} been forced, what is P({target})?",
        "We observed {evidence} in one episode. In that same episode, if {do} had been set, "
        "how likely is {target}?",
    ),
    "bounds": (
        "In this episode we saw {evidence}. Had {do} been forced, would {target} hold? "
        "Give the tightest bounds [lo, hi] on this probability the data allow.",
    ),
    "discovery": (
        "Under the stated assumptions, which causal graph over the observed variables "
        "does the joint distribution support? List directed edges.",
        "Recover the causal structure (up to what the data identify) among the observed "
        "variables; answer with directed edges.",
    ),
    "mediation": (
        "Suppose {do} is forced while {mediators} keep the values they would have taken "
        "under {inner}. What is P({target})?",
    ),
    "decision": (
        "Each occurrence of {bad} costs {loss} units. Which action minimizes the expected "
        "loss, counting its cost? Options: {options}.",
    ),
}
"""Question templates keyed by question kind; the structured ``query`` is always attached.

``mediation`` and ``decision`` have one wording each, filled by ``build`` (their slots are
not events alone); the paraphrase table (``paraphrases.PARAPHRASES``) has the same keys."""


def render_question(
    kind: str,
    rng: np.random.Generator,
    *,
    target: Mapping[str, int] | None = None,
    do: Mapping[str, int] | None = None,
    evidence: Mapping[str, int] | None = None,
    order: Sequence[str] = (),
) -> str:
    """Fill a randomly chosen template of ``kind`` with skinned events listed in ``order``."""
    if kind == "rung1" and not evidence:
        kind = "rung1_marginal"
    options = TEMPLATES[kind]
    template = options[int(rng.integers(len(options)))]
    given = (f", among cases with {render_event(evidence, order)}"
             if evidence and kind == "rung2" else "")
    return template.format(
        target=render_event(target or {}, order),
        do=render_event(do or {}, order),
        evidence=render_event(evidence or {}, order),
        given=given,
    )
