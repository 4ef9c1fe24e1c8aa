"""How values print: Java's text forms and their JSON twins (storage_core/dump/render.py)."""

from __future__ import annotations

import base64
import json

from hypothesis import given, settings
from hypothesis import strategies as st

from storage_core.dump.render import DumpLine, Field, JsonText, LegacyCrc, OptionalLong, render_json, render_text


def test_java_text_forms_and_their_json() -> None:
    line = DumpLine(
        "record",
        (
            Field("isvalid", True),
            Field("deleteHorizonMs", OptionalLong(None)),
            Field("horizon", OptionalLong(1_700_086_400_000)),
            Field("headerKeys", ["a", "b"]),
            Field("crc", LegacyCrc(42)),
            Field("SnapshotFooter", JsonText({"version": 0}), " "),
            Field("key", None),
            Field("payload", b"v\xff"),
        ),
        prefix="| ",
    )
    assert render_text(line) == (
        "| isvalid: true deleteHorizonMs: OptionalLong.empty horizon: OptionalLong[1700086400000] "
        'headerKeys: [a,b] crc: 42} SnapshotFooter {"version":0} payload: v\ufffd'
    )
    assert json.loads(render_json(line)) == {
        "type": "record",
        "isvalid": True,
        "deleteHorizonMs": None,
        "horizon": 1_700_086_400_000,
        "headerKeys": ["a", "b"],
        "crc": 42,
        "SnapshotFooter": {"version": 0},
        "key": None,
        "payload": base64.b64encode(b"v\xff").decode(),
    }


def test_sentence_lines_fill_their_template_and_keep_fields_in_json() -> None:
    line = DumpLine(
        "trailing_bytes",
        (Field("trailingBytes", 3), Field("file", "x.log")),
        template="Found {trailingBytes} invalid bytes at the end of {file}",
    )
    assert render_text(line) == "Found 3 invalid bytes at the end of x.log"
    assert json.loads(render_json(line)) == {"type": "trailing_bytes", "trailingBytes": 3, "file": "x.log"}


def test_a_line_with_nothing_to_show_is_empty_and_the_suffix_is_kept() -> None:
    assert render_text(DumpLine("record", (Field("key", None),), prefix="| ")) == ""
    assert render_text(DumpLine("producer", (Field("lastTimestamp", 5),), suffix=" ")) == "lastTimestamp: 5 "


@settings(max_examples=50, deadline=None)
@given(key=st.binary(max_size=40), payload=st.one_of(st.none(), st.binary(max_size=40)))
def test_bytes_print_as_java_string_decoder_text_and_round_trip_through_json(key: bytes, payload: bytes | None) -> None:
    line = DumpLine("record", (Field("key", key), Field("payload", payload)), prefix="| ")
    expected = f"| key: {key.decode('utf-8', 'replace')}"
    if payload is not None:
        expected += f" payload: {payload.decode('utf-8', 'replace')}"
    assert render_text(line) == expected
    body = json.loads(render_json(line))
    assert base64.b64decode(body["key"]) == key
    assert (None if body["payload"] is None else base64.b64decode(body["payload"])) == payload
