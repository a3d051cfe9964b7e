/**
 * Charts as data: the `application/vnd.glassroom.chart+json` a matplotlib
 * figure carries in the python3 kernel, in E2B's chart shape (snake_case
 * keys, as E2B's JavaScript SDK gives them).
 */
export var ChartType;
(function (ChartType) {
    ChartType["LINE"] = "line";
    ChartType["SCATTER"] = "scatter";
    ChartType["BAR"] = "bar";
    ChartType["PIE"] = "pie";
    ChartType["BOX_AND_WHISKER"] = "box_and_whisker";
    ChartType["SUPERCHART"] = "superchart";
    ChartType["UNKNOWN"] = "unknown";
})(ChartType || (ChartType = {}));
export var ScaleType;
(function (ScaleType) {
    ScaleType["LINEAR"] = "linear";
    ScaleType["DATETIME"] = "datetime";
    ScaleType["CATEGORICAL"] = "categorical";
    ScaleType["LOG"] = "log";
    ScaleType["SYMLOG"] = "symlog";
    ScaleType["LOGIT"] = "logit";
    ScaleType["FUNCTION"] = "function";
    ScaleType["FUNCTIONLOG"] = "functionlog";
    ScaleType["ASINH"] = "asinh";
})(ScaleType || (ScaleType = {}));
const known = new Set(Object.values(ChartType));
/** A chart from its JSON (unknown types become `unknown`); undefined for anything that is not an object. */
export function deserializeChart(data) {
    if (!data || typeof data !== 'object' || Array.isArray(data))
        return undefined;
    const c = { ...data };
    if (!known.has(c.type))
        c.type = ChartType.UNKNOWN;
    if (!Array.isArray(c.elements))
        c.elements = [];
    if (c.title === undefined)
        c.title = null;
    if (c.type === ChartType.SUPERCHART) {
        c.elements = c.elements.map((e) => deserializeChart(e)).filter((e) => e !== undefined);
    }
    return c;
}
