"""Codecs (kafka-format.md §4.8): what Kafka writes, what its readers accept, and damaged input."""

from __future__ import annotations

import gzip
import struct

import cramjam
import kafka.codec
import lz4.frame
import pytest
import xxhash
import zstandard
from hypothesis import given, settings
from hypothesis import strategies as st

from storage_core.errors import CorruptRecordError, UnsupportedFormatError
from storage_core.records.compression import CODECS, CompressionType

TEXT = b"order status shipped customer amount EUR warehouse sku " * 3000  # ~165 KiB, compressible
GZIP, SNAPPY, LZ4, ZSTD = (
    CODECS[c] for c in (CompressionType.GZIP, CompressionType.SNAPPY, CompressionType.LZ4, CompressionType.ZSTD)
)


def test_ids_and_kafka_names() -> None:
    assert [(int(c), c.kafka_name) for c in CompressionType] == [
        (0, "none"),
        (1, "gzip"),
        (2, "snappy"),
        (3, "lz4"),
        (4, "zstd"),
    ]
    assert CompressionType.of(0x3B) is CompressionType.LZ4  # only bits 0-2 count
    assert set(CODECS) == set(CompressionType)


@pytest.mark.parametrize("code", [5, 6, 7])
def test_unknown_codec_ids_are_unsupported(code: int) -> None:
    with pytest.raises(UnsupportedFormatError):
        CompressionType.of(code)


@settings(max_examples=60, deadline=None)
@given(st.sampled_from(list(CompressionType)), st.binary(max_size=3000), st.sampled_from([0, 1, 2]))
def test_round_trip(codec: CompressionType, data: bytes, magic: int) -> None:
    compressed = CODECS[codec].compress(data, magic=magic)
    assert CODECS[codec].decompress(memoryview(compressed), magic=magic) == data


@pytest.mark.parametrize("codec", list(CompressionType), ids=[c.kafka_name for c in CompressionType])
def test_large_input_round_trips(codec: CompressionType) -> None:
    assert CODECS[codec].decompress(CODECS[codec].compress(TEXT)) == TEXT


# -- gzip --------------------------------------------------------------------------------------


def test_gzip_reads_concatenated_members_and_kafka_python_reads_ours() -> None:
    assert GZIP.decompress(gzip.compress(b"first ") + gzip.compress(b"second")) == b"first second"
    assert kafka.codec.gzip_decode(GZIP.compress(TEXT)) == TEXT
    assert GZIP.decompress(kafka.codec.gzip_encode(TEXT)) == TEXT


# -- snappy ------------------------------------------------------------------------------------


def _snappy_blocks(stream: bytes) -> list[int]:
    """Block lengths of a xerial stream after its 16-byte header."""
    lengths, pos = [], 16
    while pos < len(stream):
        (length,) = struct.unpack_from(">i", stream, pos)
        lengths.append(length)
        pos += 4 + length
    return lengths


