# SPDX-License-Identifier: BSD-3-Clause
"""Check a screenshot of `llmp report`'s page, as Debian's chromium drew it.

    report_page.py PNG TP DP SLOW_RANK

The expected picture is worked out here, not read from the page: the three
pictures are found by their 1-pixel #ddd frames (722 x 302 pixels: an SVG of
720 x 300 and its border); each must hold ink of its own kind (the traffic
lines' colours, one blue bar per rank standing on the axis), and on the heat
map the one red cell must be the slowed rank's, where its coordinates put it
in Megatron-Core's order (tp fastest, then dp; columns tp, rows dp) on the
plot area of 640 x 240 units at (60, 20), every other cell white or light.

The PNG is decoded with zlib alone (8-bit RGB or RGBA, not interlaced, as
chromium writes it), so the test needs no imaging library.
"""

import struct
import sys
import zlib

FRAME = (221, 221, 221)  # the page's svg{border:1px solid #ddd}
BOX_W, BOX_H = 722, 302


def decode_png(path):
    """(width, height, rows of (r, g, b) tuples)."""
    data = open(path, "rb").read()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "%s is not a PNG" % path
    pos, idat, head = 8, b"", None
    while pos < len(data):
        (n,) = struct.unpack(">I", data[pos:pos + 4])
        kind, body = data[pos + 4:pos + 8], data[pos + 8:pos + 8 + n]
        pos += 12 + n
        if kind == b"IHDR":
            head = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat += body
    width, height, depth, colour, _, _, interlace = head
    assert depth == 8 and colour in (2, 6) and interlace == 0, head
    bpp = 3 if colour == 2 else 4
    raw, stride = zlib.decompress(idat), width * bpp
    rows, prev, off = [], bytearray(stride), 0
    for _ in range(height):
        ftype, line = raw[off], bytearray(raw[off + 1:off + 1 + stride])
        off += 1 + stride
        for i in range(stride):
            a = line[i - bpp] if i >= bpp else 0
            b = prev[i]
            c = prev[i - bpp] if i >= bpp else 0
            if ftype == 1:
                line[i] = (line[i] + a) & 255
            elif ftype == 2:
                line[i] = (line[i] + b) & 255
            elif ftype == 3:
                line[i] = (line[i] + (a + b) // 2) & 255
            elif ftype == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                pred = a if pa <= pb and pa <= pc else (b if pb <= pc else c)
                line[i] = (line[i] + pred) & 255
        rows.append([tuple(line[x * bpp:x * bpp + 3]) for x in range(width)])
        prev = line
    return width, height, rows


def near(p, q, tol=8):
    return all(abs(a - b) <= tol for a, b in zip(p, q))


def find_boxes(width, rows):
    """Top-left corners of the framed pictures: a row of a frame's colour
    BOX_W long whose twin lies BOX_H - 1 rows below."""
    tops = []
    for y, row in enumerate(rows):
        x = 0
        while x + BOX_W <= width:
            if near(row[x], FRAME, 2) and all(near(row[x + i], FRAME, 2) for i in range(0, BOX_W, 7)) \
                    and near(row[x + BOX_W - 1], FRAME, 2):
                tops.append((x, y))
                break
            x += 1
    boxes = [(x, y) for x, y in tops if (x, y + BOX_H - 1) in tops]
    return boxes


def main():
    path, tp, dp, slow = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
    width, height, rows = decode_png(path)
    boxes = find_boxes(width, rows)
    assert len(boxes) == 3, "expected 3 framed pictures, found %s in %dx%d" % (boxes, width, height)

    def px(box, sx, sy):  # a point of the SVG's own units, inside the 1-pixel frame
        return rows[box[1] + 1 + int(sy)][box[0] + 1 + int(sx)]

    traffic, steps, heat = boxes
    # Traffic: coloured ink (the palette's lines), not only the black axes and grey text.
    inked = sum(1 for sy in range(20, 261) for sx in range(61, 700)
                if max(px(traffic, sx, sy)) - min(px(traffic, sx, sy)) > 80)
    assert inked > 300, "the traffic picture has %d coloured pixels" % inked
    world = tp * dp
    # Steps: one bar of #1f77b4 per rank, standing on the axis (y 260) at its slot.
    slot = 640 / world
    for k in range(world):
        p = px(steps, 60 + slot * (k + 0.5), 257)
        assert near(p, (31, 119, 180), 12), "no bar for rank %d: %s" % (k, p)
    # The heat map: the slowed rank's cell red; every other cell white or light (a rank waiting in
    # a chain behind the slow one may score a few percent of it: metrics.bats says why).
    cw, ch = 640 / tp, 240 / dp
    for r in range(world):
        col, row = r % tp, r // tp
        p = px(heat, 60 + cw * col + cw / 4, 20 + ch * row + ch / 4)
        if r == slow:
            ok, want = near(p, (255, 0, 0), 6), "red"
        else:
            ok, want = p[0] >= 250 and p[1] >= 200 and abs(p[1] - p[2]) <= 6, "white or light"
        assert ok, "rank %d's cell (col %d, row %d) is %s, expected %s" % (r, col, row, p, want)
    print("page ok: 3 pictures at %s, rank %d red at col %d row %d" % (boxes, slow, slow % tp, slow // tp))


if __name__ == "__main__":
    main()
