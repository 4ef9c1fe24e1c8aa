"""Where the DAGs find logkeeper: the checkout, its log dirs and its Delta warehouse (from the environment).

* `LOGKEEPER_HOME`: the logkeeper checkout (default: the parent of this folder); its
  `spark-submit.sh` runs the jobs with the checkout's own virtualenv.
* `LOGKEEPER_INVENTORY`: the broker inventory (TOML `[[brokers]]` with `id`, `host`, `log_dirs` and
  optionally `queue`; see `jobs/_inventory.py`): the nightly DAG maintains every broker of it, each
  on its own host's queue. The same file must be at the same path on every broker host.
* `LOGKEEPER_LOG_DIRS`: comma-separated Kafka log dirs to maintain (without an inventory: one broker
  on the Airflow worker's own host).
* `LOGKEEPER_STOP_BROKER` / `LOGKEEPER_START_BROKER`: optional shell commands run around a broker's
  maintenance in the same task (`{broker}` and `{host}` are replaced), e.g.
  `systemctl stop kafka`; without them the broker must already be stopped (a running one holds its
  `.lock`: the job exits 3 and the task is skipped).
* `LOGKEEPER_WAREHOUSE`: the Delta warehouse (default: `$LOGKEEPER_HOME/warehouse`).
* `LOGKEEPER_SPARK_MASTER`: the Spark master (default: spark-submit's, from conf/spark-defaults.conf).
* `LOGKEEPER_TOPIC_CONFIG`: a topic-config file given to every job (`--topic-config`): needed for
  ZooKeeper-mode clusters, whose topic configs no log dir holds (e.g. the output of
  `kafka-configs.sh --describe --all --entity-type topics`); KRaft clusters need none.

Only the standard library is imported here, so DAG files stay cheap to parse.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import tempfile
import tomllib
from dataclasses import dataclass
from pathlib import Path

EXIT_REFUSED = 3  # a live broker holds a log dir's .lock: nothing was touched


def home() -> Path:
    return Path(os.environ.get("LOGKEEPER_HOME", Path(__file__).resolve().parent.parent))


def log_dirs() -> list[str]:
    return [d.strip() for d in os.environ.get("LOGKEEPER_LOG_DIRS", "").split(",") if d.strip()]


@dataclass(frozen=True)
class Broker:
    """One broker of the inventory, as the DAGs need it (parsed with the standard library)."""

    id: int
    host: str
    log_dirs: tuple[str, ...]
    queue: str


def brokers() -> list[Broker]:
    """The brokers of `LOGKEEPER_INVENTORY`, or none without one (an unreadable file raises)."""
    path = os.environ.get("LOGKEEPER_INVENTORY")
    if not path:
        return []
    document = tomllib.loads(Path(path).read_text(encoding="utf-8"))
    return [
        Broker(int(b["id"]), str(b["host"]), tuple(b["log_dirs"]), str(b.get("queue", f"logkeeper-{b['host']}")))
        for b in document.get("brokers", [])
    ]


def summarize(result: dict) -> dict:
    """A `--result-json` body in the few fields XCom should hold: counts and the failed partitions."""
    partitions = result.get("partitions", [])
    statuses: dict[str, int] = {}
    for row in partitions:
        statuses[row["status"]] = statuses.get(row["status"], 0) + 1
    failed = [f"{r['log_dir']}/{r['dir_name']}" for r in partitions if r["status"] in ("failed", "corrupt")]
    return {"job": result.get("job"), "run_id": result.get("run_id"), "statuses": statuses, "failed": failed}


def run_job(job: str, *args: str, run_id: str, broker: Broker | None = None) -> dict:
    """Run one logkeeper job here and return its results for XCom: `{exit_code, steps: {name: summary}}`.

    The run id is the DAG's id and Airflow's run id (`<dag id>.<run id>`), the same for every try of
    the task, so a retry replaces the rows of the try before, and two DAGs whose runs Airflow names
    alike (the hourly stats and the nightly maintenance, both scheduled at 02:00) never replace each
    other's rows. A broker's stop and start hooks (if set) run around the job in this same task, so
    the pool slot is held for as long as the broker is down.

    Raises:
        AirflowSkipException: exit 3, the broker is running (it holds a log dir's `.lock`).
        RuntimeError: any other non-zero exit (the results were pushed to XCom first).
    """
    from airflow.sdk import get_current_context
    from airflow.sdk.exceptions import AirflowSkipException

    run_id = f"{get_current_context()['dag'].dag_id}.{run_id}"
    hooks = {"broker": "" if broker is None else str(broker.id), "host": "" if broker is None else broker.host}
    stop, start = os.environ.get("LOGKEEPER_STOP_BROKER"), os.environ.get("LOGKEEPER_START_BROKER")
    with tempfile.TemporaryDirectory(prefix="logkeeper-") as tmp:
        result_json = Path(tmp) / "result.json"
        command = submit(job, *args, "--run-id", run_id, "--result-json", str(result_json))
        if stop:
            subprocess.run(stop.format(**hooks), shell=True, check=True)
        try:
            exit_code = subprocess.run(command, shell=True, check=False).returncode
        finally:
            if start:
                subprocess.run(start.format(**hooks), shell=True, check=True)
        # maintain writes one file per step (`recover-result.json`, ...), the other jobs one.
        bodies = {
            p.name.removesuffix("result.json").rstrip("-"): json.loads(p.read_text()) for p in Path(tmp).glob("*.json")
        }
        steps = {name or job: body for name, body in bodies.items()}
    outcome = {"exit_code": exit_code, "steps": {name: summarize(body) for name, body in sorted(steps.items())}}
    if exit_code == EXIT_REFUSED:
        raise AirflowSkipException(f"logkeeper {job}: the broker is running (it holds the lock); skipped")
    if exit_code != 0:
        get_current_context()["ti"].xcom_push(key="return_value", value=outcome)
        raise RuntimeError(f"logkeeper {job} exited {exit_code}: {outcome['steps']}")
    return outcome


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
