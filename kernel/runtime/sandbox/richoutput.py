# glassroom's structured rich output for the python3 kernel: beside the
# usual MIME types, a matplotlib Figure is described as
# application/vnd.glassroom.chart+json and a pandas DataFrame as
# application/vnd.glassroom.dataframe+json (shapes: section 3 of the issue
# 24 contracts; user notes in docs).
#
# The launcher runs this file once the kernel is up and calls
# register(shell). Start-up cost is a few definitions: matplotlib and
# pandas are never imported here; the formatters are registered by type
# name and run only for objects of those types (which means the module is
# already loaded).
#
# Rules:
#  - Never a failed cell: every extraction is inside try/except; any
#    exception gives no structured MIME type and nothing else (IPython
#    would otherwise print the formatter's traceback into the cell).
#  - Bounded: MAX_POINTS points per chart (a longer series is sampled at
#    evenly spaced indices, first and last kept), MAX_ELEMENTS elements,
#    MAX_TICKS ticks per axis, MAX_AXES charts in a superchart, MAX_TEXT
#    characters per string, MAX_BYTES of JSON; a frame's first FRAME_ROWS
#    rows and FRAME_COLUMNS columns. What is cut says "truncated": true.
#  - The PNG (or HTML) comes first: a bundle whose other entries already
#    reach BUNDLE_BYTES gets no structured JSON, and one cell's structured
#    JSON stops at CELL_BYTES (the gateway caps a message at 8 MiB and an
#    execution's rich output at --max-rich-bytes, 10 MiB by default).
#  - Public matplotlib API only (3.6 to 3.10), except the figure's
#    suptitle before 3.8, which has no getter.
#
# No multi-line strings: the launcher strips comment lines before passing
# this file on a command line.
import json
import math
import re

CHART_MIME = "application/vnd.glassroom.chart+json"
FRAME_MIME = "application/vnd.glassroom.dataframe+json"
MAX_POINTS = 10000
MAX_ELEMENTS = 1000
MAX_TICKS = 100
MAX_AXES = 16
MAX_TEXT = 1000
MAX_BYTES = 1 << 20
FRAME_ROWS = 1000
FRAME_COLUMNS = 100
BUNDLE_BYTES = 4 << 20
CELL_BYTES = 2 << 20
MATHDEFAULT = re.compile(r"\\mathdefault\{(.*)\}")
UNIT = re.compile(r"^(.*\S)\s+(?:\(([^()]+)\)|\[([^\[\]]+)\])$")


class Cut:
    # Whether anything was left out while building one result.

    def __init__(self):
        self.cut = False


def text(s, cut=None):
    if s is None:
        return None
    s = str(s)
    if len(s) > MAX_TEXT:
        if cut is not None:
            cut.cut = True
        s = s[:MAX_TEXT]
    return s


def plain(s):
    # A tick label in mathtext ("$\\mathdefault{10^{2}}$") as plain text
    # ("10^2").
    if len(s) >= 2 and s[0] == "$" and s[-1] == "$":
        s = MATHDEFAULT.sub(r"\1", s[1:-1]).replace("{", "").replace("}", "")
    return s


def opt_text(s, cut=None):
    s = text(s, cut)
    return s if s else None


def split_unit(label):
    # "Price ($)" -> ("Price ($)", "$"); "Length [m]" -> ("Length [m]",
    # "m"): a trailing group in parentheses or brackets after a space is
    # the unit; the label stays as drawn (E2B's shape).
    if not label:
        return None, None
    m = UNIT.match(label.strip())
    if not m:
        return label, None
    return label, (m.group(2) or m.group(3)).strip()


def number(v):
    try:
        f = float(v)
    except (TypeError, ValueError):
        return None
    return f if math.isfinite(f) else None


def series_label(artist):
    label = artist.get_label()
    if not label or str(label).startswith("_"):
        return ""
    return text(label)


