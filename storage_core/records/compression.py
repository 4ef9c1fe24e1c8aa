"""Compression codecs of a batch's records section: one dispatch table (kafka-format.md §4.8).

Mirrors `clients/.../common/record/CompressionType.java`, `common/compress/{Gzip,Snappy,Lz4,Zstd}Compression.java`,
`Lz4BlockInputStream.java`/`Lz4BlockOutputStream.java`, and snappy-java's `SnappyInputStream`/`SnappyOutputStream`.

| id | codec  | stream Kafka writes (and we write)          | what the reader also accepts (as Kafka does)     |
|----|--------|---------------------------------------------|--------------------------------------------------|
| 0  | none   | the records themselves                      |                                                  |
| 1  | gzip   | RFC 1952, one member, level 6               | concatenated members                             |
| 2  | snappy | xerial framing (below), 32 KiB input blocks | no header: one raw snappy buffer; concatenated   |
|    |        |                                             | streams; 1-3 trailing bytes ignored              |
| 3  | lz4    | LZ4 frame `04 22 4D 18 60 40 82`: independent | content-size flag, block and content checksums  |
|    |        | 64 KiB blocks, no checksums, end mark       | (skipped, not verified), 64 KiB-4 MiB blocks     |
| 4  | zstd   | zstd frame, level 3                         | frames without content size, several frames      |

```
xerial snappy => Magic => 82 'SNAPPY' 00   Version => Int32 (1)   Compatible => Int32 (1)
                 [BlockLength => Int32 (big-endian)  Block => raw snappy of <= 32 KiB]
LZ4 frame     => Magic => Uint32 LE 0x184D2204  FLG => Int8  BD => Int8  [ContentSize => Int64 LE]  HC => Int8
                 [BlockSize => Uint32 LE (bit 31: stored uncompressed)  Block  [BlockChecksum => Uint32]]
                 EndMark => 00 00 00 00  [ContentChecksum => Uint32]
```

Kafka quirk: before KIP-57 the LZ4 header checksum (HC) of a magic-0 wrapper was computed over the
magic bytes too (`04 22 4D 18 60 40 1A`); we write that byte for magic 0. The reader never checks HC
(Kafka checks it for magic 1 and 2): a frame Kafka rejects only for its HC still reads here.
Linked blocks, reserved bits and block-size codes below 4 are rejected, as Kafka rejects them.
Every decompress raises :class:`CorruptRecordError` for damaged input, never a library's own error.
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

Buffer = bytes | bytearray | memoryview

COMPRESSION_MASK = 0x07  # attribute bits 0-2 of a batch and of a legacy message


class CompressionType(enum.IntEnum):
    """The codec id of attribute bits 0-2 (`CompressionType.java`)."""

    NONE = 0
    GZIP = 1
    SNAPPY = 2
    LZ4 = 3
    ZSTD = 4

    @property
    def kafka_name(self) -> str:
        """The name Kafka prints and configures (`compresscodec: lz4`, `compression.type=zstd`)."""
        return self.name.lower()

    @classmethod
    def of(cls, attributes: int) -> CompressionType:
        """The codec of an attributes value.

        Raises:
            UnsupportedFormatError: ids 5-7 ("Unknown compression type id" in Kafka).
        """
        try:
            return cls(attributes & COMPRESSION_MASK)
        except ValueError:
            raise UnsupportedFormatError(f"unknown compression type id {attributes & COMPRESSION_MASK}") from None


class Codec(Protocol):
    """Compresses and decompresses a records section (v2) or a wrapper's value (v0/v1)."""

    def compress(self, data: Buffer, *, magic: int = 2) -> bytes:
        """The compressed stream, in the form Kafka writes for `magic`."""
        ...

    def decompress(self, data: Buffer, *, magic: int = 2) -> bytes:
        """The decompressed bytes; raises CorruptRecordError for damaged input."""
        ...


class _NoCompression:
    def compress(self, data: Buffer, *, magic: int = 2) -> bytes:
        return bytes(data)

    def decompress(self, data: Buffer, *, magic: int = 2) -> bytes:
        return bytes(data)


# Java's GZIPOutputStream header (RFC 1952): magic, deflate, no flags, mtime 0, no extra flags, and
# OS 255 ("unknown"), where Python's gzip writes its own OS byte (3, Unix).
_JAVA_GZIP_OS = 0xFF
_GZIP_OS_POSITION = 9


