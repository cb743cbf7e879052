"""The source-agnostic engine: transaction assembly, bronze log, schema history, MERGE, checkpoints."""