class Axis:
    # How one axis of an Axes turns data coordinates into JSON values.

    def __init__(self, ax, which):
        import matplotlib.dates as mdates
        import matplotlib.category as mcat
        self.axis = ax.xaxis if which == "x" else ax.yaxis
        self.which = which
        self.formatter = self.axis.get_major_formatter()
        locator = self.axis.get_major_locator()
        self.pandas_freq = None
        kind = type(self.formatter).__name__
        if isinstance(self.formatter, (mdates.DateFormatter, mdates.AutoDateFormatter, mdates.ConciseDateFormatter)) or isinstance(locator, mdates.DateLocator):
            self.scale = "datetime"
        elif kind == "TimeSeries_DateFormatter" and getattr(self.formatter, "freq", None) is not None:
            self.scale = "datetime"  # pandas' own plot of a time series: x is a period ordinal
            self.pandas_freq = self.formatter.freq
        elif isinstance(self.axis.get_units(), mcat.UnitData):
            self.scale = "categorical"
        else:
            scale = self.axis.get_scale()
            self.scale = scale if scale in ("linear", "log", "symlog", "logit") else "linear"

    def values(self, xs):
        # JSON values of data coordinates xs (a sequence of floats).
        if self.scale == "datetime":
            return [self.iso(x) for x in xs]
        if self.scale == "categorical":
            names = self.formatter.format_ticks(list(xs))
            out = []
            for x, name in zip(xs, names):
                out.append(text(name) if name != "" else number(x))
            return out
        return [number(x) for x in xs]

    def iso(self, x):
        if x is None or not math.isfinite(float(x)):
            return None
        if self.pandas_freq is not None:
            import pandas
            return pandas.Period(ordinal=int(round(float(x))), freq=self.pandas_freq).to_timestamp().isoformat()
        import matplotlib.dates as mdates
        try:
            return mdates.num2date(float(x)).replace(tzinfo=None).isoformat()
        except (ValueError, OverflowError):
            return None

    def ticks(self, cut):
        locs = [float(v) for v in self.axis.get_majorticklocs()]
        lo, hi = sorted(float(v) for v in self.axis.get_view_interval())
        eps = (hi - lo) * 1e-9
        locs = [v for v in locs if math.isfinite(v) and lo - eps <= v <= hi + eps]
        if len(locs) > MAX_TICKS:
            locs = locs[:MAX_TICKS]
            cut.cut = True
        labels = [plain(text(s, cut)) for s in self.formatter.format_ticks(locs)] if locs else []
        return [float("%.12g" % v) for v in locs], labels

    def label_at(self, pos, locs, labels):
        # The label of the tick nearest pos when it is within half the
        # space between ticks; else pos as a value of this axis.
        if locs:
            i = min(range(len(locs)), key=lambda k: abs(locs[k] - pos))
            gap = min((abs(locs[k + 1] - locs[k]) for k in range(len(locs) - 1)), default=1.0) or 1.0
            if abs(locs[i] - pos) <= gap / 2 and labels[i]:
                return labels[i]
        v = self.values([pos])[0]
        return "" if v is None else str(v)


def title_of(ax):
    for loc in ("center", "left", "right"):
        t = ax.get_title(loc)
        if t:
            return text(t)
    return None


def data_series(ax):
    # The Line2D and PathCollection artists that plot data: in data
    # coordinates, visible, not an error bar's caps.
    from matplotlib.collections import PathCollection
    from matplotlib.container import ErrorbarContainer
    skip = set()
    for c in ax.containers:
        if isinstance(c, ErrorbarContainer):
            for part in c.lines[1:]:
                for a in (part or ()):
                    skip.add(id(a))
    lines = [ln for ln in ax.get_lines() if ln.get_visible() and ln.get_transform() is ax.transData and id(ln) not in skip]
    colls = []
    for c in ax.collections:
        if isinstance(c, PathCollection) and c.get_visible():
            get = getattr(c, "get_offset_transform", None)
            if get is not None and get() is not ax.transData:
                continue
            colls.append(c)
    return lines, colls


def is_marker_only(line):
    return line.get_linestyle() in ("None", "none", "", " ") and line.get_marker() not in (None, "None", "none", "", " ")


def line_arrays(lines, colls):
    import numpy as np
    out = []
    for ln in lines:
        xy = np.asarray(ln.get_xydata(), dtype=float)
        out.append((series_label(ln), xy.reshape(-1, 2) if xy.size else np.zeros((0, 2)), is_marker_only(ln)))
    for c in colls:
        xy = np.ma.filled(np.ma.asarray(c.get_offsets(), dtype=float), np.nan)
        out.append((series_label(c), xy.reshape(-1, 2) if xy.size else np.zeros((0, 2)), True))
    return out


