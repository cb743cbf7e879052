"""Repairs that run beside mining: ``cdclake backfill`` (resnapshot, rebuild, remine) and ``cdclake reconcile``.

* :mod:`.resnapshot` re-reads a table or key range from the source at a position and merges it
  under the rule every change follows (a newer change wins, a later delete stays deleted);
* :mod:`.rebuild` rebuilds a target (and its type-2 table) from bronze with the window applier;
* :mod:`.remine` mines applied windows into bronze again with the window miner;
* :mod:`.reconcile` compares source and lake and repairs what differs with resnapshot backfills.

Each is resumable after a kill: its steps are ``backfill`` records (:mod:`.common`); :mod:`.backfill`
is the ``cdclake backfill`` command over the three modes.
"""
