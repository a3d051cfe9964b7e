/**
 * Charts as data: the `application/vnd.glassroom.chart+json` a matplotlib
 * figure carries in the python3 kernel, in E2B's chart shape (snake_case
 * keys, as E2B's JavaScript SDK gives them).
 */

export enum ChartType {
  LINE = 'line',
  SCATTER = 'scatter',
  BAR = 'bar',
  PIE = 'pie',
  BOX_AND_WHISKER = 'box_and_whisker',
  SUPERCHART = 'superchart',
  UNKNOWN = 'unknown',
}

export enum ScaleType {
  LINEAR = 'linear',
  DATETIME = 'datetime',
  CATEGORICAL = 'categorical',
  LOG = 'log',
  SYMLOG = 'symlog',
  LOGIT = 'logit',
  FUNCTION = 'function',
  FUNCTIONLOG = 'functionlog',
  ASINH = 'asinh',
}

/** What every chart has. `truncated` is true when glassroom cut something (points, elements). */
export interface Chart {
  type: ChartType
  title: string | null
  elements: any[]
  truncated?: boolean
}

export interface Chart2D extends Chart {
  x_label?: string | null
  y_label?: string | null
  x_unit?: string | null
  y_unit?: string | null
}

export interface PointData {
  label: string
  points: [number | string | null, number | string | null][]
}

export interface PointChart extends Chart2D {
  x_ticks: (number | string)[]
  x_scale: ScaleType
  x_tick_labels: string[]
  y_ticks: (number | string)[]
  y_scale: ScaleType
  y_tick_labels: string[]
  elements: PointData[]
}

export interface LineChart extends PointChart {
  type: ChartType.LINE
}

export interface ScatterChart extends PointChart {
  type: ChartType.SCATTER
}

export interface BarData {
  label: string
  value: string | number
  group: string
}

export interface BarChart extends Chart2D {
  type: ChartType.BAR
  elements: BarData[]
}

export interface PieData {
  label: string
  angle: number
  radius: number
}

export interface PieChart extends Chart {
  type: ChartType.PIE
  elements: PieData[]
}

export interface BoxAndWhiskerData {
  label: string
  min: number
  first_quartile: number
  median: number
  third_quartile: number
  max: number
  outliers: number[]
}

export interface BoxAndWhiskerChart extends Chart2D {
  type: ChartType.BOX_AND_WHISKER
  elements: BoxAndWhiskerData[]
}

export interface SuperChart extends Chart {
  type: ChartType.SUPERCHART
  elements: ChartTypes[]
}

export type ChartTypes = LineChart | ScatterChart | BarChart | PieChart | BoxAndWhiskerChart | SuperChart | Chart

const known = new Set<string>(Object.values(ChartType))

/** A chart from its JSON (unknown types become `unknown`); undefined for anything that is not an object. */
export function deserializeChart(data: unknown): ChartTypes | undefined {
  if (!data || typeof data !== 'object' || Array.isArray(data)) return undefined
  const c: any = { ...(data as Record<string, unknown>) }
  if (!known.has(c.type)) c.type = ChartType.UNKNOWN
  if (!Array.isArray(c.elements)) c.elements = []
  if (c.title === undefined) c.title = null
  if (c.type === ChartType.SUPERCHART) {
    c.elements = c.elements.map((e: unknown) => deserializeChart(e)).filter((e: unknown) => e !== undefined)
  }
  return c as ChartTypes
}
