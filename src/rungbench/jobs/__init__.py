"""Jobs: the library behind the commands that span both domains or compose several layers.

``runs`` builds the schedule a source names and the agent a name names, and starts or
resumes a run; ``play`` plays recorded games with a reference agent or a real model;
``designs`` picks the audit of a registered design. Above ``chess`` and ``causal`` (it
alone may choose between them), below ``demo`` and ``cli``.
"""
