"""Charts as data: the classes E2B's code-interpreter SDK gives ``Result.chart``.

The python3 kernel of glassroom adds ``application/vnd.glassroom.chart+json``
to a matplotlib figure's MIME bundle (docs/toolbox.md, "Charts and tables as
data"), in E2B's shape; ``chart_from_json`` turns it into these classes.
Every field the JSON lacks is None (lists: empty), never a KeyError.
"""

import enum
from typing import Any, Dict, List, Optional, Tuple, Union


class ChartType(str, enum.Enum):
    """The kind of a chart."""

    LINE = "line"
    SCATTER = "scatter"
    BAR = "bar"
    PIE = "pie"
    BOX_AND_WHISKER = "box_and_whisker"
    SUPERCHART = "superchart"
    UNKNOWN = "unknown"


class ScaleType(str, enum.Enum):
    """The scale of an axis."""

    LINEAR = "linear"
    DATETIME = "datetime"
    CATEGORICAL = "categorical"
    LOG = "log"
    SYMLOG = "symlog"
    LOGIT = "logit"
    FUNCTION = "function"
    FUNCTIONLOG = "functionlog"
    ASINH = "asinh"
    UNKNOWN = "unknown"


def _scale(value: Any) -> ScaleType:
    try:
        return ScaleType(value)
    except ValueError:
        return ScaleType.UNKNOWN


def _list(value: Any) -> List[Any]:
    return list(value) if isinstance(value, (list, tuple)) else []


class Chart:
    """A chart read from a figure: ``type``, ``title``, ``elements``;
    ``to_dict()`` is the JSON it came from."""

    type: ChartType
    title: Optional[str]
    elements: List[Any]

    def __init__(self, **kwargs: Any) -> None:
        self._raw_data = kwargs
        try:
            self.type = ChartType(kwargs.get("type") or "unknown")
        except ValueError:
            self.type = ChartType.UNKNOWN
        self.title = kwargs.get("title")
        self.elements = _list(kwargs.get("elements"))

    def to_dict(self) -> Dict[str, Any]:
        return self._raw_data

    def __repr__(self) -> str:
        return f"{type(self).__name__}(title={self.title!r}, elements={len(self.elements)})"


class Chart2D(Chart):
    """A chart with two axes: their labels and units."""

    x_label: Optional[str]
    y_label: Optional[str]
    x_unit: Optional[str]
    y_unit: Optional[str]

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.x_label = kwargs.get("x_label")
        self.y_label = kwargs.get("y_label")
        self.x_unit = kwargs.get("x_unit")
        self.y_unit = kwargs.get("y_unit")


class PointData:
    """One series of a line or scatter chart: ``label`` and ``points`` ((x, y) tuples)."""

    label: str
    points: List[Tuple[Union[str, float], Union[str, float]]]

    def __init__(self, **kwargs: Any) -> None:
        self.label = kwargs.get("label")  # type: ignore[assignment]
        self.points = [tuple(p) for p in _list(kwargs.get("points")) if isinstance(p, (list, tuple)) and len(p) == 2]  # type: ignore[misc]


class PointChart(Chart2D):
    """A line or scatter chart: ticks and scales of both axes, series of points."""

    x_ticks: List[Union[str, float]]
    x_tick_labels: List[str]
    x_scale: ScaleType
    y_ticks: List[Union[str, float]]
    y_tick_labels: List[str]
    y_scale: ScaleType
    elements: List[PointData]

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.x_ticks = _list(kwargs.get("x_ticks"))
        self.x_tick_labels = _list(kwargs.get("x_tick_labels"))
        self.x_scale = _scale(kwargs.get("x_scale"))
        self.y_ticks = _list(kwargs.get("y_ticks"))
        self.y_tick_labels = _list(kwargs.get("y_tick_labels"))
        self.y_scale = _scale(kwargs.get("y_scale"))
        self.elements = [PointData(**e) for e in self.elements if isinstance(e, dict)]


class LineChart(PointChart):
    type = ChartType.LINE


class ScatterChart(PointChart):
    type = ChartType.SCATTER


class BarData:
    """One bar: its category (``label``), series (``group``) and height (``value``)."""

    label: str
    group: str
    value: str

    def __init__(self, **kwargs: Any) -> None:
        self.label = kwargs.get("label")  # type: ignore[assignment]
        self.group = kwargs.get("group")  # type: ignore[assignment]
        self.value = kwargs.get("value")  # type: ignore[assignment]


class BarChart(Chart2D):
    type = ChartType.BAR
    elements: List[BarData]

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.elements = [BarData(**e) for e in self.elements if isinstance(e, dict)]


class PieData:
    """One wedge: ``label``, ``angle`` (degrees) and ``radius``."""

    label: str
    angle: float
    radius: float

    def __init__(self, **kwargs: Any) -> None:
        self.label = kwargs.get("label")  # type: ignore[assignment]
        self.angle = kwargs.get("angle")  # type: ignore[assignment]
        self.radius = kwargs.get("radius")  # type: ignore[assignment]


class PieChart(Chart):
    type = ChartType.PIE
    elements: List[PieData]

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.elements = [PieData(**e) for e in self.elements if isinstance(e, dict)]


class BoxAndWhiskerData:
    """One box: ``label``, ``min``, ``first_quartile``, ``median``, ``third_quartile``, ``max``, ``outliers``."""

    label: str
    min: float
    first_quartile: float
    median: float
    third_quartile: float
    max: float
    outliers: List[float]

    def __init__(self, **kwargs: Any) -> None:
        self.label = kwargs.get("label")  # type: ignore[assignment]
        for k in ("min", "first_quartile", "median", "third_quartile", "max"):
            setattr(self, k, kwargs.get(k))
        self.outliers = _list(kwargs.get("outliers"))


class BoxAndWhiskerChart(Chart2D):
    type = ChartType.BOX_AND_WHISKER
    elements: List[BoxAndWhiskerData]

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.elements = [BoxAndWhiskerData(**e) for e in self.elements if isinstance(e, dict)]


class SuperChart(Chart):
    """A figure of several axes: ``elements`` are its charts."""

    type = ChartType.SUPERCHART
    elements: List[Union[LineChart, ScatterChart, BarChart, PieChart, BoxAndWhiskerChart]]

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.elements = [c for c in (chart_from_json(e) for e in self.elements) if c is not None]  # type: ignore[misc]


ChartTypes = Union[LineChart, ScatterChart, BarChart, PieChart, BoxAndWhiskerChart, SuperChart]

_CLASSES = {
    ChartType.LINE.value: LineChart,
    ChartType.SCATTER.value: ScatterChart,
    ChartType.BAR.value: BarChart,
    ChartType.PIE.value: PieChart,
    ChartType.BOX_AND_WHISKER.value: BoxAndWhiskerChart,
    ChartType.SUPERCHART.value: SuperChart,
}


def chart_from_json(data: Any) -> Optional[Chart]:
    """The chart class for a chart JSON object (None for anything else)."""
    if not isinstance(data, dict) or not data:
        return None
    kw = {str(k): v for k, v in data.items()}
    return _CLASSES.get(str(kw.get("type")), Chart)(**kw)


__all__ = ["ChartType", "ScaleType", "Chart", "Chart2D", "PointData", "PointChart", "LineChart", "ScatterChart", "BarData",
           "BarChart", "PieData", "PieChart", "BoxAndWhiskerData", "BoxAndWhiskerChart", "SuperChart", "ChartTypes",
           "chart_from_json"]
