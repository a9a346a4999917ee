/**
 * The Functions view's charts, drawn with uPlot (a maintained, dependency-free charting library,
 * ~50 kB minified): time on x, one line per series, redrawn in place when new buckets arrive.
 */
import uPlot from "uplot";
import { h } from "./dom.ts";

export interface ChartSeries {
  readonly label: string;
  readonly color: string;
  readonly values: ReadonlyArray<number | null>;
}

export interface Chart {
  readonly el: HTMLElement;
  update(at: readonly number[], series: readonly ChartSeries[]): void;
  dispose(): void;
}

const data = (at: readonly number[], series: readonly ChartSeries[]): uPlot.AlignedData => [
  at.map((t) => t / 1000),
  ...series.map((s) => s.values.map((v) => v)),
];

/** A line chart with a title; the series' labels and colours are fixed at creation. */
export function lineChart(
  title: string,
  testid: string,
  at: readonly number[],
  series: readonly ChartSeries[],
): Chart {
  const el = h("figure", { class: "chart", testid }, h("figcaption", {}, title));
  const plot = new uPlot(
    {
      width: 460,
      height: 180,
      scales: { x: { time: true } },
      axes: [{}, { size: 56 }],
      series: [{}, ...series.map((s) => ({ label: s.label, stroke: s.color, width: 2, spanGaps: false }))],
      legend: { show: true },
    },
    data(at, series),
    el,
  );
  return {
    el,
    update: (nextAt, next) => plot.setData(data(nextAt, next)),
    dispose: () => plot.destroy(),
  };
}
