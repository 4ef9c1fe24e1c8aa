"""Where the DAGs find logkeeper: the checkout, its log dirs and its Delta warehouse (from the environment).

* `LOGKEEPER_HOME`: the logkeeper checkout (default: the parent of this folder); its
  `spark-submit.sh` runs the jobs with the checkout's own virtualenv.
* `LOGKEEPER_LOG_DIRS`: comma-separated Kafka log dirs to maintain.
* `LOGKEEPER_WAREHOUSE`: the Delta warehouse (default: `$LOGKEEPER_HOME/warehouse`).
* `LOGKEEPER_SPARK_MASTER`: the Spark master (default: spark-submit's, from conf/spark-defaults.conf).
* `LOGKEEPER_TOPIC_CONFIG`: a topic-config file given to every job (`--topic-config`): needed for
  ZooKeeper-mode clusters, whose topic configs no log dir holds (e.g. the output of
  `kafka-configs.sh --describe --all --entity-type topics`); KRaft clusters need none.

Only the standard library is imported here, so DAG files stay cheap to parse.
"""

from __future__ import annotations

import os
import re
import shlex
from pathlib import Path


def home() -> Path:
    return Path(os.environ.get("LOGKEEPER_HOME", Path(__file__).resolve().parent.parent))


def log_dirs() -> list[str]:
    return [d.strip() for d in os.environ.get("LOGKEEPER_LOG_DIRS", "").split(",") if d.strip()]


def submit(job: str, *args: str) -> str:
    """The shell command that submits one logkeeper job through spark-submit.sh."""
    warehouse = os.environ.get("LOGKEEPER_WAREHOUSE", str(home() / "warehouse"))
    master = os.environ.get("LOGKEEPER_SPARK_MASTER")
    spark = ["--master", master] if master else []
    topic_config = os.environ.get("LOGKEEPER_TOPIC_CONFIG")
    topics = ["--topic-config", topic_config] if topic_config else []
    command = [str(home() / "spark-submit.sh"), *spark, job, "--warehouse", warehouse, *topics, *args]
    return " ".join(shlex.quote(part) for part in command)


def job_run_id(airflow_run_id: str, map_index: int = -1) -> str:
    """logkeeper's `--run-id` for a task: Airflow's run id in the characters logkeeper accepts, plus the
    map index of a mapped task (each log dir's task writes its own rows)."""
    base = re.sub(r"[^A-Za-z0-9._-]", "_", airflow_run_id).strip("._-") or "airflow"
    return (base if map_index < 0 else f"{base}.{map_index}")[:128]
