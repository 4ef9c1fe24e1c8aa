"""Kafka's own command-line tools from a release's jars: `kafka-dump-log.sh` and `kafka-configs.sh`.

Each runs as `java -cp '<jars>/*' <main class> ...` (what the scripts run), bounded in time. Their
classes move between releases: DumpLogSegments and ConfigCommand are Scala classes of the core jar
in 4.0 (`kafka.tools.DumpLogSegments`, `kafka.admin.ConfigCommand`) and Java classes of kafka-tools
later (`org.apache.kafka.tools.*`); :func:`main_class` picks the one the release has.
"""

from __future__ import annotations

import functools
import subprocess
import tempfile
import zipfile
from pathlib import Path

from tests.kafka.broker import TEST_JVM_OPTIONS, java_command
from tests.kafka.install import lib_dir

DUMP_LOG_SEGMENTS = ("org.apache.kafka.tools.DumpLogSegments", "kafka.tools.DumpLogSegments")
CONFIG_COMMAND = ("org.apache.kafka.tools.ConfigCommand", "kafka.admin.ConfigCommand")


@functools.cache
def _classes(version: str) -> frozenset[str]:
    names: set[str] = set()
    for jar in lib_dir(version).glob("kafka*.jar"):
        with zipfile.ZipFile(jar) as archive:
            names.update(n[: -len(".class")].replace("/", ".") for n in archive.namelist() if n.endswith(".class"))
    return frozenset(names)


def main_class(version: str, candidates: tuple[str, ...]) -> str:
    """The first of `candidates` that Kafka `version`'s jars hold."""
    for name in candidates:
        if name in _classes(version):
            return name
    raise LookupError(f"Kafka {version} has none of {candidates}")


def run_tool(version: str, candidates: tuple[str, ...], args: list[str], *, timeout: float = 180) -> str:
    """Run a Kafka tool; its stdout (a non-zero exit raises with its stderr)."""
    with tempfile.TemporaryDirectory(prefix="kafka-tool-") as work:
        command = java_command(
            version, main_class(version, candidates), args, jvm_options=TEST_JVM_OPTIONS, log=Path(work) / "tool.log"
        )
        done = subprocess.run(command, capture_output=True, text=True, timeout=timeout, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(args)}: exit {done.returncode}\n{done.stderr[-4000:]}")
    return done.stdout


def dump_log(version: str, files: list[Path], *options: str) -> str:
    """`kafka-dump-log.sh --files f1,f2,... <options>`: its output."""
    return run_tool(version, DUMP_LOG_SEGMENTS, ["--files", ",".join(map(str, files)), *options])


def describe_configs(version: str, bootstrap: str, entity_type: str, *options: str) -> str:
    """`kafka-configs.sh --bootstrap-server B --describe --entity-type T <options>`: its output."""
    args = ["--bootstrap-server", bootstrap, "--describe", "--entity-type", entity_type, *options]
    return run_tool(version, CONFIG_COMMAND, args)