class _Gzip:
    def compress(self, data: Buffer, *, magic: int = 2) -> bytes:
        # Level 6 is Deflater's default, which Kafka uses unless compression.gzip.level says otherwise;
        # with Java's header the member is the bytes a broker's GzipCompression writes (same zlib).
        member = bytearray(gzip.compress(data, compresslevel=6, mtime=0))
        member[_GZIP_OS_POSITION] = _JAVA_GZIP_OS
        return bytes(member)

    def decompress(self, data: Buffer, *, magic: int = 2) -> bytes:
        try:
            return gzip.decompress(data)
        except (OSError, EOFError, zlib.error) as exc:  # BadGzipFile is an OSError
            raise CorruptRecordError(f"gzip: {exc}") from None


_SNAPPY_MAGIC = b"\x82SNAPPY\x00"
_SNAPPY_VERSIONS = struct.Struct(">ii")  # version, minimum compatible version
_SNAPPY_HEADER = _SNAPPY_MAGIC + _SNAPPY_VERSIONS.pack(1, 1)
_SNAPPY_BLOCK_LENGTH = struct.Struct(">i")
_SNAPPY_BLOCK_INPUT = 32 * 1024
# A block length equal to the first 4 magic bytes is the header of a concatenated stream.
_SNAPPY_CONCATENATED = _SNAPPY_BLOCK_LENGTH.unpack(_SNAPPY_MAGIC[:4])[0]


class _XerialSnappy:
    def compress(self, data: Buffer, *, magic: int = 2) -> bytes:
        out = bytearray(_SNAPPY_HEADER)
        view = memoryview(data)
        for start in range(0, len(view), _SNAPPY_BLOCK_INPUT):
            block = cramjam.snappy.compress_raw(view[start : start + _SNAPPY_BLOCK_INPUT])
            out += _SNAPPY_BLOCK_LENGTH.pack(len(block))
            out += block
        return bytes(out)

    def decompress(self, data: Buffer, *, magic: int = 2) -> bytes:
        view = memoryview(data)
        try:
            if not view:
                return b""
            if len(view) < len(_SNAPPY_HEADER) or view[: len(_SNAPPY_MAGIC)] != _SNAPPY_MAGIC:
                return bytes(cramjam.snappy.decompress_raw(view))  # snappy-java's raw fallback
            return self._blocks(view)
        except cramjam.DecompressionError as exc:
            raise CorruptRecordError(f"snappy: {exc}") from None

    @staticmethod
    def _blocks(view: memoryview) -> bytes:
        out = bytearray()
        pos = len(_SNAPPY_HEADER)
        while pos + _SNAPPY_BLOCK_LENGTH.size <= len(view):  # 1-3 trailing bytes end the stream
            (length,) = _SNAPPY_BLOCK_LENGTH.unpack_from(view, pos)
            if length == _SNAPPY_CONCATENATED:
                if pos + len(_SNAPPY_HEADER) > len(view):
                    raise CorruptRecordError("snappy: truncated header of a concatenated stream")
                if view[pos : pos + len(_SNAPPY_MAGIC)] != _SNAPPY_MAGIC:
                    break  # snappy-java ends the stream at an invalid concatenated header
                pos += len(_SNAPPY_HEADER)
                continue
            pos += _SNAPPY_BLOCK_LENGTH.size
            if length < 0 or pos + length > len(view):
                raise CorruptRecordError(f"snappy: block length {length} runs past the stream")
            out += cramjam.snappy.decompress_raw(view[pos : pos + length])
            pos += length
        return bytes(out)


_LZ4_PREFIX = struct.Struct("<IBB")  # magic, FLG, BD
_LZ4_MAGIC = 0x184D2204
_LZ4_CONTENT_SIZE = 8
_LZ4_HC = 1
_LZ4_BLOCK_SIZE = struct.Struct("<I")
_LZ4_CHECKSUM = 4
_LZ4_STORED = 0x80000000  # block size bit 31: the block is stored uncompressed
_FLG_VERSION_SHIFT, _FLG_INDEPENDENT, _FLG_BLOCK_CHECKSUM, _FLG_CONTENT_SIZE, _FLG_RESERVED = 6, 0x20, 0x10, 0x08, 0x03
_BD_RESERVED, _BD_SIZE_SHIFT = 0x8F, 4
# HC of Kafka's only header (FLG 0x60, BD 0x40) computed the pre-KIP-57 way, over the magic bytes
# too: xxh32(04 22 4D 18 60 40) >> 8 & 0xFF (kafka-format.md §4.8.3; the test recomputes it).
_LZ4_BROKEN_HC_V0 = 0x1A
_LZ4_HC_POSITION = _LZ4_PREFIX.size


