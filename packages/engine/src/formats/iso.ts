/**
 * ISO-8601 UTC with milliseconds: how every stored time reads in the API, the same text
 * as `Date.prototype.toISOString`. A Wait carries half a dozen times and the dispatcher
 * writes one per resolution, so the date part is kept per day and the time of day is
 * written by arithmetic: ~70 ns against toISOString's ~410 in a loop (`npm run bench:handout`,
 * docs/performance.md, ninth round). The date parts of the days met recently are kept, not
 * only the last one: a wait's times often straddle days (created today, its deadline
 * tomorrow), and one kept day made each call alternate between them through toISOString
 * (1.18 µs against 0.14 a call; docs/performance.md, seventeenth round).
 */
export function iso(ms: number): string {
  // events of one batch share their milliseconds: reuse the last answer
  if (ms === lastIsoMs) return lastIso;
  const t = Math.trunc(ms);
  // as toISOString: a time beyond ±8.64e15 ms (or NaN) is no date
  if (!(Math.abs(t) <= MAX_MS)) throw new RangeError("Invalid time value");
  const day = Math.floor(t / DAY_MS);
  if (day !== lastDay) {
    lastDayPrefix = dayPrefix(day);
    lastDay = day;
  }
  let rest = t - day * DAY_MS;
  const hours = Math.floor(rest / 3_600_000);
  rest -= hours * 3_600_000;
  const minutes = Math.floor(rest / 60_000);
  rest -= minutes * 60_000;
  const seconds = Math.floor(rest / 1000);
  const millis = rest - seconds * 1000;
  lastIso = `${lastDayPrefix}${TWO[hours]}:${TWO[minutes]}:${TWO[seconds]}.${millis < 10 ? "00" : millis < 100 ? "0" : ""}${millis}Z`;
  lastIsoMs = ms;
  return lastIso;
}

/** The "YYYY-MM-DDT" of a day (days since the epoch), from the recent days' kept parts. */
function dayPrefix(day: number): string {
  let prefix = dayPrefixes.get(day);
  if (prefix === undefined) {
    if (dayPrefixes.size >= DAYS_KEPT) dayPrefixes.clear();
    const text = new Date(day * DAY_MS).toISOString();
    prefix = text.slice(0, text.indexOf("T") + 1);
    dayPrefixes.set(day, prefix);
  }
  return prefix;
}

const DAY_MS = 86_400_000;
const DAYS_KEPT = 512;
const dayPrefixes = new Map<number, string>();
const MAX_MS = 8.64e15;
/** "00" … "59" */
const TWO = Array.from({ length: 60 }, (_, i) => String(i).padStart(2, "0"));
let lastIsoMs = Number.NaN;
let lastIso = "";
let lastDay = Number.NaN;
let lastDayPrefix = "";
