"""Time each conf/audit query on the embedded engine (DuckDB) and on Spark, as a user runs it.

`python bench/audit_engines.py [--warehouse W] [--repeat N]`: without `--warehouse`, the demo runs
first (in a temp dir) and its warehouse is used. Two figures per query, contenders interleaved
(`bench/timing.py`, best of N rounds):

- `logkeeper audit` end to end, a fresh process each time (`--format csv`): what a user waits for,
  interpreter and (for Spark) JVM start included; the ratio is Spark's time over the embedded one's;
- the query alone in a warm process (DuckDB connection made per query, Spark session already up):
  what each engine costs once started.

Goal (issue 19): every query under 2 s end to end on the embedded engine, and 10x faster than Spark.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from bench.timing import best_interleaved, timed  # noqa: E402
from jobs import audit  # noqa: E402


def demo_warehouse(root: Path) -> Path:
    """Run the demo in `root` and return its warehouse."""
    subprocess.run([sys.executable, "-m", "jobs.demo"], cwd=root, check=True, capture_output=True, env=_env())
    return root / "demo-output" / "warehouse"


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(REPO), "SPARK_LOCAL_IP": "127.0.0.1"}


def _cli(warehouse: Path, query: str, engine: str) -> float:
    argv = [sys.executable, "-m", "jobs.cli", "audit", "--warehouse", str(warehouse), "--query", query]
    argv += ["--format", "csv", "--engine", engine] + (["--master", "local[2]"] if engine == "spark" else [])
    return timed(lambda: subprocess.run(argv, cwd=REPO, check=True, capture_output=True, env=_env()))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--warehouse", type=Path, help="an existing warehouse (default: run the demo first)")
    parser.add_argument("--repeat", type=int, default=3, help="interleaved rounds (default 3)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        warehouse = args.warehouse or demo_warehouse(Path(tmp))
        from jobs._common import get_spark

        spark = get_spark("local[2]", "bench audit")
        print(f"warehouse: {warehouse}; best of {args.repeat} interleaved rounds\n")
        print("| query | embedded, CLI | Spark, CLI | Spark / embedded | embedded, warm | Spark, warm |")
        print("|---|---|---|---|---|---|")
        for query in audit.available_queries():
            best = best_interleaved(
                {
                    "cli-embedded": lambda _, q=query: _cli(warehouse, q, "embedded"),
                    "cli-spark": lambda _, q=query: _cli(warehouse, q, "spark"),
                    "warm-embedded": lambda _, q=query: timed(lambda: audit.run_query(warehouse, q)),
                    "warm-spark": lambda _, q=query: timed(
                        lambda: audit.run_query(warehouse, q, engine="spark", spark=spark)
                    ),
                },
                args.repeat,
            )
            ratio = best["cli-spark"] / best["cli-embedded"]
            print(
                f"| {query} | {best['cli-embedded']:.2f} s | {best['cli-spark']:.2f} s | **{ratio:.1f}x** | "
                f"{best['warm-embedded'] * 1000:.0f} ms | {best['warm-spark'] * 1000:.0f} ms |",
                flush=True,
            )
        spark.stop()


if __name__ == "__main__":
    main()
