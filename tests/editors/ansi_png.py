"""Render a terminal capture (`tmux capture-pane -e -p`: text with SGR colour escapes) to PNG.

Enough of SGR for Neovim in tmux: reset, bold, italic, underline, reverse, 16/256/24-bit
foreground and background. Used for the README screenshots taken by the real-editor tests.
"""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass, replace
from pathlib import Path

from PIL import Image, ImageDraw, ImageFont

FONT_DIR = Path("/usr/share/fonts/truetype/dejavu")
SGR = re.compile(r"\x1b\[([0-9;:]*)m")
OTHER_ESCAPE = re.compile(r"\x1b(\[[0-9;?]*[A-Za-ln-z]|\][^\x07]*\x07|[()][0-9A-B])")

# xterm's default 16 colours
BASE16 = [
    (0, 0, 0), (205, 0, 0), (0, 205, 0), (205, 205, 0), (0, 0, 238), (205, 0, 205), (0, 205, 205),
    (229, 229, 229), (127, 127, 127), (255, 0, 0), (0, 255, 0), (255, 255, 0), (92, 92, 255),
    (255, 0, 255), (0, 255, 255), (255, 255, 255),
]  # fmt: skip
DEFAULT_FG = (224, 226, 234)
DEFAULT_BG = (20, 22, 27)


def color256(n: int) -> tuple[int, int, int]:
    if n < 16:
        return BASE16[n]
    if n < 232:
        n -= 16
        levels = [0, 95, 135, 175, 215, 255]
        return levels[n // 36], levels[(n // 6) % 6], levels[n % 6]
    v = 8 + (n - 232) * 10
    return v, v, v


@dataclass(frozen=True)
class Style:
    fg: tuple[int, int, int] | None = None
    bg: tuple[int, int, int] | None = None
    bold: bool = False
    italic: bool = False
    underline: bool = False
    reverse: bool = False


def apply_sgr(style: Style, params: str) -> Style:
    codes = [int(p) if p.isdigit() else 0 for p in re.split(r"[;:]", params or "0")]
    i = 0
    while i < len(codes):
        c = codes[i]
        if c == 0:
            style = Style()
        elif c == 1:
            style = replace(style, bold=True)
        elif c == 3:
            style = replace(style, italic=True)
        elif c == 4:
            style = replace(style, underline=True)
        elif c == 7:
            style = replace(style, reverse=True)
        elif c == 22:
            style = replace(style, bold=False)
        elif c == 23:
            style = replace(style, italic=False)
        elif c == 24:
            style = replace(style, underline=False)
        elif c == 27:
            style = replace(style, reverse=False)
        elif 30 <= c <= 37 or 90 <= c <= 97:
            style = replace(style, fg=BASE16[c - 30 if c < 90 else c - 82])
        elif 40 <= c <= 47 or 100 <= c <= 107:
            style = replace(style, bg=BASE16[c - 40 if c < 100 else c - 92])
        elif c == 39:
            style = replace(style, fg=None)
        elif c == 49:
            style = replace(style, bg=None)
        elif c in (38, 48) and i + 1 < len(codes):
            if codes[i + 1] == 5 and i + 2 < len(codes):
                rgb, i = color256(codes[i + 2]), i + 2
            elif codes[i + 1] == 2 and i + 4 < len(codes):
                rgb, i = (codes[i + 2], codes[i + 3], codes[i + 4]), i + 4
            else:
                rgb = None
            style = replace(style, **{"fg" if c == 38 else "bg": rgb})
        i += 1
    return style


def parse(capture: str) -> list[list[tuple[str, Style]]]:
    """Lines of (character, style) cells."""
    rows: list[list[tuple[str, Style]]] = []
    style = Style()
    for raw in capture.split("\n"):
        raw = OTHER_ESCAPE.sub("", raw)
        cells: list[tuple[str, Style]] = []
        pos = 0
        for m in SGR.finditer(raw):
            cells.extend((ch, style) for ch in raw[pos : m.start()])
            style = apply_sgr(style, m.group(1))
            pos = m.end()
        cells.extend((ch, style) for ch in raw[pos:])
        rows.append(cells)
    while rows and not rows[-1]:
        rows.pop()
    return rows


def render(
    capture: str,
    out: Path,
    columns: int,
    font_size: int = 16,
    title: str | None = None,
    cursor: tuple[int, int] | None = None,
) -> Path:
    """PNG of the capture; `cursor` (column, row) is drawn as an insert-mode bar."""
    rows = parse(capture)
    fonts = {
        (b, i): ImageFont.truetype(str(FONT_DIR / name), font_size)
        for (b, i), name in {
            (False, False): "DejaVuSansMono.ttf", (True, False): "DejaVuSansMono-Bold.ttf",
            (False, True): "DejaVuSansMono-Oblique.ttf", (True, True): "DejaVuSansMono-BoldOblique.ttf",
        }.items()
    }  # fmt: skip
    cell_w = round(fonts[False, False].getlength("M"))
    cell_h = round(font_size * 1.35)
    pad, bar = 12, (28 if title else 0)
    img = Image.new("RGB", (columns * cell_w + 2 * pad, len(rows) * cell_h + 2 * pad + bar), DEFAULT_BG)
    draw = ImageDraw.Draw(img)
    if title:
        draw.rectangle([0, 0, img.width, bar], fill=(44, 46, 52))
        for k, c in enumerate([(255, 95, 86), (255, 189, 46), (39, 201, 63)]):
            draw.ellipse([10 + 18 * k, 9, 20 + 18 * k, 19], fill=c)
        draw.text((70, 6), title, fill=(200, 200, 200), font=fonts[False, False])
    for y, cells in enumerate(rows):
        for x, (ch, st) in enumerate(cells[:columns]):
            fg, bg = st.fg or DEFAULT_FG, st.bg or DEFAULT_BG
            if st.reverse:
                fg, bg = bg, fg
            left, top = pad + x * cell_w, pad + bar + y * cell_h
            if bg != DEFAULT_BG:
                draw.rectangle([left, top, left + cell_w - 1, top + cell_h - 1], fill=bg)
            if ch.strip():
                draw.text((left, top + 2), ch, fill=fg, font=fonts[st.bold, st.italic])
            if st.underline:
                draw.line([left, top + cell_h - 3, left + cell_w, top + cell_h - 3], fill=fg)
    if cursor:
        left, top = pad + cursor[0] * cell_w, pad + bar + cursor[1] * cell_h
        draw.rectangle([left, top + 1, left + 1, top + cell_h - 2], fill=DEFAULT_FG)
    out.parent.mkdir(parents=True, exist_ok=True)
    img.save(out)
    return out


if __name__ == "__main__":
    # ansi_png.py CAPTURE.txt OUT.png COLUMNS [TITLE]
    render(
        Path(sys.argv[1]).read_text(), Path(sys.argv[2]), int(sys.argv[3]), title=(sys.argv[4:] or [None])[0]
    )
