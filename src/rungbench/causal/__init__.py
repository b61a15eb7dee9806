"""Causal worlds: binary SCMs, the exact oracle, identification and witnesses (seed 003).

Public API (signatures are stable):

- `rungbench.causal.world`: ``World`` (``to_json(seed=)``, ``from_json``), ``Variable``,
  ``Response``, ``Query`` (``from_json``/``to_json``), ``check_query``.
- `rungbench.causal.mechanisms`: ``root``, ``noisy_or``, ``and_interaction``,
  ``noisy_function``, ``deterministic``, ``random_mixture``.
- `rungbench.causal.motifs`: ``Motif``, ``MOTIFS``, ``build_motif``, ``motif_catalogue``,
  ``reversed_query`` and one constructor per motif (``chain``, ``fork``, ``collider``,
  ``selection``, ``confounded``, ``latent_confounded``, ``mediation``, ``and_interaction``,
  ``front_door``, ``m_bias``, ``xor_world``).
- `rungbench.causal.random_dag`: ``DagSpec``, ``random_world``.
- `rungbench.causal.oracle`: ``answer(world, query) -> Answer`` (value + rung-3
  ``Confusions``), ``probability``, ``confusions``, ``pn``, ``ps``, ``pns``, ``mediation``.
- `rungbench.causal.enumeration` / `rungbench.causal.elimination`: the two exact engines
  (vectorized enumeration of exogenous configurations; variable elimination and the
  twin/multi-world network, ``multiworld_probability``, for worlds too large to enumerate).
- `rungbench.causal.joint`: ``observed_joint(world) -> ObservedJoint`` (latents summed out).
- `rungbench.causal.identify`: ``identify(world, x, y) -> Identification`` (verdict,
  adjustment set / front-door set, estimate from the observed joint), ``observed_joint``.
- `rungbench.causal.witness`: ``build_witness(world, x, y) -> Witness | None`` (alternative
  SCM inside the graph, identical observed joint; ``gap``, ``keeps_item`` = gap > 0.02).
- `rungbench.causal.validate`: ``run_validation() -> ValidationReport`` (the seed's table;
  ``rungbench causal validate`` prints it).
"""
