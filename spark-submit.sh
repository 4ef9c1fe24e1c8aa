#!/usr/bin/env bash
# Submit a logkeeper job with spark-submit: `./spark-submit.sh <job> [job args]`.
#
# Packages storage_core, jobs and udfs into a zip built now (nothing built is committed) and submits
# jobs/__main__.py with it as --py-files. Spark settings come from conf/spark-defaults.conf;
# `--master M` and `--conf k=v` before the job name override them, e.g.
#   ./spark-submit.sh --master 'local[4]' --conf spark.executor.memory=2g recover --log-dirs /data/kafka
# Uses the pip-installed pyspark of .venv (SPARK_HOME and PYSPARK_PYTHON set here) unless SPARK_HOME
# is already set to a cluster's Spark, whose spark-submit is then used.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
python="${PYSPARK_PYTHON:-$here/.venv/bin/python}"
spark_args=()
while [ $# -gt 0 ]; do
  case "$1" in
    --master) spark_args+=(--master "$2"); shift 2 ;;
    --conf) spark_args+=(--conf "$2"); shift 2 ;;
    -h|--help) echo "usage: $0 [--master M] [--conf k=v]... <job> [job args]" >&2; exit 0 ;;
    *) break ;;
  esac
done
if [ $# -lt 1 ]; then
  echo "usage: $0 [--master M] [--conf k=v]... <job> [job args]" >&2
  exit 2
fi
if [ -z "${SPARK_HOME:-}" ]; then
  SPARK_HOME="$("$python" -c 'import os, pyspark; print(os.path.dirname(pyspark.__file__))')"
fi
export SPARK_HOME PYSPARK_PYTHON="$python" PYSPARK_DRIVER_PYTHON="$python"
export SPARK_LOCAL_IP="${SPARK_LOCAL_IP:-127.0.0.1}"
export LOGKEEPER_HOME="$here"  # where conf/ lives when the code runs from the zip
build="$(mktemp -d)"
trap 'rm -rf "$build"' EXIT
(cd "$here" && "$python" - "$build/logkeeper.zip" <<'PY'
import sys, zipfile, pathlib
with zipfile.ZipFile(sys.argv[1], "w", zipfile.ZIP_DEFLATED) as archive:
    for package in ("storage_core", "jobs", "udfs"):
        for path in sorted(pathlib.Path(package).rglob("*.py")):
            archive.write(path)
PY
)
exec "$SPARK_HOME/bin/spark-submit" \
  --properties-file "$here/conf/spark-defaults.conf" \
  "${spark_args[@]}" \
  --py-files "$build/logkeeper.zip" \
  "$here/jobs/__main__.py" "$@"
