"""The optimiser: passes that know primitives, and the pipeline that runs them.

Generic IR (nodes, control ops, ``dce``/``cse``) is in ``s2sad/ir/``; what is
here rewrites programs using facts about particular primitives (a seed of
ones, a mean's seed, a product's gradients, polynomials, negations, loop
invariants) and schedules memory for codegen (``liveness``).  ``pipeline``
names the lists of passes each compile runs; ``options`` holds the
process-wide ``CompileOptions`` that switch them (and Taylor mode) off.
Nothing here imports AD: reverse mode reads ``options`` to ask whether an
in-AD optimisation is on, so this layer sits below ``s2sad/ad/``.
"""
