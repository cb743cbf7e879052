"""Target Delta tables, one part per job (``ctx.targets`` holds them: :class:`.targets.Targets`):

* :mod:`.options` — the session, the source's types and the lake's settings every part works with;
* :mod:`.changes` — bronze change rows decoded (images, undecodable rows, keys a batch removes);
* :mod:`.shape` — make a target (and its type-2 table), empty it for another schema, evolve it;
  :mod:`.rewrite` — type changes, column moves and the two-commit rewrite it needs;
* :mod:`.merge` — the MERGE of change batches and of re-read rows, and the apply rules;
  :mod:`.partial` — values the log left out of an image;
* :mod:`.keyless` — tables without a row key, kept as multisets;
* :mod:`.type2` — SCD type-2 tables (``lake.history_tables``);
* :mod:`.bulk` — a snapshot's rows, a truncate, a renamed table's rows;
* :mod:`.marks` — which schema or barrier step a target has done (resumed windows).
"""
