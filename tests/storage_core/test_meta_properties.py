"""meta.properties (storage_core/meta_properties.py, kafka-format.md §1.5).

Oracles: the broker files under ../shared/realdata, and the JDK itself (`java.util.Properties` and
`java.util.Date`, run as a single-file Java program) for the properties text and the date line.
"""

from __future__ import annotations

import re
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from storage_core import names
from storage_core.errors import CorruptCheckpointError
from storage_core.fs import LocalFileSystem
from storage_core.java_properties import parse_java_properties
from storage_core.meta_properties import (
    MetaProperties,
    format_meta_properties,
    java_date,
    parse_meta_properties,
    read_meta_properties,
    write_meta_properties,
)
from tests.realdata.manifest import REALDATA, ManifestRow, rows_of_kind

FS = LocalFileSystem()
T0 = 1729827181000  # Fri Oct 25 03:33:01 UTC 2024
KRAFT = MetaProperties(1, cluster_id="4L6g3nShT-eMCtK--X86sw", node_id=1, directory_id="J8aAPcfLQt2bqs1JT_rMgQ")
ZOOKEEPER = MetaProperties(0, cluster_id="d0053poFTbGwSWThjV1DEg", broker_id=0)
META_ROWS = rows_of_kind("meta.properties")
JavaRunner = Callable[..., list[str]]

ORACLE = r"""
import java.io.*;
import java.nio.charset.StandardCharsets;
import java.nio.file.*;
import java.util.*;

public class PropertiesOracle {
    public static void main(String[] args) throws Exception {
        if (args[0].equals("load")) {
            for (int i = 1; i < args.length; i++) {
                Properties props = new Properties();
                try (InputStream in = Files.newInputStream(Paths.get(args[i]))) {
                    props.load(in);  // as PropertiesUtils.readPropertiesFile: ISO-8859-1
                }
                StringBuilder out = new StringBuilder();
                for (String key : new TreeSet<>(props.stringPropertyNames())) {
                    out.append(hex(key)).append('=').append(hex(props.getProperty(key))).append(';');
                }
                System.out.println(out);
            }
        } else if (args[0].equals("store")) {  // store <file> <key> <value> ... [-- <file> ...]
            int i = 1;
            while (i < args.length) {
                String file = args[i++];
                Properties props = new Properties();
                while (i < args.length && !args[i].equals("--")) {
                    props.setProperty(args[i], args[i + 1]);
                    i += 2;
                }
                i++;
                try (PrintWriter writer = new PrintWriter(
                        new OutputStreamWriter(new FileOutputStream(file), StandardCharsets.UTF_8))) {
                    props.store(writer, "");  // as PropertiesUtils.writePropertiesFile
                }
            }
        } else {
            for (int i = 1; i < args.length; i++) {
                System.out.println(new Date(Long.parseLong(args[i])));
            }
        }
    }

    private static String hex(String text) {
        StringBuilder out = new StringBuilder();
        for (char c : text.toCharArray()) {
            out.append(String.format("%04x", (int) c));
        }
        return out.toString();
    }
}
"""


@pytest.fixture(scope="module")
def java(tmp_path_factory: pytest.TempPathFactory) -> JavaRunner:
    """Runs the oracle with the JDK on the PATH (the one Spark uses), in UTC."""
    source = tmp_path_factory.mktemp("oracle") / "PropertiesOracle.java"
    source.write_text(ORACLE)

    def run(*args: str) -> list[str]:
        done = subprocess.run(
            ["java", "-Duser.timezone=UTC", str(source), *args], capture_output=True, text=True, check=True
        )
        return done.stdout.splitlines()

    return run


def _hex_map(values: dict[str, str]) -> str:
    encode = lambda text: "".join(f"{ord(c):04x}" for c in text)  # noqa: E731
    return "".join(f"{encode(k)}={encode(v)};" for k, v in sorted(values.items()))


def test_kraft_bytes(tmp_path: Path) -> None:
    path = tmp_path / names.META_PROPERTIES
    write_meta_properties(path, KRAFT, now_ms=T0, fs=FS)
    assert path.read_bytes() == (
        b"#\n#Fri Oct 25 03:33:01 UTC 2024\n"
        b"cluster.id=4L6g3nShT-eMCtK--X86sw\ndirectory.id=J8aAPcfLQt2bqs1JT_rMgQ\nnode.id=1\nversion=1\n"
    )
    assert read_meta_properties(path, fs=FS) == KRAFT
    assert [p.name for p in tmp_path.iterdir()] == [path.name]


def test_zookeeper_bytes() -> None:
    assert format_meta_properties(ZOOKEEPER, now_ms=0) == (
        b"#\n#Thu Jan 01 00:00:00 UTC 1970\nbroker.id=0\ncluster.id=d0053poFTbGwSWThjV1DEg\nversion=0\n"
    )
    assert parse_meta_properties(format_meta_properties(ZOOKEEPER, now_ms=0)) == ZOOKEEPER
    assert format_meta_properties(MetaProperties(0), now_ms=0).endswith(b"\nversion=0\n")


