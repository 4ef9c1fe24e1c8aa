"""Compression codecs of the records section, one dispatch table (kafka-format.md §4.8).

| id | codec  | stream format Kafka writes and reads                                          |
|----|--------|-------------------------------------------------------------------------------|
| 0  | none   | the records themselves                                                        |
| 1  | gzip   | RFC 1952 gzip; concatenated members accepted                                  |
| 2  | snappy | xerial snappy-java framing: 16-byte header `82 'SNAPPY' 00`, version 1,        |
|    |        | compatible version 1, then blocks `int32 BE length | raw snappy` of ≤ 32 KiB   |
|    |        | input; input without the header is one raw snappy buffer                      |
| 3  | lz4    | LZ4 frame, independent 64 KiB blocks, no checksums: header `04 22 4D 18 60 40 82`;|
|    |        | magic-0 wrappers carry a "broken" header checksum, ignored on read            |
| 4  | zstd   | zstd frame(s), streamed (the frame may not carry the content size)            |

Readers accept everything the Java clients write (content-size flag, block checksums, 64 KiB-4 MiB
blocks in lz4; concatenated snappy streams and zstd frames).
"""

from __future__ import annotations

import enum
import gzip
import struct
import zlib
from typing import Protocol

import cramjam
import lz4.block
import lz4.frame
import zstandard

from storage_core.errors import CorruptRecordError, UnsupportedFormatError


class CompressionType(enum.IntEnum):
    """Attribute bits 0-2 of a batch (and of a legacy message)."""

    NONE = 0
    GZIP = 1
    SNAPPY = 2
    LZ4 = 3
    ZSTD = 4

    @property
    def kafka_name(self) -> str:
        """The name Kafka prints (`compresscodec: lz4`)."""
        return self.name.lower()

    @classmethod
    def of(cls, attributes: int) -> CompressionType:
        """The codec of an attributes value; unknown ids (5-7) are an error, as in Kafka."""
        try:
            return cls(attributes & 0x07)
        except ValueError:
            raise UnsupportedFormatError(f"unknown compression type id {attributes & 0x07}") from None


class Codec(Protocol):
    """Compress and decompress a records section."""

    def compress(self, data: bytes, *, magic: int = 2) -> bytes: ...

    def decompress(self, data: bytes | memoryview, *, magic: int = 2) -> bytes: ...


class _NoCompression:
    def compress(self, data: bytes, *, magic: int = 2) -> bytes:
        return bytes(data)

    def decompress(self, data: bytes | memoryview, *, magic: int = 2) -> bytes:
        return bytes(data)


class _Gzip:
    def compress(self, data: bytes, *, magic: int = 2) -> bytes:
        return gzip.compress(bytes(data), mtime=0)

    def decompress(self, data: bytes | memoryview, *, magic: int = 2) -> bytes:
        return gzip.decompress(bytes(data))


_SNAPPY_MAGIC = b"\x82SNAPPY\x00"
_SNAPPY_HEADER = _SNAPPY_MAGIC + struct.pack(">ii", 1, 1)
_SNAPPY_BLOCK = 32 * 1024
_INT32 = struct.Struct(">i")


class _XerialSnappy:
    def compress(self, data: bytes, *, magic: int = 2) -> bytes:
        out = bytearray(_SNAPPY_HEADER)
        view = memoryview(data)
        for start in range(0, len(view), _SNAPPY_BLOCK):
            block = bytes(cramjam.snappy.compress_raw(view[start : start + _SNAPPY_BLOCK]))
            out += _INT32.pack(len(block)) + block
        return bytes(out)

    def decompress(self, data: bytes | memoryview, *, magic: int = 2) -> bytes:
        data = bytes(data)
        if len(data) < len(_SNAPPY_HEADER) or not data.startswith(_SNAPPY_MAGIC):
            return bytes(cramjam.snappy.decompress_raw(data))
        out = bytearray()
        pos = len(_SNAPPY_HEADER)
        while pos < len(data):
            if pos + 4 > len(data):
                raise CorruptRecordError("truncated snappy block length")
            if data.startswith(_SNAPPY_MAGIC[:4], pos):  # a concatenated stream's header
                pos += len(_SNAPPY_HEADER)
                continue
            (length,) = _INT32.unpack_from(data, pos)
            if length < 0 or pos + 4 + length > len(data):
                raise CorruptRecordError(f"bad snappy block length {length}")
            out += cramjam.snappy.decompress_raw(data[pos + 4 : pos + 4 + length])
            pos += 4 + length
        return bytes(out)