def shares(lengths, total):
    # Water-filling: each series gets at most its length, the budget split
    # evenly among those that want more.
    out = [0] * len(lengths)
    left = total
    order = sorted(range(len(lengths)), key=lambda i: lengths[i])
    for k, i in enumerate(order):
        fair = left // (len(order) - k)
        out[i] = min(lengths[i], fair)
        left -= out[i]
    return out


def sample(xy, m):
    import numpy as np
    n = len(xy)
    if n <= m:
        return xy
    if m <= 0:
        return xy[:0]
    idx = np.unique(np.linspace(0, n - 1, m).round().astype(int))
    return xy[idx]


def box_stats(ax):
    # Box-and-whisker boxes drawn by Axes.boxplot/bxp, found from their
    # artists: a closed box outline (a Line2D, or a PathPatch with
    # patch_artist=True) with a median line across it, whiskers from its
    # ends, fliers (marker-only points) on its centre line. Returns
    # (orientation, boxes) or None.
    import numpy as np
    from matplotlib.patches import PathPatch
    outlines = []
    for ln in ax.get_lines():
        xy = np.asarray(ln.get_xydata(), dtype=float)
        if len(xy) >= 5 and np.allclose(xy[0], xy[-1]):
            outlines.append(xy)
    for p in ax.patches:
        if isinstance(p, PathPatch):
            xy = np.asarray(p.get_path().vertices, dtype=float)
            if len(xy) >= 5 and np.allclose(xy[0], xy[-1]):
                outlines.append(xy)
    if not outlines:
        return None
    segs, marks = [], []
    for ln in ax.get_lines():
        xy = np.asarray(ln.get_xydata(), dtype=float)
        if is_marker_only(ln):
            marks.append(xy)
        elif len(xy) == 2:
            segs.append(xy)
    for orient in ("vertical", "horizontal"):
        pos, val = (0, 1) if orient == "vertical" else (1, 0)
        boxes = []
        for xy in outlines:
            p0, p1 = xy[:, pos].min(), xy[:, pos].max()
            q1, q3 = xy[:, val].min(), xy[:, val].max()
            centre = (p0 + p1) / 2
            med = None
            for s in segs:
                if np.isclose(s[0, val], s[1, val]) and min(s[:, pos]) >= p0 - 1e-9 and max(s[:, pos]) <= p1 + 1e-9 and q1 - 1e-9 <= s[0, val] <= q3 + 1e-9 and s[0, pos] != s[1, pos]:
                    med = s[0, val]
                    break
            if med is None:
                continue
            lo, hi = q1, q3
            for s in segs:
                if np.allclose(s[:, pos], centre) and not np.isclose(s[0, val], s[1, val]):
                    ends = sorted(s[:, val])
                    if np.isclose(ends[1], q1):
                        lo = min(lo, ends[0])
                    elif np.isclose(ends[0], q3):
                        hi = max(hi, ends[1])
            outliers = []
            for m in marks:
                for p in m:
                    if np.isclose(p[pos], centre) and math.isfinite(p[val]):
                        outliers.append(float(p[val]))
            boxes.append((centre, {"min": float(lo), "first_quartile": float(q1), "median": float(med),
                                   "third_quartile": float(q3), "max": float(hi), "outliers": outliers}))
        if boxes:
            return orient, sorted(boxes, key=lambda b: b[0])
    return None