def test_the_current_time_is_the_default_stamp(tmp_path: Path) -> None:
    path = tmp_path / names.META_PROPERTIES
    write_meta_properties(path, KRAFT, fs=FS)
    assert read_meta_properties(path, fs=FS) == KRAFT
    stamp = path.read_bytes().decode().split("\n")[1]
    assert re.fullmatch(r"#\w{3} \w{3} \d\d \d\d:\d\d:\d\d UTC \d{4}", stamp)
    assert int(stamp[-4:]) >= 2024


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        (b"broker.id=3\n", MetaProperties(0, broker_id=3)),
        (b"version=0\nnode.id=9\nbroker.id=3\n", MetaProperties(0, broker_id=3)),  # v0 ignores node.id
        (b"version=1\nnode.id=2\ncluster.id=c\nbroker.id=x\n", MetaProperties(1, "c", node_id=2)),  # v1 ignores it
        (b"version = 1 \nnode.id:2\ncluster.id c\n", MetaProperties(1, "c", node_id=2)),  # trimmed version
        (b"#\r\n#date\r\nnode.id=1\r\nversion=1\r\ncluster.id=q\r\n", MetaProperties(1, "q", node_id=1)),
        (
            b"version=0\ndirectory.id=J8aAPcfLQt2bqs1JT_rMgQ==\n",
            MetaProperties(0, directory_id="J8aAPcfLQt2bqs1JT_rMgQ"),
        ),
        (b"version=1\nnode.id=1\ncluster.id=caf\xe9\n", MetaProperties(1, "caf\xe9", node_id=1)),  # ISO-8859-1
        (b"", MetaProperties(0)),
    ],
    ids=["default version", "v0", "v1", "separators", "crlf", "padded directory id", "latin-1", "empty"],
)
def test_parse(content: bytes, expected: MetaProperties) -> None:
    assert parse_meta_properties(content) == expected


@pytest.mark.parametrize(
    "content",
    [
        b"version=2\nnode.id=1\ncluster.id=c\n",
        b"version=x\n",
        b"version=1\ncluster.id=c\n",
        b"version=1\nnode.id=1\n",
        b"version=1\nnode.id=1 \ncluster.id=c\n",
        b"version=0\nbroker.id=one\n",
        b"version=0\nbroker.id=2147483648\n",
        b"version=0\ndirectory.id=not-a-uuid\n",
        b"version=0\ncluster.id=\\u00zz\n",
    ],
    ids=[
        "unknown version",
        "version not a number",
        "v1 without node.id",
        "v1 without cluster.id",
        "node.id trailing blank",
        "broker.id not a number",
        "broker.id over int32",
        "bad directory.id",
        "bad unicode escape",
    ],
)
def test_malformed(tmp_path: Path, content: bytes) -> None:
    path = tmp_path / names.META_PROPERTIES
    path.write_bytes(content)
    with pytest.raises(CorruptCheckpointError) as error:
        read_meta_properties(path, fs=FS)
    assert error.value.path == path


@pytest.mark.parametrize(
    "meta",
    [
        MetaProperties(2, "c", node_id=1),
        MetaProperties(1, None, node_id=1),
        MetaProperties(1, "c"),
        MetaProperties(1, "c", node_id=1, broker_id=1),
        MetaProperties(0, node_id=1),
        MetaProperties(0, directory_id="nope"),
    ],
    ids=["version 2", "v1 no cluster", "v1 no node", "v1 broker id", "v0 node id", "bad directory id"],
)
def test_values_kafka_could_not_have_written_are_refused(tmp_path: Path, meta: MetaProperties) -> None:
    with pytest.raises(ValueError):  # noqa: PT011 - one error type, several reasons
        write_meta_properties(tmp_path / names.META_PROPERTIES, meta, now_ms=T0, fs=FS)
    assert not (tmp_path / names.META_PROPERTIES).exists()


@pytest.mark.parametrize("now_ms", [0, -1, T0, 951782400000, 253402300799000])
def test_java_date_format(now_ms: int) -> None:
    assert (
        java_date(now_ms)
        == {
            0: "Thu Jan 01 00:00:00 UTC 1970",
            -1: "Wed Dec 31 23:59:59 UTC 1969",
            T0: "Fri Oct 25 03:33:01 UTC 2024",
            951782400000: "Tue Feb 29 00:00:00 UTC 2000",
            253402300799000: "Fri Dec 31 23:59:59 UTC 9999",
        }[now_ms]
    )


def test_the_jdk_prints_the_same_dates(java: JavaRunner) -> None:
    stamps = [0, -1, T0, 951782400000, 1700000000123, 253402300799000]
    assert java("date", *map(str, stamps)) == [java_date(ms) for ms in stamps]


