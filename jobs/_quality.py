"""Great Expectations checks of the segment statistics before they are committed to Delta."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any


def validate_segment_stats(frame: Any, *, result_path: Path) -> bool:
    """Run the suite on a pandas frame of segment_stats rows; keep the result as JSON; True if it passed.

    Expectations: offsets ordered (next >= base, and next > base for a segment with batches),
    min_timestamp <= max_timestamp, sizes and counts >= 0, counts consistent (keyed <= records,
    tombstones <= keyed, control batches <= batches, per-codec batch counts add up to batches),
    topic ids empty or a Kafka Uuid's 22 base64url characters.
    """
    os.environ.setdefault("GX_ANALYTICS_ENABLED", "False")
    import great_expectations as gx
    import great_expectations.expectations as gxe
    from great_expectations.data_context.types.base import ProgressBarsConfig
    from great_expectations.expectations.row_conditions import Column

    frame = frame.copy()
    frame["codec_batch_total"] = frame[
        ["none_batch_count", "gzip_batch_count", "snappy_batch_count", "lz4_batch_count", "zstd_batch_count"]
    ].sum(axis=1)
    context = gx.get_context(mode="ephemeral")
    context.variables.progress_bars = ProgressBarsConfig(globally=False)
    suite = context.suites.add(gx.ExpectationSuite(name="segment_stats"))
    pair = gxe.ExpectColumnPairValuesAToBeGreaterThanB
    for column in ("run_id", "topic", "base_offset", "next_offset"):
        suite.add_expectation(gxe.ExpectColumnValuesToNotBeNull(column=column))
    suite.add_expectation(pair(column_A="next_offset", column_B="base_offset", or_equal=True))
    suite.add_expectation(
        pair(
            column_A="next_offset",
            column_B="base_offset",
            or_equal=False,
            row_condition=Column("batch_count") > 0,
        )
    )
    suite.add_expectation(pair(column_A="max_timestamp", column_B="min_timestamp", or_equal=True))
    for column in (
        "log_bytes",
        "index_bytes",
        "timeindex_bytes",
        "txnindex_bytes",
        "batch_count",
        "record_count",
        "invalid_bytes",
        "distinct_key_estimate",
        "producer_id_count",
    ):
        suite.add_expectation(gxe.ExpectColumnValuesToBeBetween(column=column, min_value=0))
    suite.add_expectation(pair(column_A="record_count", column_B="keyed_record_count", or_equal=True))
    suite.add_expectation(pair(column_A="keyed_record_count", column_B="tombstone_count", or_equal=True))
    suite.add_expectation(pair(column_A="batch_count", column_B="control_batch_count", or_equal=True))
    suite.add_expectation(gxe.ExpectColumnPairValuesToBeEqual(column_A="codec_batch_total", column_B="batch_count"))
    suite.add_expectation(gxe.ExpectColumnValuesToMatchRegex(column="topic_id", regex=r"^(?:[A-Za-z0-9_-]{22})?$"))
    batch = (
        context.data_sources.add_pandas("stats")
        .add_dataframe_asset("segment_stats")
        .add_batch_definition_whole_dataframe("all")
        .get_batch(batch_parameters={"dataframe": frame})
    )
    result = batch.validate(suite)
    result_path.parent.mkdir(parents=True, exist_ok=True)
    result_path.write_text(json.dumps(result.describe_dict(), indent=2, default=str))
    return bool(result.success)
