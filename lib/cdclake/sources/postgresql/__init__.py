"""The PostgreSQL source (issue 19, in progress: not registered as a plug-in until it is complete)."""
