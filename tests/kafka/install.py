"""The Kafka releases the broker tests run, and their jars: `python -m tests.kafka.install`.

Run by `./dev test` (so by `.ci/run`) before pytest, never by a test: it copies the jars of every
release in :data:`KAFKA_VERSIONS` with Maven (`pom.xml` beside this file,
`mvn dependency:copy-dependencies`) into a cache outside the repository::

    $LOGKEEPER_KAFKA_CACHE (default ~/.cache/logkeeper)/
        kafka-4.4.0/
            lib/*.jar          the broker, its storage tool, Kafka's tools, log4j2
            lib.complete       written last: the pom's digest; lib/ is complete for that pom
        kafka-4.0.0/...

Maven's own repository (~/.m2) keeps the downloads, so a second machine-local install only copies.
A cached release whose `lib.complete` matches the pom is left alone without starting Maven
(`./dev test` costs nothing when the cache is warm). Crash story: `lib/` is filled in a sibling
`lib.tmp/` and renamed into place, then the stamp is written; an interrupted install leaves no stamp
and is redone from scratch.

Releases: the newest 4.x Maven Central serves (4.4.0) and the oldest 4.x (4.0.0). Kafka 3.9's
`kafka_2.13` is not served by the registry this project reaches, so no 3.x broker is tested.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import shutil
import subprocess
import sys
from pathlib import Path

KAFKA_VERSIONS = ("4.0.0", "4.4.0")
POM = Path(__file__).with_name("pom.xml")


def cache_root() -> Path:
    """`$LOGKEEPER_KAFKA_CACHE`, else `~/.cache/logkeeper` (outside every checkout)."""
    return Path(os.environ.get("LOGKEEPER_KAFKA_CACHE") or Path.home() / ".cache" / "logkeeper")


def lib_dir(version: str) -> Path:
    """The directory of a release's jars (`java -cp '<lib_dir>/*'`)."""
    return cache_root() / f"kafka-{version}" / "lib"


def _stamp(version: str) -> Path:
    return cache_root() / f"kafka-{version}" / "lib.complete"


def _pom_digest() -> str:
    return hashlib.sha256(POM.read_bytes()).hexdigest()


def is_installed(version: str) -> bool:
    """Whether `lib_dir(version)` is complete for the current pom."""
    stamp = _stamp(version)
    return stamp.is_file() and stamp.read_text().strip() == _pom_digest()


def install(version: str) -> Path:
    """Copy the jars of Kafka `version` into its cache dir (nothing to do when already there)."""
    target = lib_dir(version)
    if is_installed(version):
        return target
    staging = target.with_name("lib.tmp")
    shutil.rmtree(staging, ignore_errors=True)
    command = [
        "mvn",
        "-B",
        "-q",
        "-Dstyle.color=never",
        "-f",
        str(POM),
        "dependency:copy-dependencies",
        f"-Dkafka.version={version}",
        f"-DoutputDirectory={staging}",
    ]
    subprocess.run(command, check=True, timeout=1800)
    shutil.rmtree(target, ignore_errors=True)
    staging.rename(target)
    _stamp(version).write_text(_pom_digest() + "\n")
    return target


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.kafka.install", description=__doc__.splitlines()[0])
    parser.add_argument("versions", nargs="*", default=list(KAFKA_VERSIONS), help="Kafka releases (default: all)")
    args = parser.parse_args(argv)
    for version in args.versions:
        fresh = not is_installed(version)
        path = install(version)
        if fresh:
            print(f"Kafka {version}: {len(list(path.glob('*.jar')))} jars in {path}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
