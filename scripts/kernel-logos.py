#!/usr/bin/python3
"""Makes the kernel spec logos gateway/jupyter embeds (gateway/jupyter/logos).

Run once, from the repository root, when a kernel is added:

    apt-get install -y python3-ipykernel r-cran-irkernel python3-pil python3-fonttools fonts-dejavu-core
    /usr/bin/python3 scripts/kernel-logos.py

python3 and r: the logos their kernels ship, from Debian's packages
(python3-ipykernel: /usr/share/jupyter/kernels/python3; r-cran-irkernel:
/usr/share/jupyter/kernels/ir), the 32x32 of R scaled down from its 64x64.
The others are drawn here: the language's short name on a square of its
colour, in DejaVu Sans Bold (text turned into paths in the SVG), each a
logo-32x32.png, logo-64x64.png and logo-svg.svg. Licences:
gateway/jupyter/logos/LICENSES.md.
"""

import os
import shutil
import sys

from fontTools.pens.svgPathPen import SVGPathPen
from fontTools.pens.transformPen import TransformPen
from fontTools.ttLib import TTFont
from PIL import Image, ImageDraw, ImageFont

OUT = "gateway/jupyter/logos"
SANS_BOLD = "/usr/share/fonts/truetype/dejavu/DejaVuSans-Bold.ttf"
MONO_BOLD = "/usr/share/fonts/truetype/dejavu/DejaVuSansMono-Bold.ttf"

# kernel: (background, text colour, text, font, font size in a 64 box,
# right margin, bottom margin (baseline)), on a 64x64 square with corners of
# radius 6.
DRAWN = {
    "javascript": ("#f7df1e", "#000000", "JS", SANS_BOLD, 30, 4, 6),
    "typescript": ("#3178c6", "#ffffff", "TS", SANS_BOLD, 30, 4, 6),
    "bash": ("#293138", "#4eaa25", "$_", MONO_BOLD, 30, 10, 22),
    "java": ("#e76f00", "#ffffff", "Java", SANS_BOLD, 22, 5, 8),
}

COPIED = {
    "python3": "/usr/share/jupyter/kernels/python3",
    "r": "/usr/share/jupyter/kernels/ir",
}


def layout(text, font_path, size, right, bottom):
    """x of the text's start and its baseline in the 64 box."""
    font = TTFont(font_path)
    upm = font["head"].unitsPerEm
    cmap = font.getBestCmap()
    width = sum(font["hmtx"][cmap[ord(ch)]][0] for ch in text) * size / upm
    return font, 64 - right - width, 64 - bottom


def svg(kernel, bg, fg, text, font_path, size, right, bottom):
    font, x, base = layout(text, font_path, size, right, bottom)
    upm = font["head"].unitsPerEm
    glyphs = font.getGlyphSet()
    cmap = font.getBestCmap()
    paths = []
    for ch in text:
        name = cmap[ord(ch)]
        pen = SVGPathPen(glyphs)
        scale = size / upm
        glyphs[name].draw(TransformPen(pen, (scale, 0, 0, -scale, x, base)))
        if pen.getCommands():
            paths.append(pen.getCommands())
        x += font["hmtx"][name][0] * scale
    d = " ".join(paths)
    return (
        '<svg xmlns="http://www.w3.org/2000/svg" width="64" height="64" viewBox="0 0 64 64">'
        f'<title>{kernel}</title><rect width="64" height="64" rx="6" fill="{bg}"/>'
        f'<path fill="{fg}" d="{d}"/></svg>\n'
    )


def png(px, bg, fg, text, font_path, size, right, bottom):
    """The logo drawn at 8 times px, then scaled down (antialiased)."""
    k = 8 * px / 64
    img = Image.new("RGBA", (8 * px, 8 * px), (0, 0, 0, 0))
    draw = ImageDraw.Draw(img)
    draw.rounded_rectangle((0, 0, 8 * px - 1, 8 * px - 1), radius=round(6 * k), fill=bg)
    _, x, base = layout(text, font_path, size, right, bottom)
    draw.text((x * k, base * k), text, fill=fg, font=ImageFont.truetype(font_path, round(size * k)), anchor="ls")
    return img.resize((px, px), Image.LANCZOS)


def main():
    for kernel, src in COPIED.items():
        dst = os.path.join(OUT, kernel)
        os.makedirs(dst, exist_ok=True)
        for f in ("logo-64x64.png", "logo-svg.svg", "logo-32x32.png"):
            if os.path.exists(os.path.join(src, f)):
                shutil.copyfile(os.path.join(src, f), os.path.join(dst, f))
        if not os.path.exists(os.path.join(src, "logo-32x32.png")):
            Image.open(os.path.join(src, "logo-64x64.png")).convert("RGBA").resize((32, 32), Image.LANCZOS).save(
                os.path.join(dst, "logo-32x32.png"), optimize=True)
    for kernel, spec in DRAWN.items():
        dst = os.path.join(OUT, kernel)
        os.makedirs(dst, exist_ok=True)
        with open(os.path.join(dst, "logo-svg.svg"), "w") as f:
            f.write(svg(kernel, *spec))
        for px in (32, 64):
            png(px, *spec).save(os.path.join(dst, f"logo-{px}x{px}.png"), optimize=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
