"""cdclake's Airflow DAGs: snapshot, mining and maintenance for every pipeline file in
``$CDCLAKE_PIPELINES_DIR`` (default: the project's ``conf/pipelines/``). See :mod:`cdclake.dags`."""

from cdclake.dags import dags_from_folder

globals().update(dags_from_folder())
