"""Checking a run's audit trail against the files: listings, replaying actions over them, the quarantine.

A listing maps each file under a root (relative path) to its size and sha256. Replaying a run's
actions (from its `--result-json` files) over the listing taken before the run predicts the listing
after it: a create or rewrite gives the file the content whose sha256 the action reports (or, for a
change made in place, any other content), a truncation changes it, a deletion removes it, a rename
moves it; findings and quarantine copies change nothing in the log dirs. The prediction must equal the
real listing, file by file, and every quarantine action must name a piece that holds exactly its bytes.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path, PurePosixPath
from typing import NamedTuple


class Digest(NamedTuple):
    size: int
    sha256: str


def listing(root: Path, *, skip: tuple[str, ...] = ()) -> dict[str, Digest]:
    """Every file under `root` (relative path -> size and sha256), except under the top-level names in `skip`."""
    out = {}
    for path in sorted(root.rglob("*")):
        relative = path.relative_to(root)
        if path.is_file() and relative.parts[0] not in skip:
            data = path.read_bytes()
            out[relative.as_posix()] = Digest(len(data), hashlib.sha256(data).hexdigest())
    return out


def actions_of(result_json: Path, root: Path) -> list[tuple[str, dict]]:
    """(path relative to `root`, action) of every action of a result JSON, partitions' and log dirs' own."""
    body = json.loads(result_json.read_text())
    out = []
    for row in body["partitions"]:
        base = Path(row["log_dir"]).absolute() / row["dir_name"]
        out += [((base / a["file"]).relative_to(root.absolute()).as_posix(), a) for a in row["actions"]]
    for row in body.get("log_dirs", []):
        base = Path(row["log_dir"]).absolute()
        out += [((base / a["file"]).relative_to(root.absolute()).as_posix(), a) for a in row["actions"]]
    return out


def replay(before: dict[str, Digest], actions: list[tuple[str, dict]]) -> dict[str, tuple[str, str | None]]:
    """The predicted files after the actions: path -> ("kept", sha256) or ("changed", sha256 if known)."""
    state: dict[str, tuple[str, str | None]] = {p: ("kept", d.sha256) for p, d in before.items()}
    for path, action in actions:
        change, what = action["change"], f"{action['kind']} {path}"
        if change in ("none", "quarantine"):
            continue
        if change == "create":
            assert path not in state, f"{what}: created, but it exists"
            state[path] = ("changed", action["sha256"] or None)
        elif change == "rewrite":
            assert path in state, f"{what}: rewritten, but it does not exist"
            state[path] = ("changed", action["sha256"] or None)
        elif change == "truncate":
            assert path in state, f"{what}: truncated, but it does not exist"
            state[path] = ("changed", None)
        elif change == "delete":
            assert path in state, f"{what}: deleted, but it does not exist"
            del state[path]
        elif change == "rename":
            assert path in state, f"{what}: renamed, but it does not exist"
            state[str(PurePosixPath(path).with_name(action["target"]))] = state.pop(path)
        else:
            raise AssertionError(f"{what}: unknown change {change!r}")
    return state


def assert_replay_matches(
    before: dict[str, Digest], actions: list[tuple[str, dict]], after: dict[str, Digest], *, what: str
) -> None:
    """The actions, replayed over `before`, give exactly `after` (see the module doc)."""
    predicted = replay(before, actions)
    assert sorted(predicted) == sorted(after), (
        f"{what}: files present after the run but not reported: {sorted(set(after) - set(predicted))}; "
        f"reported but absent: {sorted(set(predicted) - set(after))}"
    )
    for path, (kind, sha) in predicted.items():
        if kind == "kept":
            assert after[path].sha256 == sha, f"{what}: {path} changed, but no action says so"
        elif sha is not None:
            assert after[path].sha256 == sha, f"{what}: {path} does not hold what its action says it wrote"
        else:
            assert path not in before or after[path] != before[path], f"{what}: {path} reported changed, is not"


def assert_quarantine_matches(actions: list[tuple[str, dict]], quarantine_dir: Path, *, what: str) -> None:
    """Every quarantine action names a piece with its size and sha256, and no other file is in the quarantine."""
    pieces = {}
    for _, action in actions:
        if action["change"] == "quarantine":
            piece = Path(action["target"])
            data = piece.read_bytes()
            assert (len(data), hashlib.sha256(data).hexdigest()) == (action["bytes"], action["sha256"]), what
            pieces[piece.absolute()] = action
    present = {p.absolute() for p in quarantine_dir.rglob("*") if p.is_file()} if quarantine_dir.exists() else set()
    assert present == set(pieces), f"{what}: quarantine files without an action: {sorted(present - set(pieces))}"
