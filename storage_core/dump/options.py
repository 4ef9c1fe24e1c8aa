"""The flags of `kafka-dump-log.sh` (`DumpLogSegmentsOptions`), with Kafka's defaults."""

from __future__ import annotations

from dataclasses import dataclass

from storage_core.dump.decoders import RecordDecoder

MAX_BYTES_DEFAULT = 2**31 - 1  # Integer.MAX_VALUE: "read the whole .log"
MAX_MESSAGE_SIZE_DEFAULT = 5 * 1024 * 1024


@dataclass(frozen=True, slots=True)
class DumpOptions:
    """What to print.

    Attributes:
        print_data_log: print record keys and payloads (implies deep iteration).
        decoder: how keys and payloads print (`--offsets-decoder`, ...); any decoder implies
            print_data_log, as in Kafka.
        deep_iteration: print every record, not only batch headers.
        verify_index_only: `.index`/`.timeindex`: verify against the `.log`, print only the errors.
        index_sanity_check: `.index`/`.timeindex`: run the broker's startup sanity check only.
        skip_record_metadata: leave the per-record metadata out of record lines.
        max_message_size: bytes read at an `.index` entry's position to find its batch.
        max_bytes: read only this many bytes of a `.log`; the invalid-bytes line is printed only
            when this is the default (Kafka's rule).
    """

    print_data_log: bool = False
    decoder: RecordDecoder = RecordDecoder.NONE
    deep_iteration: bool = False
    verify_index_only: bool = False
    index_sanity_check: bool = False
    skip_record_metadata: bool = False
    max_message_size: int = MAX_MESSAGE_SIZE_DEFAULT
    max_bytes: int = MAX_BYTES_DEFAULT

    @property
    def prints_data(self) -> bool:
        """`--print-data-log`, or implied by a decoder (`shouldPrintDataLog`)."""
        return self.print_data_log or self.decoder is not RecordDecoder.NONE

    @property
    def is_deep_iteration(self) -> bool:
        """`--deep-iteration`, or implied by printing data."""
        return self.deep_iteration or self.prints_data

    def __post_init__(self) -> None:
        if self.max_message_size < 0 or self.max_bytes < 0:
            raise ValueError("max_message_size and max_bytes must not be negative")