def test_snappy_writes_the_xerial_header_and_32_kib_blocks() -> None:
    stream = SNAPPY.compress(TEXT)
    assert stream[:16].hex() == "82534e41505059000000000100000001"
    blocks = _snappy_blocks(stream)
    assert len(blocks) == -(-len(TEXT) // 32768)
    assert kafka.codec.snappy_decode(stream) == TEXT


def test_snappy_reads_kafka_python_raw_and_concatenated_streams() -> None:
    assert SNAPPY.decompress(kafka.codec.snappy_encode(TEXT, xerial_compatible=True)) == TEXT
    assert SNAPPY.decompress(bytes(cramjam.snappy.compress_raw(b"no framing at all"))) == b"no framing at all"
    assert SNAPPY.decompress(SNAPPY.compress(b"one, ") + SNAPPY.compress(b"two")) == b"one, two"
    assert SNAPPY.decompress(SNAPPY.compress(b"tail") + b"\x00\x00\x01") == b"tail"  # 1-3 bytes end the stream
    assert SNAPPY.decompress(b"") == b""


# -- lz4 ---------------------------------------------------------------------------------------


def test_lz4_writes_kafkas_header_and_the_broken_checksum_for_magic_0() -> None:
    assert LZ4.compress(b"x" * 100, magic=2)[:7].hex() == "04224d18604082"
    assert LZ4.compress(b"x" * 100, magic=1)[:7].hex() == "04224d18604082"
    v0 = LZ4.compress(b"x" * 100, magic=0)
    assert v0[:7].hex() == "04224d1860401a"
    # pre-KIP-57 HC: xxh32 over the magic bytes too; the correct HC covers FLG and BD only
    assert v0[6] == (xxhash.xxh32(v0[:6]).intdigest() >> 8) & 0xFF
    assert LZ4.compress(b"")[7:] == b"\x00\x00\x00\x00"


@pytest.mark.parametrize(
    "options",
    [
        {"store_size": True},
        {"block_checksum": True},
        {"content_checksum": True},
        {"block_size": lz4.frame.BLOCKSIZE_MAX256KB},
        {"block_size": lz4.frame.BLOCKSIZE_MAX1MB},
        {"block_size": lz4.frame.BLOCKSIZE_MAX4MB, "store_size": True, "block_checksum": True},
    ],
    ids=["content-size", "block-checksums", "content-checksum", "256KiB", "1MiB", "4MiB-all-flags"],
)
def test_lz4_reads_every_frame_kafka_accepts(options: dict) -> None:
    frame = lz4.frame.compress(TEXT, block_linked=False, **options)
    assert LZ4.decompress(frame) == TEXT


def test_lz4_interop_with_kafka_python() -> None:
    assert LZ4.decompress(kafka.codec.lz4_encode(TEXT)) == TEXT  # FLG 0x68: content size
    assert kafka.codec.lz4_decode(LZ4.compress(TEXT)) == TEXT


def test_lz4_ignores_the_header_checksum_of_magic_0() -> None:
    assert LZ4.decompress(LZ4.compress(TEXT, magic=0), magic=0) == TEXT


@pytest.mark.parametrize(
    "frame",
    [
        lz4.frame.compress(TEXT, block_linked=True, block_size=lz4.frame.BLOCKSIZE_MAX64KB),
        b"\x05\x22\x4d\x18\x60\x40\x82\x00\x00\x00\x00",
        bytes.fromhex("04224d18") + b"\x63\x40\x82\x00\x00\x00\x00",  # reserved FLG bits
        bytes.fromhex("04224d18") + b"\x60\x30\x82\x00\x00\x00\x00",  # block size code 3
        lz4.frame.compress(TEXT, block_linked=False)[:-4],  # no end mark
        lz4.frame.compress(TEXT, block_linked=False)[:500],
        b"\x04\x22",
    ],
    ids=["linked-blocks", "bad-magic", "reserved-bits", "small-blocks", "no-end-mark", "truncated", "tiny"],
)
def test_lz4_rejects_what_kafka_rejects(frame: bytes) -> None:
    with pytest.raises(CorruptRecordError):
        LZ4.decompress(frame)


# -- zstd --------------------------------------------------------------------------------------


def test_zstd_reads_frames_without_content_size_and_several_frames() -> None:
    streamed = zstandard.ZstdCompressor(write_content_size=False).compress(TEXT)
    assert ZSTD.decompress(streamed) == TEXT
    chunked = zstandard.ZstdCompressor().compressobj()
    stream = chunked.compress(TEXT[:1000]) + chunked.compress(TEXT[1000:]) + chunked.flush()
    assert ZSTD.decompress(stream) == TEXT
    assert ZSTD.decompress(ZSTD.compress(b"one, ") + ZSTD.compress(b"two")) == b"one, two"
    assert kafka.codec.zstd_decode(ZSTD.compress(TEXT)) == TEXT


# -- damaged input -------------------------------------------------------------------------------


@pytest.mark.parametrize("codec", [c for c in CompressionType if c], ids=[c.kafka_name for c in CompressionType if c])
def test_truncated_streams_are_corrupt_record_errors(codec: CompressionType) -> None:
    stream = CODECS[codec].compress(TEXT)
    with pytest.raises(CorruptRecordError):
        CODECS[codec].decompress(stream[: len(stream) // 2])


def test_gzip_writes_the_bytes_of_kafkas_gzip_compression() -> None:
    """Kafka 4.4.0's `Compression.gzip()` output for 20 small writes (its header has OS 255, where
    Python's gzip writes 3): a batch logkeeper's cleaner recompresses is the broker's byte for byte
    (found by the broker tests, tests/kafka)."""
    payload = b"".join(b"record %d of logkeeper;" % i for i in range(20))
    kafka = bytes.fromhex(
        "1f8b08000000000000ff75cfb90d80400c45c1565c029f1b510e7809762523f71f1090a1473ad9a41f91a77516c55a5cd5fdf6dcf3"
        "55a1f6a803ea883aa1cea80bea8abaf1e227c73b714ffc1307c54371517c1427f5593e240fb871c2010000"
    )
    assert GZIP.compress(payload) == kafka


def test_gzip_detects_a_flipped_byte() -> None:
    stream = bytearray(GZIP.compress(TEXT))
    stream[len(stream) // 2] ^= 0x55
    with pytest.raises(CorruptRecordError):
        GZIP.decompress(bytes(stream))


def test_snappy_block_running_past_the_stream_is_corrupt() -> None:
    with pytest.raises(CorruptRecordError):
        SNAPPY.decompress(SNAPPY.compress(b"abc")[:16] + struct.pack(">i", 1000) + b"\x00" * 10)
