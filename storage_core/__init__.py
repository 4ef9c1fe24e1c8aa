"""storage_core: Kafka's partition-log on-disk format, owned in one pure-Python library.

No Spark, Airflow or Delta import is allowed anywhere below this package.
"""
