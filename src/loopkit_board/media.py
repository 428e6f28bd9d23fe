"""A run's pictures as people want to see them: the app's window cut out of the desktop, and the
run's GIF.

The UI server's ``ui_screenshot`` takes the whole screen of the run's headless desktop: a
1280×1024 picture that is mostly the desktop's black background around a 640-pixel app window.
:func:`cropped_png` cuts a screenshot to what differs from its background (the colour of its
bottom-right corner): the app's windows, dialogs included. :func:`run_gif` makes the run's
animation from its screenshots in the order taken (each cropped, padded to one size), written
in the run folder as ``run.gif`` (the board's own file: written through
:func:`~loopkit_board.artifacts.write_run_file`).

Both need pillow (the ``board`` extra has it); without it the board shows the screenshots whole
and no GIF. Files are read under the run folder's rules (:func:`~loopkit_board.artifacts.
read_run_file`: no links, nothing of ``repo/``).
"""

from __future__ import annotations

import io
import os
from collections import OrderedDict
from pathlib import Path

from loopkit_board.artifacts import open_run_file, read_run_file, write_run_file

__all__ = ["GIF_FILE", "MAX_IMAGE_BYTES", "cropped_png", "pillow_available", "run_gif"]

#: The board's GIF of a run's screenshots, in its run folder.
GIF_FILE = "board-run.gif"
#: A screenshot larger than this is shown as it is (never decoded).
MAX_IMAGE_BYTES = 20_000_000
#: Pixels of margin kept around what was cut out.
_MARGIN = 4
_CACHE: OrderedDict[tuple[str, int, int], bytes] = OrderedDict()
_CACHE_ENTRIES = 64


def pillow_available() -> bool:
    try:
        import PIL.Image  # noqa: F401
    except ImportError:
        return False
    return True


def _content_box(image: object) -> tuple[int, int, int, int] | None:
    """The box of what differs from the background (the bottom-right pixel's colour)."""
    from PIL import Image, ImageChops

    assert isinstance(image, Image.Image)
    rgb = image.convert("RGB")
    background = Image.new("RGB", rgb.size, rgb.getpixel((rgb.width - 1, rgb.height - 1)))  # type: ignore[arg-type, unused-ignore]
    box = ImageChops.difference(rgb, background).getbbox()
    if box is None:
        return None
    left, top, right, bottom = box
    return (
        max(0, left - _MARGIN),
        max(0, top - _MARGIN),
        min(rgb.width, right + _MARGIN),
        min(rgb.height, bottom + _MARGIN),
    )


def _cropped(data: bytes) -> object:
    from PIL import Image

    image: Image.Image = Image.open(io.BytesIO(data))
    image.load()
    box = _content_box(image)
    if box is not None and (box[2] - box[0]) * (box[3] - box[1]) < image.width * image.height:
        image = image.crop(box)
    return image


def cropped_png(folder: str | Path, relative: str) -> bytes | None:
    """The screenshot ``folder/relative`` cut to the app's windows, as PNG bytes (None: not a
    file the board serves, not an image pillow reads, or no pillow). Kept in a small cache by
    file, size and modification time."""
    fd = open_run_file(folder, relative)
    if fd is None:
        return None
    with os.fdopen(fd, "rb") as f:
        st = os.fstat(f.fileno())
        key = (f"{folder}/{relative}", st.st_size, st.st_mtime_ns)
        if key in _CACHE:
            _CACHE.move_to_end(key)
            return _CACHE[key]
        data = f.read(MAX_IMAGE_BYTES + 1)
    if len(data) > MAX_IMAGE_BYTES or not pillow_available():
        return None
    try:
        image = _cropped(data)
        out = io.BytesIO()
        image.save(out, format="PNG")  # type: ignore[attr-defined]
    except (OSError, ValueError, SyntaxError):  # not an image after all (PIL's SyntaxError)
        return None
    png = out.getvalue()
    _CACHE[key] = png
    while len(_CACHE) > _CACHE_ENTRIES:
        _CACHE.popitem(last=False)
    return png


def run_gif(folder: str | Path, shots: list[str], *, frame_ms: int = 800) -> str | None:
    """``board-run.gif`` in the run folder from its screenshots ``shots`` (relative PNG paths),
    in the order taken, each cut to the app's windows; returns its name, or None (no pillow, no
    screenshot that reads as an image). Written again only when a screenshot is newer."""
    if not shots or not pillow_available():
        return None
    from PIL import Image

    taken: list[tuple[int, bytes]] = []
    for name in shots:
        fd = open_run_file(folder, name)
        if fd is None:
            continue
        with os.fdopen(fd, "rb") as f:
            when = os.fstat(f.fileno()).st_mtime_ns
            data = f.read(MAX_IMAGE_BYTES + 1)
        if len(data) <= MAX_IMAGE_BYTES:
            taken.append((when, data))
    if not taken:
        return None
    newest = max(when for when, _ in taken)
    existing = Path(folder) / GIF_FILE
    try:
        if existing.stat().st_mtime_ns >= newest:
            return GIF_FILE
    except OSError:
        pass
    frames = []
    for _, data in sorted(taken, key=lambda t: t[0]):
        try:
            frames.append(_cropped(data).convert("RGB"))  # type: ignore[attr-defined]
        except (OSError, ValueError, SyntaxError):
            continue
    if not frames:
        return None
    width, height = max(f.width for f in frames), max(f.height for f in frames)
    padded = []
    for frame in frames:
        canvas = Image.new("RGB", (width, height), "white")
        canvas.paste(frame, (0, 0))
        padded.append(canvas.quantize(colors=256, method=Image.Quantize.MEDIANCUT))
    out = io.BytesIO()
    padded[0].save(
        out, format="GIF", save_all=True, append_images=padded[1:], duration=frame_ms, loop=0
    )
    write_run_file(folder, GIF_FILE, out.getvalue())
    return GIF_FILE


def gif_bytes(folder: str | Path) -> bytes | None:
    """The run's GIF as written by :func:`run_gif`, read under the run folder's rules."""
    return read_run_file(folder, GIF_FILE, max_bytes=200_000_000)
