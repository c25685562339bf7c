"""A minimal PNG decoder (8-bit RGB/RGBA, non-interlaced) for the report tests: written from
the PNG specification so the test does not trust the library that wrote the file."""
import struct
import zlib


def decode_png(path):
    """Returns (width, height, channels, rows): rows[y] is a bytes object of width*channels."""
    data = open(path, "rb").read()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", f"{path}: not a PNG signature"
    pos, idat, header = 8, b"", None
    while pos < len(data):
        (length,) = struct.unpack(">I", data[pos:pos + 4])
        kind = data[pos + 4:pos + 8]
        body = data[pos + 8:pos + 8 + length]
        (crc,) = struct.unpack(">I", data[pos + 8 + length:pos + 12 + length])
        assert zlib.crc32(kind + body) & 0xFFFFFFFF == crc, f"{path}: bad CRC in {kind}"
        if kind == b"IHDR":
            header = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat += body
        elif kind == b"IEND":
            break
        pos += 12 + length
    width, height, depth, color, _, _, interlace = header
    assert depth == 8 and color in (2, 6) and interlace == 0, f"{path}: unsupported PNG {header}"
    channels = 3 if color == 2 else 4
    raw = zlib.decompress(idat)
    stride = width * channels
    assert len(raw) == height * (stride + 1), f"{path}: {len(raw)} bytes of image data for {width}x{height}"
    rows, previous = [], bytearray(stride)
    for y in range(height):
        kind = raw[y * (stride + 1)]
        line = bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):
            left = line[i - channels] if i >= channels else 0
            up = previous[i]
            corner = previous[i - channels] if i >= channels else 0
            if kind == 1:
                line[i] = (line[i] + left) & 0xFF
            elif kind == 2:
                line[i] = (line[i] + up) & 0xFF
            elif kind == 3:
                line[i] = (line[i] + (left + up) // 2) & 0xFF
            elif kind == 4:
                p = left + up - corner
                pa, pb, pc = abs(p - left), abs(p - up), abs(p - corner)
                predictor = left if pa <= pb and pa <= pc else (up if pb <= pc else corner)
                line[i] = (line[i] + predictor) & 0xFF
            else:
                assert kind == 0, f"{path}: filter type {kind}"
        rows.append(bytes(line))
        previous = line
    return width, height, channels, rows


def non_white_fraction(decoded):
    width, height, channels, rows = decoded
    count = 0
    for row in rows:
        for x in range(0, width * channels, channels):
            if min(row[x:x + 3]) < 200:
                count += 1
    return count / (width * height)


def off_background_fraction(decoded):
    """The fraction of pixels that differ from the most common colour (the page background)."""
    width, height, channels, rows = decoded
    counts = {}
    for row in rows:
        for x in range(0, width * channels, channels):
            key = row[x:x + 3]
            counts[key] = counts.get(key, 0) + 1
    return 1 - max(counts.values()) / (width * height)
