"""Move-choice studies (seeds 000–001): A105 panels, E020/E021 ladder, E023, the evaluator.

``panels`` renders the A105 byte-matched board / legal-list panels; ``move_choice`` turns
positions into frozen ``submit_move`` schedules. Studies read the published label stage,
so they may import ``chess.labels`` (read side), the ``chess`` top level and every lower
layer; never ``chess.transcripts`` or ``causal``.
"""
