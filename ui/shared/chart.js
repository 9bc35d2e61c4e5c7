// @ts-check
/**
 * Small horizontal stacked-bar charts as inline SVG, drawn here (no chart library). Each chart
 * is an image with a text alternative; the numbers are in the tables beside it too.
 */

const svgNs = "http://www.w3.org/2000/svg";

/**
 * @param {string} tag
 * @param {Record<string, string | number>} [attributes]
 * @param {string} [text]
 */
function svg(tag, attributes = {}, text) {
  const el = document.createElementNS(svgNs, tag);
  for (const [key, value] of Object.entries(attributes)) el.setAttribute(key, String(value));
  if (text !== undefined) el.textContent = text;
  return el;
}

/** @typedef {{ label: string, value: number, color: string }} Segment */
/** @typedef {{ label: string, segments: Segment[] }} Bar */

/**
 * One row per bar, each bar split into its segments in proportion to the largest total, with
 * a legend of the segment labels underneath.
 * @param {{ title: string, bars: Bar[], width?: number }} options
 * @returns {SVGSVGElement}
 */
export function stackedBars({ title, bars, width = 640 }) {
  const labelWidth = Math.min(220, Math.max(80, ...bars.map((b) => b.label.length * 7 + 12)));
  const barHeight = 18;
  const gap = 8;
  const plotWidth = width - labelWidth - 60;
  const max = Math.max(1, ...bars.map((b) => b.segments.reduce((sum, s) => sum + s.value, 0)));
  // The legend flows left to right and wraps: each entry as wide as its text.
  const legendTop = bars.length * (barHeight + gap) + 8;
  let legendX = labelWidth;
  let legendY = legendTop;
  const legend = [...new Map(bars.flatMap((b) => b.segments).map((s) => [s.label, s.color])).entries()].map(([label, color]) => {
    const entryWidth = 18 + label.length * 7 + 16;
    if (legendX > labelWidth && legendX + entryWidth > width) {
      legendX = labelWidth;
      legendY += 20;
    }
    const entry = { label, color, x: legendX, y: legendY };
    legendX += entryWidth;
    return entry;
  });
  const height = legendY + 20;
  const description = bars.map((b) => `${b.label}: ${b.segments.map((s) => `${s.value} ${s.label}`).join(", ")}`).join("; ");
  const root = /** @type {SVGSVGElement} */ (
    svg("svg", { viewBox: `0 0 ${width} ${height}`, width, height, role: "img", "aria-label": `${title}. ${description}` })
  );
  root.append(svg("title", {}, title));
  bars.forEach((bar, i) => {
    const y = i * (barHeight + gap);
    root.append(
      svg("text", { x: labelWidth - 8, y: y + barHeight - 5, "text-anchor": "end" }, bar.label.length > 32 ? `${bar.label.slice(0, 31)}…` : bar.label),
    );
    let x = labelWidth;
    let total = 0;
    for (const segment of bar.segments) {
      if (segment.value <= 0) continue;
      const w = Math.max(1, (segment.value / max) * plotWidth);
      const rect = svg("rect", { x, y, width: w, height: barHeight, fill: segment.color });
      rect.append(svg("title", {}, `${bar.label}: ${segment.value} ${segment.label}`));
      root.append(rect);
      x += w;
      total += segment.value;
    }
    root.append(svg("text", { x: x + 6, y: y + barHeight - 5 }, String(total)));
  });
  for (const { label, color, x, y } of legend)
    root.append(svg("rect", { x, y, width: 12, height: 12, fill: color }), svg("text", { x: x + 18, y: y + 11 }, label));
  return root;
}

/** Distinct reds for the reasons rows were dropped. */
export const droppedColors = ["#c62828", "#e57373", "#8e0000", "#ff8a80", "#ad1457", "#f06292"];
export const keptColor = "#2e7d32";
export const emptiedColor = "#ef8f00";
