"""Kafka's DumpLogSegments (`kafka-dump-log.sh`) over storage_core, as structured lines.

:func:`dump_files` yields :class:`DumpLine`s; :func:`render_text` prints one exactly as Kafka's tool
does, :func:`render_json` as one JSON object with the same field names.
"""

from storage_core.dump.decoders import RecordDecoder
from storage_core.dump.diagnostics import Diagnostics
from storage_core.dump.dispatch import dump_file, dump_files
from storage_core.dump.options import DumpOptions
from storage_core.dump.render import DumpLine, Field, render_json, render_text

__all__ = [
    "Diagnostics",
    "DumpLine",
    "DumpOptions",
    "Field",
    "RecordDecoder",
    "dump_file",
    "dump_files",
    "render_json",
    "render_text",
]
