"""Db2 source: ASN Capture change-data tables read by Spark in parallel, JDBC snapshots."""
