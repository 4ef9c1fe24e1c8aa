"""What every logkeeper Spark job shares, in one import (re-exports only; no logic here).

Jobs are thin: `parse_args(argv)`, `run(...) -> JobSummary`, `main(argv) -> int`. `run` takes
the log dirs' locks if it may write (read-only runs take none), discovers partition dirs
(largest first), builds plain task dataclasses, and runs a module-level executor function per task
on Spark, which calls one storage_core entry point and returns a typed row; the driver then
finishes per log dir and writes the results.

* :mod:`jobs._args`: the common options and their validation (exit 2).
* :mod:`jobs._log_dirs`: `.lock`s (exit 3), partition discovery, checkpoints at the end.
* :mod:`jobs._spark`: the session, `run_partition_tasks`.
* :mod:`jobs._results`: rows, exit codes, progress lines, the result JSON.
* :mod:`jobs._driver`: the shared `main`.
"""

from jobs._args import JobArgs, UsageError, add_high_watermark_source, common_args, job_parser
from jobs._driver import run_main
from jobs._log_dirs import (
    PartitionDir,
    PartitionTask,
    checkpoint_keys,
    close_log_dirs,
    discover_log_dirs,
    discover_partitions,
    high_watermark,
    locked_log_dirs,
    log_dir_rows,
)
from jobs._results import (
    EXIT_FAILED,
    EXIT_OK,
    EXIT_REFUSED,
    EXIT_USAGE,
    FAILED_STATUSES,
    ActionRow,
    JobSummary,
    LogDirRow,
    PartitionRow,
    action_rows,
    exit_code,
    failed_log_dir_row,
    failed_row,
    new_run_id,
    partition_row,
    progress_line,
    refused_unclean,
    run_partition_work,
    skipped_row,
    summary_line,
    write_result_json,
)
from jobs._spark import get_spark, run_partition_tasks, spark_defaults

__all__ = [
    "EXIT_FAILED",
    "EXIT_OK",
    "EXIT_REFUSED",
    "EXIT_USAGE",
    "FAILED_STATUSES",
    "ActionRow",
    "JobArgs",
    "JobSummary",
    "LogDirRow",
    "PartitionDir",
    "PartitionRow",
    "PartitionTask",
    "UsageError",
    "action_rows",
    "add_high_watermark_source",
    "checkpoint_keys",
    "close_log_dirs",
    "common_args",
    "discover_log_dirs",
    "discover_partitions",
    "exit_code",
    "failed_log_dir_row",
    "failed_row",
    "get_spark",
    "high_watermark",
    "job_parser",
    "locked_log_dirs",
    "log_dir_rows",
    "new_run_id",
    "partition_row",
    "progress_line",
    "refused_unclean",
    "run_main",
    "run_partition_tasks",
    "run_partition_work",
    "skipped_row",
    "spark_defaults",
    "summary_line",
    "write_result_json",
]
