"""`logkeeper dump` as a command: output, exit codes, one-line errors, no JVM, every real broker file."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from jobs.dump import main
from storage_core import names
from storage_core.records.batch import Record, build_batch
from tests.realdata.manifest import REALDATA


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", *args], capture_output=True, text=True, check=False)


@pytest.fixture
def segment(tmp_path: Path) -> Path:
    path = names.log_file(tmp_path, 0)
    path.write_bytes(build_batch([Record(0, 1, b"key1", b"value1")], base_offset=0))
    return path


def test_dump_never_imports_pyspark(segment: Path) -> None:
    probe = (
        "import sys, jobs.cli; code = jobs.cli.main(['dump', '--files', sys.argv[1], '--json']);"
        "sys.stdout.flush(); sys.exit(3 if 'pyspark' in sys.modules else code)"
    )
    result = subprocess.run([sys.executable, "-c", probe, str(segment)], capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout.splitlines()[2])["type"] == "batch"


def test_module_entry_points_print_kafkas_text(segment: Path) -> None:
    for module in ("jobs.cli", "jobs"):
        result = _run(module, "dump", "--files", str(segment), "--print-data-log")
        assert result.returncode == 0, result.stderr
        assert result.stdout.splitlines()[-1] == (
            "| offset: 0 CreateTime: 1 keySize: 4 valueSize: 6 sequence: -1 headerKeys: [] key: key1 payload: value1"
        )
    assert _run("jobs.dump", "--files", str(segment)).returncode == 0


def test_json_output_parses_line_by_line(segment: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--files", str(segment), "--print-data-log", "--json"]) == 0
    objects = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [o["type"] for o in objects] == ["file", "log_start_offset", "batch", "record"]
    assert objects[3]["key"] == "a2V5MQ=="
    assert objects[3]["payload"] == "dmFsdWUx"


@pytest.mark.parametrize(
    "args",
    [
        ["--files", "/nonexistent/00000000000000000000.log"],
        ["--files", "x.log", "--no-such-flag"],
        ["--files", "x.log", "--max-bytes", "-1"],
        ["--files", "x.log", "--max-message-size", "lots"],
        ["--files", ","],
        ["--print-data-log"],
        ["--files", "x.log", "--offsets-decoder", "--cluster-metadata-decoder"],
    ],
    ids=["missing-file", "bad-flag", "negative-size", "not-a-number", "no-file", "no-files-flag", "two-decoders"],
)
def test_bad_input_exits_2_with_one_line(args: list[str]) -> None:
    result = _run("jobs.cli", "dump", *args)
    assert result.returncode == 2
    assert result.stdout == ""
    assert len(result.stderr.strip().splitlines()) == 1
    assert result.stderr.startswith("logkeeper dump: ")
    assert "Traceback" not in result.stderr


def test_decoder_flags_decode_and_imply_print_data_log(capsys: pytest.CaptureFixture[str]) -> None:
    metadata = REALDATA / "ArthurArutunyan04__Backend_labs/kafka-data/__cluster_metadata-0/00000000000000000000.log"
    assert main(["--files", str(metadata), "--cluster-metadata-decoder"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[5].endswith(
        'payload: {"type":"BEGIN_TRANSACTION_RECORD","version":0,"data":{"name":"Bootstrap records"}}'
    )
    offsets = REALDATA / "ArthurArutunyan04__Backend_labs/kafka-data/__consumer_offsets-19/00000000000000000000.log"
    assert main(["--files", str(offsets), "--offsets-decoder", "--json", "--skip-record-metadata"]) == 0
    records = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    commit = next(r for r in records if r["type"] == "record" and r["key"]["type"] == "1")
    assert commit["key"]["data"] == {
        "group": "universe-labs-oms-consumer",
        "topic": "oms_order_created",
        "partition": 1,
    }
    assert commit["payload"] == {
        "version": "3",
        "data": {"offset": 81731, "leaderEpoch": 8, "metadata": "", "commitTimestamp": 1765403766080},
    }
    state = (
        REALDATA / "ItumelengMogase__Real-Time-Data-Pipeline-for-Patient-Admissions/kafka-data/__transaction_state-44"
    )
    logs = sorted(str(p) for p in state.glob("*.log"))
    assert main(["--files", ",".join(logs), "--transaction-log-decoder"]) == 0
    out, err = capsys.readouterr()
    assert err == ""
    assert 'key: {"type":"0","data":{"transactionalId":' in out


def test_a_directory_is_not_a_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--files", str(tmp_path)]) == 2
    assert capsys.readouterr().err == f"logkeeper dump: cannot read {tmp_path}: not a regular file\n"


def test_every_real_broker_file_dumps(capsys: pytest.CaptureFixture[str]) -> None:
    files = sorted(str(path) for path in REALDATA.rglob("*") if path.is_file())
    assert main(["--files", ",".join(files), "--print-data-log"]) == 0
    out, err = capsys.readouterr()
    assert sum(line.startswith("Dumping ") for line in out.splitlines()) == len(files)
    assert "Cannot dump" not in err
    assert "Found corrupt data" not in err
    assert main(["--files", ",".join(files), "--verify-index-only", "--json"]) == 0
    out, err = capsys.readouterr()
    objects = [json.loads(line) for line in out.splitlines()]
    assert sum(o["type"] == "file" for o in objects) == len(files)
    assert all(json.loads(line)["type"] not in ("error", "corrupt_data") for line in err.splitlines())
