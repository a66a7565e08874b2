"""pandas DataFrames and Series as a model reads them well: a compact text
table (head and tail rows, the shape, the dtypes) rather than a repr sized
by pandas' display options, and the whole frame as data only when it is
small. pandas is never imported here: a value is a frame only if pandas is
already loaded and made it."""

import json
import sys

# Rows shown: the first and last HEAD_TAIL of a longer frame; columns past
# MAX_COLS are elided in the middle, cells past MAX_COLWIDTH characters cut.
HEAD_TAIL = 5
MAX_ROWS = 2 * HEAD_TAIL
MAX_COLS = 20
MAX_COLWIDTH = 60
# The frame as data in the result's "table" only up to this many cells and
# bytes of JSON: past it the text is the answer, and the code saves the
# frame to a file if the whole is wanted.
TABLE_CELLS = 500
TABLE_BYTES = 32 << 10


def kind(value):
    """"DataFrame", "Series" or None."""
    pd = sys.modules.get("pandas")
    if pd is None:
        return None
    if isinstance(value, pd.DataFrame):
        return "DataFrame"
    if isinstance(value, pd.Series):
        return "Series"
    return None


def text(value):
    """The compact text of a DataFrame or Series."""
    k = kind(value)
    rows = len(value)
    if k == "DataFrame":
        cols = value.shape[1]
        head = "DataFrame: %d rows x %d columns" % (rows, cols)
        dtypes = ", ".join("%s %s" % (c, t) for c, t in list(value.dtypes.items())[:MAX_COLS])
        if cols > MAX_COLS:
            dtypes += ", ... (%d more)" % (cols - MAX_COLS)
        body = value.to_string(max_rows=MAX_ROWS, min_rows=MAX_ROWS, max_cols=MAX_COLS,
                               max_colwidth=MAX_COLWIDTH, show_dimensions=False)
        return "%s\ndtypes: %s\n%s" % (head, dtypes, body)
    name = "" if value.name is None else " %r" % (value.name,)
    head = "Series%s: %d rows, dtype %s" % (name, rows, value.dtype)
    body = value.to_string(max_rows=MAX_ROWS, min_rows=MAX_ROWS, length=False, dtype=False, name=False)
    return "%s\n%s" % (head, body)


def table(value):
    """The whole frame as {"columns", "index", "data"} (a Series as one
    column), or None when it is larger than TABLE_CELLS or TABLE_BYTES."""
    k = kind(value)
    cells = value.size if k == "Series" else value.shape[0] * max(value.shape[1], 1)
    if cells > TABLE_CELLS:
        return None
    try:
        frame = value.to_frame() if k == "Series" else value
        t = json.loads(frame.to_json(orient="split", date_format="iso", default_handler=str))
    except Exception:
        return None  # a frame pandas cannot write as JSON: the text says it
    if len(json.dumps(t)) > TABLE_BYTES:
        return None
    return t


def display(*objs):
    """Shows each object as a notebook would: a DataFrame or Series as its
    compact table, a matplotlib figure or an image as an image, anything
    else printed."""
    from codecell import _display
    from codecell._rpc import Image
    for obj in objs:
        if kind(obj) is not None:
            print(text(obj))
        elif isinstance(obj, (Image, bytes, bytearray, memoryview)):
            _display.display_image(obj)
        elif type(obj).__name__ == "Figure" and hasattr(obj, "savefig"):
            _display.show_figure(obj)
        else:
            print(obj)