def axes_chart(ax, budget, cut):
    from matplotlib.container import BarContainer
    from matplotlib.patches import Wedge
    chart = {"type": "unknown", "title": title_of(ax), "elements": []}
    wedges = [p for p in ax.patches if isinstance(p, Wedge) and p.get_visible()]
    if wedges:
        chart["type"] = "pie"
        if len(wedges) > MAX_ELEMENTS:
            wedges = wedges[:MAX_ELEMENTS]
            cut.cut = True
        chart["elements"] = [{"label": series_label(w), "angle": round(float(w.theta2 - w.theta1), 4), "radius": float(w.r)} for w in wedges]
        return chart
    x, y = Axis(ax, "x"), Axis(ax, "y")
    xlabel, xunit = split_unit(text(ax.get_xlabel(), cut))
    ylabel, yunit = split_unit(text(ax.get_ylabel(), cut))
    xt, xl = x.ticks(cut)
    yt, yl = y.ticks(cut)
    chart.update({"x_label": xlabel or None, "y_label": ylabel or None, "x_unit": xunit, "y_unit": yunit,
                  "x_scale": x.scale, "y_scale": y.scale,
                  "x_ticks": x.values(xt) if x.scale == "datetime" else [number(v) for v in xt],
                  "y_ticks": y.values(yt) if y.scale == "datetime" else [number(v) for v in yt],
                  "x_tick_labels": xl, "y_tick_labels": yl})
    boxes = box_stats(ax)
    if boxes is not None:
        orient, found = boxes
        at, locs, labels = (x, xt, xl) if orient == "vertical" else (y, yt, yl)
        chart["type"] = "box_and_whisker"
        if len(found) > MAX_ELEMENTS:
            found = found[:MAX_ELEMENTS]
            cut.cut = True
        for centre, st in found:
            if len(st["outliers"]) > MAX_POINTS // max(len(found), 1):
                st["outliers"] = st["outliers"][:MAX_POINTS // max(len(found), 1)]
                cut.cut = True
            el = {"label": at.label_at(centre, locs, labels)}
            el.update(st)
            chart["elements"].append(el)
        return chart
    bars = [c for c in ax.containers if isinstance(c, BarContainer)]
    if bars:
        chart["type"] = "bar"
        els = []
        for c in bars:
            group = series_label(c)
            horizontal = getattr(c, "orientation", None) == "horizontal"
            for r in c.patches:
                if len(els) >= MAX_ELEMENTS:
                    cut.cut = True
                    break
                if horizontal:
                    pos, value = r.get_y() + r.get_height() / 2, r.get_width()
                    label = y.label_at(pos, yt, yl)
                else:
                    pos, value = r.get_x() + r.get_width() / 2, r.get_height()
                    label = x.label_at(pos, xt, xl)
                els.append({"label": label, "group": group, "value": number(value)})
        chart["elements"] = els
        return chart
    lines, colls = data_series(ax)
    series = line_arrays(lines, colls)
    if not series:
        return chart
    chart["type"] = "scatter" if all(s[2] for s in series) else "line"
    budget.append((chart, x, y, series))
    return chart


def fill_points(budget, total, cut):
    # Shares the point budget among every series of the figure and writes
    # their elements.
    all_series = [(chart, x, y, s) for chart, x, y, series in budget for s in series]
    if len(all_series) > MAX_ELEMENTS:
        all_series = all_series[:MAX_ELEMENTS]
        cut.cut = True
    keep = shares([len(s[3][1]) for s in all_series], total)
    for (chart, x, y, (label, xy, _)), m in zip(all_series, keep):
        if m < len(xy):
            cut.cut = True
        xy = sample(xy, m)
        xs, ys = x.values(xy[:, 0].tolist()), y.values(xy[:, 1].tolist())
        chart["elements"].append({"label": label, "points": [[a, b] for a, b in zip(xs, ys)]})


def figure_title(fig):
    get = getattr(fig, "get_suptitle", None)
    if get is not None:
        return opt_text(get())
    t = getattr(fig, "_suptitle", None)  # matplotlib < 3.8
    return opt_text(t.get_text()) if t is not None else None


def chart_of(fig, points=MAX_POINTS):
    cut = Cut()
    axes = [ax for ax in fig.get_axes() if ax.get_visible() and ax.get_label() != "<colorbar>"]
    if len(axes) > MAX_AXES:
        axes = axes[:MAX_AXES]
        cut.cut = True
    budget = []
    charts = [axes_chart(ax, budget, cut) for ax in axes]
    fill_points(budget, points, cut)
    if len(charts) == 1:
        chart = charts[0]
        if chart["title"] is None:
            chart["title"] = figure_title(fig)
    elif not charts:
        chart = {"type": "unknown", "title": figure_title(fig), "elements": []}
    else:
        chart = {"type": "superchart", "title": figure_title(fig), "elements": charts}
    if cut.cut:
        chart["truncated"] = True
    return chart


def dumps(obj):
    return json.dumps(obj, allow_nan=False, separators=(",", ":"), ensure_ascii=False)


def chart_json(fig):
    points = MAX_POINTS
    while points >= 16:
        chart = chart_of(fig, points)
        n = len(dumps(chart).encode())
        if n <= MAX_BYTES:
            return chart, n
        chart = None
        points //= 4
    return None, 0


def json_value(v, cut):
    if v is None or isinstance(v, bool):
        return v
    if isinstance(v, int):
        return v
    if isinstance(v, float):
        return v if math.isfinite(v) else None
    if isinstance(v, str):
        return text(v, cut)
    import pandas
    if v is pandas.NaT or v is pandas.NA:
        return None
    if isinstance(v, (tuple, list)) and len(v) <= 16:
        return [json_value(x, cut) for x in v]
    iso = getattr(v, "isoformat", None)
    if iso is not None and not isinstance(v, pandas.Timedelta):
        try:
            return iso()
        except (TypeError, ValueError):
            pass
    item = getattr(v, "item", None)
    if item is not None and getattr(v, "shape", None) == ():
        return json_value(item(), cut)
    try:
        if isinstance(v, (complex,)) or not pandas.isna(v):
            return text(v, cut)
    except (TypeError, ValueError):
        return text(v, cut)
    return None


def frame_of(df, rows):
    cut = Cut()
    total_rows, total_cols = df.shape
    sub = df.iloc[:rows, :FRAME_COLUMNS]
    columns, data, dtypes, seen = [], {}, {}, set()
    for i in range(sub.shape[1]):
        name = text(sub.columns[i], cut)
        base, k = name, 0
        while name in seen:
            k += 1
            name = "%s.%d" % (base, k)
        seen.add(name)
        columns.append(name)
        col = sub.iloc[:, i]
        data[name] = [json_value(v, cut) for v in col.tolist()]
        dtypes[name] = str(col.dtype)
    index = sub.index
    names = [n for n in index.names if n is not None]
    notes = []
    if total_rows > len(sub):
        notes.append("first %d of %d rows" % (len(sub), total_rows))
    if total_cols > sub.shape[1]:
        notes.append("first %d of %d columns" % (sub.shape[1], total_cols))
    frame = {"columns": columns,
             "index": {"name": text(index.name if index.nlevels == 1 else ", ".join(map(str, index.names)), cut) if names else None,
                       "values": [json_value(v, cut) for v in index.tolist()]},
             "data": data, "dtypes": dtypes, "total_rows": total_rows, "total_columns": total_cols,
             "truncated": bool(notes) or cut.cut}
    if notes or cut.cut:
        frame["note"] = "; ".join(notes) if notes else "long values cut at %d characters" % MAX_TEXT
    return frame


def frame_json(df):
    rows = FRAME_ROWS
    while rows >= 1:
        frame = frame_of(df, rows)
        n = len(dumps(frame).encode())
        if n <= MAX_BYTES:
            return frame, n
        rows //= 2
    return None, 0


class Ledger:
    # What the cell that runs has spent on structured JSON, and each
    # result's size (by id) until the bundle it is in is checked.

    def __init__(self):
        self.spent = 0
        self.sizes = {}

    def reset(self, *_):
        self.spent = 0
        self.sizes = {}

    def keep(self, obj, n):
        if len(self.sizes) > 64:
            self.sizes = {}
        self.sizes[id(obj)] = n
        return obj


def guarded(extract, ledger):
    def printer(obj):
        try:
            result, n = extract(obj)
        except Exception:
            return None
        if result is None:
            return None
        return ledger.keep(result, n)
    return printer


def entry_size(v):
    if isinstance(v, (str, bytes)):
        return len(v)
    try:
        return len(json.dumps(v))
    except Exception:
        return 0


def guard_bundles(display_formatter, ledger):
    # Wraps DisplayFormatter.format: the structured JSON leaves a bundle
    # whose other entries are large, and once the cell has spent CELL_BYTES.
    inner = display_formatter.format

    def format(obj, *args, **kwargs):
        data, md = inner(obj, *args, **kwargs)
        try:
            ours = [k for k in (CHART_MIME, FRAME_MIME) if k in data]
            if ours:
                others = sum(entry_size(v) for k, v in data.items() if k not in ours)
                for k in ours:
                    n = ledger.sizes.pop(id(data[k]), None)
                    if n is None:
                        n = entry_size(data[k])
                    if others + n > BUNDLE_BYTES or ledger.spent + n > CELL_BYTES:
                        del data[k]
                        if isinstance(md, dict):
                            md.pop(k, None)
                    else:
                        ledger.spent += n
        except Exception:
            for k in (CHART_MIME, FRAME_MIME):
                data.pop(k, None)
        return data, md

    display_formatter.format = format


def register(shell):
    from IPython.core.formatters import BaseFormatter
    from traitlets import ObjectName, Unicode

    class ChartFormatter(BaseFormatter):
        format_type = Unicode(CHART_MIME)
        print_method = ObjectName("_repr_glassroom_chart_")
        _return_type = (dict,)

        def pop(self, typ, *default):
            # IPython's inline backend, when it starts, pops the Figure
            # printer of every formatter (it owns the image ones): this
            # one stays.
            if isinstance(typ, str):
                key = tuple(typ.rsplit(".", 1))
            else:
                key = (getattr(typ, "__module__", None), getattr(typ, "__name__", None))
            if key == ("matplotlib.figure", "Figure"):
                return default[0] if default else None
            return BaseFormatter.pop(self, typ, *default)

    class FrameFormatter(BaseFormatter):
        format_type = Unicode(FRAME_MIME)
        print_method = ObjectName("_repr_glassroom_dataframe_")
        _return_type = (dict,)

    ledger = Ledger()
    df = shell.display_formatter
    chart = ChartFormatter(parent=df)
    chart.for_type_by_name("matplotlib.figure", "Figure", guarded(chart_json, ledger))
    frame = FrameFormatter(parent=df)
    frame.for_type_by_name("pandas.core.frame", "DataFrame", guarded(frame_json, ledger))
    df.formatters[CHART_MIME] = chart
    df.formatters[FRAME_MIME] = frame
    guard_bundles(df, ledger)
    shell.events.register("pre_execute", ledger.reset)
    try:
        register_pil(shell)
    except Exception:
        pass


# Pillow images, as E2B's kernels show them: Image.show() displays the
# image in the cell (there is no image viewer in a sandbox), and
# Image.save() called by the cell's code (not by a library: matplotlib
# saves its PNGs through Pillow) displays what it saved too (at most
# PIL_SAVES_SHOWN per cell, so a loop that saves many files does not flood
# the output). Patched when
# the code first imports PIL.Image (an import hook: nothing is imported at
# start-up); any failure leaves Pillow as it was.
PIL_SAVES_SHOWN = 10


class PILHook:
    def __init__(self, shell):
        self.saves = 0
        shell.events.register("pre_execute", self.reset)

    def reset(self):
        self.saves = 0

    def find_spec(self, name, path=None, target=None):
        import sys
        if name != "PIL.Image":
            return None
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(name, path, target)
            if spec is not None and spec.loader is not None and hasattr(spec.loader, "exec_module"):
                spec.loader = PILLoader(spec.loader, self)
                return spec
        return None

    def patch(self, module):
        cls = getattr(module, "Image", None)
        if cls is None or getattr(cls, "_glassroom_shows", False):
            return
        save = cls.save
        hook = self

        def show(self, *args, **kwargs):
            from IPython.display import display
            display(self)

        def saved(self, *args, **kwargs):
            import sys
            result = save(self, *args, **kwargs)
            # Only the cell's own saves: libraries save through Pillow too
            # (matplotlib writes every PNG it renders with it).
            if hook.saves < PIL_SAVES_SHOWN and sys._getframe(1).f_globals.get("__name__") == "__main__":
                hook.saves += 1
                try:
                    from IPython.display import display
                    display(self)
                except Exception:
                    pass
            return result

        show.__doc__ = cls.show.__doc__
        saved.__doc__ = save.__doc__
        cls.show = show
        cls.save = saved
        cls._glassroom_shows = True


class PILLoader:
    def __init__(self, loader, hook):
        self.loader = loader
        self.hook = hook

    def create_module(self, spec):
        return self.loader.create_module(spec)

    def exec_module(self, module):
        self.loader.exec_module(module)
        try:
            self.hook.patch(module)
        except Exception:
            pass

    def __getattr__(self, name):
        return getattr(self.loader, name)


def register_pil(shell):
    import sys
    hook = PILHook(shell)
    if "PIL.Image" in sys.modules:
        hook.patch(sys.modules["PIL.Image"])
    else:
        sys.meta_path.insert(0, hook)
