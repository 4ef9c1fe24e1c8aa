r"""The per-file facts of ../shared/realdata/MANIFEST.md, parsed into typed rows for tests.

Each row of a repository table reads `| \`path\` | size | sha256[:12] | contents |`; the contents
column starts with the kind of file (`record batches:`, `offset index:`, `time index:`,
`producer-state snapshot v1:`, `checkpoint text:`, `text:`, `empty`, ...) followed by the facts the
independent peers (kafka-python and aiokafka) computed.
"""

from __future__ import annotations

import os
import re
import shutil
import stat
from dataclasses import dataclass
from functools import cache
from pathlib import Path

REALDATA = Path(os.environ.get("LOGKEEPER_SHARED", Path(__file__).resolve().parents[3] / "shared")) / "realdata"
MANIFEST = REALDATA / "MANIFEST.md"

_LOCAL_DIR = re.compile(r"local dir `realdata/([^/`]+)/`")
_ROW = re.compile(r"^\| `([^`]+)` \| (\d+) \| [0-9a-f]+ \| (.*) \|$", re.DOTALL)


@dataclass(frozen=True, slots=True)
class ManifestRow:
    """One file of the manifest: its path on disk, size and the peers' description."""

    path: Path
    size: int
    contents: str

    @property
    def kind(self) -> str:
        return self.contents.split(":", 1)[0].strip()

    def facts(self) -> dict[str, str]:
        """`key=value` pairs of the contents column (values up to the next space)."""
        return dict(re.findall(r"(\w+)=(\S+)", self.contents))

    @property
    def id(self) -> str:
        return str(self.path.relative_to(REALDATA))


@cache
def manifest_rows() -> tuple[ManifestRow, ...]:
    rows = []
    repo_dir: Path | None = None
    for line in MANIFEST.read_bytes().decode().split("\n"):
        local = _LOCAL_DIR.search(line)
        if local:
            repo_dir = REALDATA / local.group(1)
            continue
        match = _ROW.match(line)
        if match and repo_dir is not None:
            rows.append(ManifestRow(repo_dir / match.group(1), int(match.group(2)), match.group(3)))
    return tuple(rows)


def rows_of_kind(kind: str) -> list[ManifestRow]:
    return [row for row in manifest_rows() if row.kind == kind]


@cache
def broker_log_dirs() -> tuple[Path, ...]:
    """Every real broker's log dir: the directories holding a `meta.properties` or a recovery-point checkpoint."""
    marks = ("meta.properties", "recovery-point-offset-checkpoint")
    return tuple(sorted({p.parent for mark in marks for p in REALDATA.rglob(mark)}))


def writable_copy(source: Path, target: Path) -> Path:
    """A copy of a real data directory that jobs may change (the shared files are read-only)."""
    shutil.copytree(source, target)
    for path in [target, *target.rglob("*")]:
        path.chmod(path.stat().st_mode | stat.S_IWUSR)
    return target
