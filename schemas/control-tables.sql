-- Generated from cdclake.engine.control / cdclake.engine.events; Spark SQL DDL.
-- <lake>/<pipeline>/_cdclake/bronze
CREATE TABLE bronze (window_id BIGINT, source_table STRING, op STRING, seq DECIMAL(38,0), position STRING,
  txid STRING, commit_ts TIMESTAMP, schema_version BIGINT, before STRING, after STRING) USING delta;

-- <lake>/<pipeline>/_cdclake/checkpoints
CREATE TABLE checkpoints (rev BIGINT, kind STRING, window_id BIGINT, status STRING, table_name STRING,
  position STRING, position_ordinal DECIMAL(38,0), start_position STRING, end_limit STRING, max_events BIGINT,
  run_id STRING, updated_at TIMESTAMP, detail STRING) USING delta;

-- <lake>/<pipeline>/_cdclake/schema_history
CREATE TABLE schema_history (version BIGINT, source_table STRING, seq DECIMAL(38,0), position STRING,
  ddl STRING, kind STRING, schema STRING, renamed_from STRING, column_renames STRING, window_id BIGINT,
  recorded_at TIMESTAMP) USING delta;

-- <lake>/<pipeline>/_cdclake/runs
CREATE TABLE runs (run_id STRING, command STRING, window_id BIGINT, status STRING, started_at TIMESTAMP,
  ended_at TIMESTAMP, duration_s DOUBLE, events BIGINT, transactions BIGINT, rows_by_table MAP<STRING,BIGINT>,
  lag_s DOUBLE, start_position STRING, end_position STRING, error STRING,
  -- a failed run: the error's class and whether only an operator can cure it (status: a stopped pipeline)
  error_kind STRING, error_permanent BOOLEAN) USING delta;

-- <lake>/<pipeline>/_cdclake/dead_letters
CREATE TABLE dead_letters (window_id BIGINT, source_table STRING, seq DECIMAL(38,0), position STRING,
  op STRING, reason STRING, before STRING, after STRING, recorded_at TIMESTAMP) USING delta;

-- <lake>/<pipeline>/_cdclake/quality: one row per table, window (null: after a snapshot) and expectation
-- checked by the data-quality gate (cdclake.engine.quality.QUALITY_DDL); observed is short JSON.
CREATE TABLE quality (run_id STRING, window_id BIGINT, source_table STRING, expectation STRING, `column` STRING,
  success BOOLEAN, unexpected_count BIGINT, element_count BIGINT, observed STRING, severity STRING,
  checked_at TIMESTAMP) USING delta;

-- <lake>/<pipeline>/_cdclake/reconcile: one row per table and `cdclake reconcile` run
-- (cdclake.engine.repair.reconcile.RECONCILE_DDL); sample_keys is JSON: up to 100 keys per kind.
CREATE TABLE reconcile (run_id STRING, source_table STRING, checked_at TIMESTAMP, chunks BIGINT,
  chunks_mismatched BIGINT, source_rows BIGINT, lake_rows BIGINT, only_in_source BIGINT, only_in_lake BIGINT,
  different BIGINT, repaired BOOLEAN, sample_keys STRING) USING delta;

-- Frame-mining sources (Oracle): changes of transactions open at a window's end, and ended transactions.
CREATE TABLE inflight (
  window_id BIGINT, idx BIGINT, kind STRING, txid STRING, source_table STRING, op STRING, before STRING,
  after STRING, schema_version BIGINT, locator STRING, ordinal DECIMAL(38,0), position STRING,
  event_ts TIMESTAMP, error STRING, raw STRING
) USING delta;

CREATE TABLE transactions (
  txid STRING, status STRING, window_id BIGINT, ordinal DECIMAL(38,0), position STRING, commit_ts TIMESTAMP,
  first_window BIGINT, first_ordinal DECIMAL(38,0), first_position STRING, first_ts TIMESTAMP, rows BIGINT,
  tables ARRAY<STRING>, recorded_at TIMESTAMP
) USING delta;
