/** ISO-8601 UTC with milliseconds: how every stored time reads in the API. */
export function iso(ms: number): string {
  // events of one batch share their milliseconds: reuse the last answer
  if (ms !== lastIsoMs) {
    lastIsoMs = ms;
    lastIso = new Date(ms).toISOString();
  }
  return lastIso;
}
let lastIsoMs = Number.NaN;
let lastIso = "";
