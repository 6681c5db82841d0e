/**
 * The workload's HTTP client: global fetch, every attempt recorded. Retries what a
 * fault makes transient (no connection, reset, 503, 500 while Redis restarts) for up
 * to `budgetMs`; every call it makes is idempotent (register, event send with a fixed
 * id, consume, reads) or checked afterwards (cancel).
 */

export interface Attempt {
  /** local time the attempt started (ms) */
  at: number;
  status?: number;
  error?: string;
}

export interface Answer {
  status: number;
  // biome-ignore lint/suspicious/noExplicitAny: response bodies are read field by field
  body: any;
  attempts: Attempt[];
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** True for answers a fault causes and a retry may cure. */
const transient = (status: number) => status === 503 || status === 500 || status === 502 || status === 429;

export class ChaosHttp {
  constructor(
    readonly base: string,
    readonly budgetMs = 90_000,
  ) {}

  /** Sends until a non-transient answer or the budget is spent; never throws. */
  async call(
    method: string,
    path: string,
    opts: { headers?: Record<string, string> | ((body: string) => Record<string, string>); json?: unknown } = {},
  ): Promise<Answer> {
    const attempts: Attempt[] = [];
    const end = Date.now() + this.budgetMs;
    const raw = opts.json === undefined ? undefined : JSON.stringify(opts.json);
    for (let n = 0; ; n++) {
      const at = Date.now();
      const headers: Record<string, string> = {
        ...(typeof opts.headers === "function" ? opts.headers(raw ?? "") : opts.headers),
      };
      if (raw !== undefined) headers["content-type"] = "application/json";
      let retryAfter = 0;
      try {
        const res = await fetch(`${this.base}${path}`, {
          method,
          headers,
          body: raw,
          signal: AbortSignal.timeout(15_000),
        });
        const text = await res.text();
        attempts.push({ at, status: res.status });
        let body: unknown = text;
        try {
          body = text ? JSON.parse(text) : text;
        } catch {
          // not JSON
        }
        if (!transient(res.status)) return { status: res.status, body, attempts };
        retryAfter = Number(res.headers.get("retry-after") ?? 0) * 1000;
      } catch (err) {
        attempts.push({ at, error: (err as Error).cause ? String((err as Error).cause) : String(err) });
      }
      if (Date.now() > end) return { status: 0, body: null, attempts };
      await sleep(Math.max(Math.min(100 * 2 ** Math.min(n, 5), 2000) * (0.5 + Math.random() / 2), retryAfter / 4));
    }
  }
}
