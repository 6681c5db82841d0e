/** Plain-text output: aligned tables and number formatting. */

export type Cell = string | number;

/** Formats a number for a table: integers with thousands separators, else `digits` decimals. */
export function fmt(value: number, digits = 1): string {
  if (!Number.isFinite(value)) return "—";
  if (Number.isInteger(value) || Math.abs(value) >= 1000) return Math.round(value).toLocaleString("en-US");
  return value.toFixed(digits);
}

export function pct(fraction: number, digits = 1): string {
  return Number.isFinite(fraction) ? `${(fraction * 100).toFixed(digits)} %` : "—";
}

/** Prints rows under a header, columns aligned (numbers right, text left). */
export function printTable(title: string, header: string[], rows: Cell[][]): void {
  const text = rows.map((r) => r.map((c) => (typeof c === "number" ? fmt(c) : c)));
  const widths = header.map((h, i) => Math.max(h.length, ...text.map((r) => (r[i] ?? "").length)));
  const numeric = header.map((_, i) =>
    rows.every((r) => typeof r[i] === "number" || /^[-\d.,\s%—]+$/.test(String(r[i]))),
  );
  const line = (cells: string[]) =>
    cells.map((c, i) => (numeric[i] ? c.padStart(widths[i] ?? 0) : c.padEnd(widths[i] ?? 0))).join("  ");
  console.log(`\n${title}`);
  console.log(line(header));
  console.log(widths.map((w) => "-".repeat(w)).join("  "));
  for (const r of text) console.log(line(r));
}

let sink: ((message: string) => void) | undefined;

/** Sends progress lines to `to` instead of stderr (e.g. into a progress bar); undefined restores. */
export function setProgressSink(to: ((message: string) => void) | undefined): void {
  sink = to;
}

/** A line of progress on stderr (kept out of the numbers on stdout). */
export function progress(message: string): void {
  if (sink) sink(message);
  else process.stderr.write(`[${new Date().toISOString().slice(11, 23)}] ${message}\n`);
}
