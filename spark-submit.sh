#!/usr/bin/env bash
# Submit a logkeeper job with spark-submit:
#   ./spark-submit.sh [spark-submit options] <job> [job options]
# e.g.
#   ./spark-submit.sh --master spark://m:7077 --executor-memory 2g --conf spark.x=y recover --log-dirs data/k1
#
# Every spark-submit option before the job name is passed through (--master, --deploy-mode,
# --conf, --executor-memory, --num-executors, --files, --jars, --archives, --py-files, --verbose,
# ...); --archives and --py-files are joined with ours. Settings come from conf/spark-defaults.conf
# when the checkout has one.
#
# What is shipped (see jobs/_submit.py):
# - logkeeper's code: a zip of storage_core, jobs and udfs built now in a temp dir (--py-files);
# - on a cluster master (not local[...]), the Python environment, as Spark's "Python Package
#   Management" guide does for virtualenvs: a venv-pack archive of the interpreter's venv, cached
#   under $LOGKEEPER_CACHE (default ~/.cache/logkeeper), shipped with --archives ...#environment,
#   executors running PYSPARK_PYTHON=./environment/bin/python. LOGKEEPER_ENV_ARCHIVE=<path or URL>
#   ships an archive built earlier (e.g. on HDFS) instead; LOGKEEPER_SHIP_ENV=0 ships none (every
#   worker already has the same venv at the same path).
#
# The interpreter: $LOGKEEPER_PYTHON, else the checkout's .venv, else the active one (python3 on
# PATH, e.g. of an activated venv where logkeeper is pip-installed). SPARK_HOME: the environment's
# value (a cluster's Spark), else the pip-installed pyspark of that interpreter.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
usage="usage: $0 [spark-submit options] <job> [job options]"
if [ -n "${LOGKEEPER_PYTHON:-}" ]; then
  python="$LOGKEEPER_PYTHON"
elif [ -x "$here/.venv/bin/python" ] && [ -d "$here/jobs" ]; then
  python="$here/.venv/bin/python"
else
  python="$(command -v python3 || command -v python || true)"
  [ -n "$python" ] || { echo "$0: no python3 on PATH (set LOGKEEPER_PYTHON)" >&2; exit 2; }
fi

spark_args=() archives=() py_files=() master=""
while [ $# -gt 0 ]; do
  case "$1" in
    -h|--help) echo "$usage" >&2; exit 0 ;;
    -v|--verbose|--supervise) spark_args+=("$1"); shift ;;
    --archives=*) archives+=("${1#*=}"); shift ;;
    --py-files=*) py_files+=("${1#*=}"); shift ;;
    --master=*) master="${1#*=}"; spark_args+=("$1"); shift ;;
    --*=*) spark_args+=("$1"); shift ;;
    -*)
      if [ $# -lt 2 ]; then echo "$0: spark-submit option $1 needs a value" >&2; exit 2; fi
      case "$1" in
        --archives) archives+=("$2") ;;
        --py-files) py_files+=("$2") ;;
        --master) master="$2"; spark_args+=("$1" "$2") ;;
        *) spark_args+=("$1" "$2") ;;
      esac
      shift 2 ;;
    *) break ;;
  esac
done
if [ $# -lt 1 ]; then
  echo "$usage" >&2
  exit 2
fi

conf_args=()
if [ -f "$here/conf/spark-defaults.conf" ]; then
  conf_args=(--properties-file "$here/conf/spark-defaults.conf")
  export LOGKEEPER_HOME="$here"  # where conf/ lives when the code runs from the zip
  if [ -z "$master" ]; then
    master="$(sed -n 's/^[[:space:]]*spark\.master[[:space:]=:]*//p' "$here/conf/spark-defaults.conf" | tail -n 1)"
  fi
fi
if [ -z "${SPARK_HOME:-}" ]; then
  SPARK_HOME="$("$python" -c 'import os, pyspark; print(os.path.dirname(pyspark.__file__))')"
fi
export SPARK_HOME PYSPARK_DRIVER_PYTHON="$python"
export SPARK_LOCAL_IP="${SPARK_LOCAL_IP:-127.0.0.1}"

build="$(mktemp -d)"
trap 'rm -rf "$build"' EXIT
# From $here, a checkout's packages come first; elsewhere the interpreter's installed logkeeper.
(cd "$here" && "$python" -m jobs._submit code-zip "$build/logkeeper.zip")
py_files+=("$build/logkeeper.zip")
main="$(cd "$here" && "$python" -c 'import importlib.util as u; print(u.find_spec("jobs.__main__").origin)')"

case "${master:-local}" in
  local*) ship=0 ;;
  *) ship="${LOGKEEPER_SHIP_ENV:-1}" ;;
esac
if [ "$ship" = 1 ]; then
  archive="${LOGKEEPER_ENV_ARCHIVE:-}"
  if [ -z "$archive" ]; then
    cache="${LOGKEEPER_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/logkeeper}"
    archive="$(cd "$here" && "$python" -m jobs._submit env-archive "$cache")" || {
      echo "$0: cannot pack the Python environment (set LOGKEEPER_ENV_ARCHIVE or LOGKEEPER_SHIP_ENV=0)" >&2
      exit 2
    }
  fi
  archives+=("$archive#environment")
  export PYSPARK_PYTHON="./environment/bin/python"
else
  export PYSPARK_PYTHON="$python"
fi
if [ ${#archives[@]} -gt 0 ]; then
  spark_args+=(--archives "$(IFS=,; echo "${archives[*]}")")
fi

exec "$SPARK_HOME/bin/spark-submit" \
  "${conf_args[@]}" \
  "${spark_args[@]}" \
  --py-files "$(IFS=,; echo "${py_files[*]}")" \
  "$main" "$@"
