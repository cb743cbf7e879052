import time, collections, atexit
from cdclake.engine.pipeline import Pipeline
from cdclake.engine.apply import WindowApplier
from cdclake.engine.target import TargetTables
from cdclake.engine import mining
acc = collections.Counter(); cnt = collections.Counter()
def _wrap(cls, name, label=None):
    orig = getattr(cls, name)
    label = label or f"{cls.__name__}.{name}"
    def f(self, *a, **k):
        t0 = time.time()
        try:
            return orig(self, *a, **k)
        finally:
            acc[label] += time.time() - t0; cnt[label] += 1
            if cls is Pipeline: print(f"\nTIMING {label} {time.time()-t0:.1f}s", flush=True)
    setattr(cls, name, f)
for n in ("snapshot", "mine", "backfill"): _wrap(Pipeline, n)
for n in ("apply_ddl", "_merge_segment", "apply_table"): _wrap(WindowApplier, n)
for n in ("evolve", "_rewrite", "create", "copy_rows", "truncate", "_reorder", "_change_type", "_retype_in_place", "_evolve_one", "applied_marker", "set_marker", "_reshape_for_replace", "merge_changes", "target_columns", "_table_properties", "_last_commit", "_pending_rewrite", "_enable_features_for"):
    if hasattr(TargetTables, n): _wrap(TargetTables, n)
for n in ("mine", "records", "frame", "_record_history"): _wrap(mining.WindowMiner, n)
def report():
    for k, v in sorted(acc.items(), key=lambda x: -x[1]):
        print(f"ACC {k:45s} {v:7.1f}s n={cnt[k]}")
atexit.register(report)