_LZ4_MAGIC = 0x184D2204
_LZ4_UNCOMPRESSED = 0x80000000


class _KafkaLz4:
    def compress(self, data: bytes, *, magic: int = 2) -> bytes:
        frame = lz4.frame.compress(
            bytes(data),
            block_size=lz4.frame.BLOCKSIZE_MAX64KB,
            block_linked=False,
            content_checksum=False,
            store_size=False,
        )
        if magic == 0:
            # Kafka before KIP-57 computed the header checksum over magic+FLG+BD; readers of magic 0
            # ignore it, so any byte works. Keep the frame otherwise identical.
            frame = frame[:6] + b"\x1a" + frame[7:]
        return frame

    def decompress(self, data: bytes | memoryview, *, magic: int = 2) -> bytes:
        data = bytes(data)
        if len(data) < 7 or struct.unpack_from("<I", data, 0)[0] != _LZ4_MAGIC:
            raise CorruptRecordError("lz4 frame does not start with the frame magic")
        flg, bd = data[4], data[5]
        if flg >> 6 != 1 or flg & 0x03:
            raise CorruptRecordError(f"unsupported lz4 frame flags {flg:#04x}")
        block_checksum = bool(flg & 0x10)
        pos = 6 + (8 if flg & 0x08 else 0) + 1  # descriptor, optional content size, header checksum
        max_block = 1 << (2 * ((bd >> 4) & 0x07) + 8)
        out = bytearray()
        while True:
            if pos + 4 > len(data):
                raise CorruptRecordError("truncated lz4 frame")
            (size,) = struct.unpack_from("<I", data, pos)
            pos += 4
            if size == 0:
                return bytes(out)
            raw = size & _LZ4_UNCOMPRESSED
            size &= ~_LZ4_UNCOMPRESSED
            if size > max_block or pos + size > len(data):
                raise CorruptRecordError(f"bad lz4 block size {size}")
            block = data[pos : pos + size]
            out += block if raw else lz4.block.decompress(block, uncompressed_size=max_block)
            pos += size + (4 if block_checksum else 0)


class _Zstd:
    def __init__(self) -> None:
        self._compressor = zstandard.ZstdCompressor(level=3)
        self._decompressor = zstandard.ZstdDecompressor()

    def compress(self, data: bytes, *, magic: int = 2) -> bytes:
        return self._compressor.compress(bytes(data))

    def decompress(self, data: bytes | memoryview, *, magic: int = 2) -> bytes:
        out = bytearray()
        remaining = bytes(data)
        while remaining:
            obj = self._decompressor.decompressobj()
            try:
                out += obj.decompress(remaining)
            except zstandard.ZstdError as exc:
                raise CorruptRecordError(f"zstd: {exc}") from None
            remaining = obj.unused_data
        return bytes(out)


CODECS: dict[CompressionType, Codec] = {
    CompressionType.NONE: _NoCompression(),
    CompressionType.GZIP: _Gzip(),
    CompressionType.SNAPPY: _XerialSnappy(),
    CompressionType.LZ4: _KafkaLz4(),
    CompressionType.ZSTD: _Zstd(),
}


# What the codec libraries raise for damaged input (gzip: BadGzipFile/EOFError/zlib.error, cramjam:
# DecompressionError, lz4: LZ4BlockError and RuntimeError).
_CODEC_ERRORS = (
    OSError,
    EOFError,
    ValueError,
    RuntimeError,
    zlib.error,
    cramjam.DecompressionError,
    lz4.block.LZ4BlockError,
)


def decompress(
    codec: CompressionType, data: bytes | memoryview, *, magic: int = 2, position: int | None = None
) -> bytes:
    """Decompress a records section; damaged input raises CorruptRecordError, never a codec's own error."""
    try:
        return CODECS[codec].decompress(data, magic=magic)
    except CorruptRecordError:
        raise
    except _CODEC_ERRORS as exc:
        raise CorruptRecordError(f"{codec.kafka_name} decompression failed: {exc}", position=position) from None