PROPERTIES_TEXTS = [
    b"a=1\n  b : 2\nc 3\n#x=1\n! y=2\n",
    b"d=multi\\\n   line\\\r\n\tend\n",
    b"e\\ f=g\\=h\nu=\\u0041\\t\\n\nk\\\\=v\\\\\n",
    b"   \n\n\tempty\nw=x\\\r\n  y\rz=\\\n",
    b"key=\xe9\xff\nk2\\:x=:v\n=novalue\n:colon\n",
    b"#comment \\\nnot.continued=1\na=first\na=second\n",
    b"\xef\xbb\xbfbom=1\nlast=no newline",
]


def test_the_jdk_parses_properties_texts_as_we_do(tmp_path: Path, java: JavaRunner) -> None:
    files = []
    for i, text in enumerate(PROPERTIES_TEXTS):
        files.append(tmp_path / f"{i}.properties")
        files[-1].write_bytes(text)
    expected = java("load", *map(str, files))
    assert [_hex_map(parse_java_properties(text.decode("latin-1"))) for text in PROPERTIES_TEXTS] == expected


STORED = [
    KRAFT.to_properties(),
    ZOOKEEPER.to_properties(),
    {"cluster.id": " lead space", "node.id": "1", "version": "1", "odd key=:#!": "v=:#!\\ \t\n\r\x0c x"},
]


def test_what_we_write_the_jdk_reads_back(tmp_path: Path, java: JavaRunner) -> None:
    files = []
    for i, meta in enumerate((KRAFT, ZOOKEEPER)):
        files.append(tmp_path / f"{i}.properties")
        write_meta_properties(files[-1], meta, now_ms=T0, fs=FS)
    assert java("load", *map(str, files)) == [_hex_map(KRAFT.to_properties()), _hex_map(ZOOKEEPER.to_properties())]


def test_what_the_jdk_writes_we_read(tmp_path: Path, java: JavaRunner) -> None:
    args: list[str] = []
    for i, values in enumerate(STORED):
        args += [str(tmp_path / f"{i}.properties"), *(item for pair in values.items() for item in pair), "--"]
    java("store", *args)
    for i, values in enumerate(STORED):
        text = (tmp_path / f"{i}.properties").read_bytes()
        assert text.startswith(b"#\n#")
        assert parse_java_properties(text.decode("latin-1")) == values
    assert read_meta_properties(tmp_path / "0.properties", fs=FS) == KRAFT
    assert read_meta_properties(tmp_path / "1.properties", fs=FS) == ZOOKEEPER


@pytest.mark.parametrize("row", META_ROWS, ids=[row.id for row in META_ROWS])
def test_every_real_file_matches_the_manifest(row: ManifestRow) -> None:
    meta = read_meta_properties(row.path, fs=FS)
    facts = dict(item.strip().split("=", 1) for item in row.contents.split(":", 1)[1].split("|"))
    assert meta.version == int(facts["version"])
    assert meta.cluster_id == facts.get("cluster.id")
    assert meta.directory_id == facts.get("directory.id")
    assert meta.node_id == (int(facts["node.id"]) if "node.id" in facts else None)
    assert meta.broker_id == (int(facts["broker.id"]) if "broker.id" in facts else None)
    # Rewriting it gives the same keys and values, and the same lines when the broker's JDK sorted them.
    body = row.path.read_bytes().replace(b"\r\n", b"\n").split(b"\n", 2)[2]
    ours = format_meta_properties(meta, now_ms=T0).split(b"\n", 2)[2]
    assert sorted(ours.splitlines()) == sorted(body.splitlines())
    if body.splitlines() == sorted(body.splitlines()):
        assert ours == body


def test_every_meta_properties_under_realdata_parses() -> None:
    paths = sorted(REALDATA.rglob(names.META_PROPERTIES))
    assert len(paths) == len(META_ROWS) >= 20
    versions = {read_meta_properties(path, fs=FS).version for path in paths}
    assert versions == {0, 1}


def test_manifest_facts() -> None:
    v0 = read_meta_properties(REALDATA / "DonaldY__kafka-2.7.1/kafka-logs/meta.properties", fs=FS)
    assert v0 == MetaProperties(0, cluster_id="d0053poFTbGwSWThjV1DEg", broker_id=0)
    v0_without_cluster = read_meta_properties(REALDATA / "hermag__kafkademo/kafka/data/meta.properties", fs=FS)
    assert v0_without_cluster == MetaProperties(0, broker_id=1001)
    v1 = read_meta_properties(REALDATA / "ArthurArutunyan04__Backend_labs/kafka-data/meta.properties", fs=FS)
    assert v1 == MetaProperties(1, cluster_id="universe-labs-cluster", node_id=1, directory_id="MQHhtGhc9j1ncLM2pvl16w")
    crlf = read_meta_properties(REALDATA / "JY-GIEGIEGIE__Stock-Sys-Integration/kafka-logs/meta.properties", fs=FS)
    assert crlf == MetaProperties(1, cluster_id="qDiEGq8USDuFevMYl0UwZg", node_id=1)