class _KafkaLz4:
    def compress(self, data: Buffer, *, magic: int = 2) -> bytes:
        frame = lz4.frame.compress(
            data,
            block_size=lz4.frame.BLOCKSIZE_MAX64KB,
            block_linked=False,
            content_checksum=False,
            store_size=False,
        )
        if magic == 0:
            frame = frame[:_LZ4_HC_POSITION] + bytes((_LZ4_BROKEN_HC_V0,)) + frame[_LZ4_HC_POSITION + _LZ4_HC :]
        return frame

    def decompress(self, data: Buffer, *, magic: int = 2) -> bytes:
        view = memoryview(data)
        if len(view) < _LZ4_PREFIX.size + _LZ4_HC:
            raise CorruptRecordError("lz4: frame shorter than its header")
        frame_magic, flg, bd = _LZ4_PREFIX.unpack_from(view)
        if frame_magic != _LZ4_MAGIC:
            raise CorruptRecordError(f"lz4: frame magic {frame_magic:#010x}, expected {_LZ4_MAGIC:#010x}")
        size_code = (bd >> _BD_SIZE_SHIFT) & 0x07
        if flg >> _FLG_VERSION_SHIFT != 1 or flg & _FLG_RESERVED or bd & _BD_RESERVED or size_code < 4:
            raise CorruptRecordError(f"lz4: unsupported frame descriptor FLG {flg:#04x} BD {bd:#04x}")
        if not flg & _FLG_INDEPENDENT:
            raise CorruptRecordError("lz4: linked blocks are not supported (Kafka rejects them too)")
        max_block = 1 << (2 * size_code + 8)
        checksum = _LZ4_CHECKSUM if flg & _FLG_BLOCK_CHECKSUM else 0
        pos = _LZ4_PREFIX.size + (_LZ4_CONTENT_SIZE if flg & _FLG_CONTENT_SIZE else 0) + _LZ4_HC
        out = bytearray()
        while True:
            if pos + _LZ4_BLOCK_SIZE.size > len(view):
                raise CorruptRecordError("lz4: frame ends before its end mark")
            (size,) = _LZ4_BLOCK_SIZE.unpack_from(view, pos)
            pos += _LZ4_BLOCK_SIZE.size
            if size == 0:
                return bytes(out)
            stored = size & _LZ4_STORED
            size &= ~_LZ4_STORED
            if size > max_block or pos + size > len(view):
                raise CorruptRecordError(f"lz4: block of {size} bytes (max {max_block}) runs past the frame")
            block = view[pos : pos + size]
            if stored:
                out += block
            else:
                try:
                    out += lz4.block.decompress(block, uncompressed_size=max_block)
                except lz4.block.LZ4BlockError as exc:
                    raise CorruptRecordError(f"lz4: {exc}") from None
            pos += size + checksum


class _Zstd:
    def __init__(self) -> None:
        self._compressor = zstandard.ZstdCompressor(level=3)  # zstd-jni's default level
        self._decompressor = zstandard.ZstdDecompressor()

    def compress(self, data: Buffer, *, magic: int = 2) -> bytes:
        return self._compressor.compress(data)

    def decompress(self, data: Buffer, *, magic: int = 2) -> bytes:
        # Streaming, frame after frame: Kafka's frames do not record their content size.
        out = bytearray()
        remaining = bytes(data)
        try:
            while remaining:
                frame = self._decompressor.decompressobj()
                out += frame.decompress(remaining)
                if not frame.eof:
                    raise CorruptRecordError("zstd: truncated frame")
                remaining = frame.unused_data
        except zstandard.ZstdError as exc:
            raise CorruptRecordError(f"zstd: {exc}") from None
        return bytes(out)


CODECS: dict[CompressionType, Codec] = {
    CompressionType.NONE: _NoCompression(),
    CompressionType.GZIP: _Gzip(),
    CompressionType.SNAPPY: _XerialSnappy(),
    CompressionType.LZ4: _KafkaLz4(),
    CompressionType.ZSTD: _Zstd(),
}
