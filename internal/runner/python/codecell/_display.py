"""Images an execution shows: display_image(...) calls, matplotlib figures
left open, and an Image returned as the result. They go back to the host in
the result frame and reach the model as MCP image content."""

import base64
import io
import os
import sys

from codecell._rpc import Image

# Bounds on what one execution shows, so that the result frame stays well
# under the channel's frame limit: the rest are dropped with a note.
MAX_IMAGES = 8
MAX_BYTES = 4 << 20

_images = []
_dropped = []


def reset():
    del _images[:]
    del _dropped[:]


def _sniff(data):
    if data.startswith(b"\x89PNG\r\n\x1a\n"):
        return "image/png"
    if data.startswith(b"\xff\xd8\xff"):
        return "image/jpeg"
    if data[:6] in (b"GIF87a", b"GIF89a"):
        return "image/gif"
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return "image/webp"
    head = data[:256].lstrip()
    if head.startswith(b"<svg") or (head.startswith(b"<?xml") and b"<svg" in data[:1024]):
        return "image/svg+xml"
    return None


def display_image(image, mime_type=None):
    """Shows an image to the model: an Image (as tools return), bytes, or
    the path of an image file. The type is sniffed from the data when not
    given (PNG, JPEG, GIF, WebP, SVG)."""
    if isinstance(image, Image):
        data, mime_type = image.data, mime_type or image.mime_type
    elif isinstance(image, (bytes, bytearray, memoryview)):
        data = bytes(image)
    elif isinstance(image, (str, os.PathLike)):
        with open(image, "rb") as f:
            data = f.read(MAX_BYTES + 1)
    else:
        raise TypeError("display_image takes an Image, bytes or a file path, not %s" % type(image).__name__)
    mime_type = mime_type or _sniff(data)
    if not mime_type or not mime_type.startswith("image/"):
        raise ValueError("display_image: the data is not an image codecell recognizes (PNG, JPEG, GIF, WebP, SVG); pass mime_type")
    _add(data, mime_type)


def _add(data, mime_type):
    used = sum(len(d) for d, _ in _images)
    if len(_images) >= MAX_IMAGES or used + len(data) > MAX_BYTES:
        _dropped.append("%s of %d bytes" % (mime_type, len(data)))
        return
    _images.append((data, mime_type))


def show_figure(fig):
    """Shows one matplotlib figure now, as a PNG."""
    buf = io.BytesIO()
    fig.savefig(buf, format="png")
    _add(buf.getvalue(), "image/png")


def _figures():
    """Saves the matplotlib figures left open as PNGs, then closes them."""
    plt = sys.modules.get("matplotlib.pyplot")
    if plt is None:
        return
    try:
        for num in plt.get_fignums():
            buf = io.BytesIO()
            plt.figure(num).savefig(buf, format="png")
            _add(buf.getvalue(), "image/png")
        plt.close("all")
    except Exception as e:  # a broken figure must not lose the result
        _dropped.append("figures (%s: %s)" % (type(e).__name__, e))


def collect(out, result_value=None, has_result=False):
    """Adds the execution's images to the result frame out. A result that is
    an Image is shown, and stays the result as its repr."""
    if has_result and isinstance(result_value, Image):
        _add(result_value.data, result_value.mime_type)
    _figures()
    if _images:
        out["images"] = [{"mime_type": m, "data": base64.b64encode(d).decode("ascii")} for d, m in _images]
    if _dropped:
        out["images_dropped"] = list(_dropped)
    reset()
