/**
 * The chaos workload: many small scenarios, each on its own correlation id (one job),
 * run concurrently at a steady rate through the real HTTP API while roles and Redis
 * are killed. Everything sent and every answer is recorded in the log the checker
 * reads: what the client knows, to compare with what the server kept.
 *
 * Scenarios (weights in SCENARIOS): an event after its wait; an event before its wait
 * (buffered, then matched at registration); a wait that times out; an event racing the
 * deadline by a few ms; a cancel (sometimes followed by a late event); two events for
 * one job; an event no wait ever asks for; a far deadline or none, resolved by event; a
 * wait with a completion token and heartbeats, its token presented by several callers at
 * once around its (moved) deadline;
 * the wait shapes (docs/api.md, Wait shapes): an any-of wait (`job.done` or `job.failed`,
 * the latter a failure type) with both outcomes racing, and a count-3 wait sent two or
 * three distinct events (with redeliveries), some of them racing its deadline.
 * 30% of event sends are redelivered (same id, same content). Settled waits are
 * consumed by continuation workers (BullMQ, `consume` claims once) and, for some, by
 * several explicit consumers racing.
 */
import { HostClient, signatureHeader } from "@rendezvous/client";
import { BullmqContinuationWorker } from "@rendezvous/client/bullmq";
import type { ChaosHttp } from "./http.js";

/** The far_deadline scenario's timeouts, min and max ms (its waits are resolved by their event). */
export const FAR_TIMEOUT_MS = [600_000, 3_600_000] as const;

export const TENANT = "acme";
export const HOST_KEY = "hk_chaos";
export const ADMIN_TOKEN = "adm_chaos";
export const PRODUCERS = {
  p1: { key: "pk_chaos_1" },
  p2: { secret: "whsec_chaos_2" },
} as const;
export const EVENT_TYPE = "job.done";
/** the any-of scenario's second type (p1 may send it: `job.*`) */
export const FAILURE_TYPE = "job.failed";

type ScenarioKind =
  | "event_after"
  | "event_before"
  | "timeout"
  | "race"
  | "cancel"
  | "two_events"
  | "orphan_event"
  | "far_deadline"
  | "token_race"
  | "any_of"
  | "count_3";

const SCENARIOS: Array<[ScenarioKind, number]> = [
  ["event_after", 24],
  ["event_before", 14],
  ["timeout", 14],
  ["race", 16],
  ["cancel", 10],
  ["two_events", 10],
  ["orphan_event", 5],
  ["far_deadline", 7],
  ["token_race", 8],
  ["any_of", 10],
  ["count_3", 10],
];

/** One call through a completion token (complete, fail, heartbeat): what the client saw. */
export interface TokenCallLog {
  what: "complete" | "fail" | "heartbeat";
  at: number;
  status: number;
  attempts: number;
  /** the error code of a refusal */
  code?: string;
}

/** One send of one event (the first send or a redelivery). */
export interface SendLog {
  at: number;
  /** final HTTP status (0 = never answered) */
  status: number;
  attempts: number;
  /** attempts lost to a fault (no answer, 5xx) before the final answer */
  failedAttempts: number;
  /** the answer's event (accepted or the original of a duplicate) */
  acceptedAt?: string;
  streamId?: string;
  redelivery: boolean;
}

export interface EventLog {
  producer: keyof typeof PRODUCERS;
  id: string;
  /** absent: EVENT_TYPE */
  type?: string;
  correlationId: string;
  scenario: number;
  sends: SendLog[];
}

export interface Observation {
  /** when the answer came (ms) */
  at: number;
  /** when the answered request was sent: the state was read between start and at */
  start?: number;
  state: string;
  source: string;
}

export interface WaitLog {
  id: string;
  scenario: number;
  kind: ScenarioKind;
  runId: string;
  position: string;
  correlationId: string;
  timeoutMs: number | null;
  /** a shaped wait (any_of, count_3): its types, count and failure types */
  shape?: { types: string[]; count: number; failureTypes: string[] };
  registerStatus: number;
  createdAt?: string;
  deadline?: string | null;
  observations: Observation[];
  cancelStatus?: number;
  /** workers that were told `first: true` (explicit consumers and continuation workers) */
  grants: Array<{ by: string; at: number; via: string }>;
  /** token_race: the calls made through its completion token */
  tokenCalls?: TokenCallLog[];
}

export interface ContinuationLog {
  /** deliveries of a continuation job per wait id (BullMQ active events) */
  deliveries: Record<string, number>;
  /** handler runs per wait id: the host acting on the continuation */
  acted: Record<string, Array<{ worker: string; at: number }>>;
  failed: Record<string, string[]>;
}

export interface WorkloadLog {
  startedAt: number;
  endedAt?: number;
  waits: WaitLog[];
  events: EventLog[];
  continuations: ContinuationLog;
  /** scenarios that threw (client-side bug or a budget spent) */
  errors: Array<{ scenario: number; error: string }>;
}

export interface WorkloadOptions {
  http: ChaosHttp;
  redis: { host: string; port: number };
  prefix: string;
  /** scenarios started per second */
  rate: number;
  random: () => number;
  /** only the steady scenarios (soak): no long poll loops beyond a deadline */
  soak?: boolean;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export class Workload {
  readonly log: WorkloadLog = {
    startedAt: Date.now(),
    waits: [],
    events: [],
    continuations: { deliveries: {}, acted: {}, failed: {} },
    errors: [],
  };
  readonly #o: WorkloadOptions;
  readonly #workers: BullmqContinuationWorker[] = [];
  readonly #running = new Set<Promise<void>>();
  readonly #waitsById = new Map<string, WaitLog>();
  #stopped = false;
  #n = 0;
  /** moving estimate of send → accepted (ms), to aim deadline races at the deadline */
  #acceptLatency = 20;

  constructor(opts: WorkloadOptions) {
    this.#o = opts;
  }

  #rand(lo: number, hi: number): number {
    return lo + this.#o.random() * (hi - lo);
  }

  #chance(p: number): boolean {
    return this.#o.random() < p;
  }

  #pick(): ScenarioKind {
    const total = SCENARIOS.reduce((s, [, w]) => s + w, 0);
    let r = this.#o.random() * total;
    for (const [kind, w] of SCENARIOS) {
      r -= w;
      if (r < 0) return kind;
    }
    return "event_after";
  }

  /** Continuation workers: two hosts, each claiming with `consume` before acting. */
  startContinuationWorkers(): void {
    const host = new HostClient({
      baseUrl: this.#o.http.base,
      token: HOST_KEY,
      retries: 40,
      minDelayMs: 100,
      maxDelayMs: 2000,
    });
    const c = this.log.continuations;
    for (const name of ["cw-1", "cw-2"]) {
      const w = new BullmqContinuationWorker({
        tenant: TENANT,
        host,
        name,
        connection: { host: this.#o.redis.host, port: this.#o.redis.port, maxRetriesPerRequest: null },
        prefix: this.#o.prefix,
        concurrency: 8,
        handler: async ({ wait }) => {
          const acted = c.acted[wait.id] ?? [];
          acted.push({ worker: name, at: Date.now() });
          c.acted[wait.id] = acted;
          this.#observe(wait.id, wait.state, `continuation:${name}`);
          // the grant itself is read from `acted` by the checker (the handler can run before
          // the workload has its registration answer)
        },
      });
      w.worker.on("active", (job) => {
        const id = String(job.id);
        c.deliveries[id] = (c.deliveries[id] ?? 0) + 1;
      });
      w.worker.on("failed", (job, err) => {
        if (!job) return;
        const failed = c.failed[String(job.id)] ?? [];
        failed.push(`${name}: ${err.message}`);
        c.failed[String(job.id)] = failed;
      });
      w.worker.on("error", () => {
        // connection errors while Redis restarts: BullMQ reconnects
      });
      this.#workers.push(w);
    }
  }

  /** Starts scenarios at the configured rate until `stop()`. */
  async run(durationMs: number): Promise<void> {
    const end = Date.now() + durationMs;
    const every = 1000 / this.#o.rate;
    let next = Date.now();
    while (!this.#stopped && Date.now() < end) {
      const i = this.#n++;
      const p = this.#scenario(i).catch((err) => {
        this.log.errors.push({ scenario: i, error: String(err?.stack ?? err) });
      });
      this.#running.add(p);
      void p.finally(() => this.#running.delete(p));
      next += every;
      await sleep(Math.max(0, next - Date.now()));
    }
  }

  /** Waits for every started scenario to finish (they are bounded by their budgets). */
  async drain(): Promise<void> {
    while (this.#running.size > 0) await Promise.allSettled([...this.#running]);
    this.log.endedAt = Date.now();
  }

  /** Waits until the continuation workers have nothing left, up to `ms`. */
  async closeWorkers(): Promise<void> {
    await Promise.all(this.#workers.map((w) => w.close()));
  }

  stop(): void {
    this.#stopped = true;
  }

  get started(): number {
    return this.#n;
  }

  /** observations made before the registration answer arrived, merged when it does */
  readonly #early = new Map<string, Observation[]>();

  #observe(waitId: string, state: string, source: string): void {
    const o = { at: Date.now(), state, source };
    const log = this.#waitsById.get(waitId);
    if (log) log.observations.push(o);
    else this.#early.set(waitId, [...(this.#early.get(waitId) ?? []), o]);
  }

  #producerHeaders(producer: keyof typeof PRODUCERS) {
    const p = PRODUCERS[producer];
    return (raw: string): Record<string, string> => {
      const h: Record<string, string> = { "rendezvous-producer": `${TENANT}/${producer}` };
      if ("key" in p) h.authorization = `Bearer ${p.key}`;
      else h["rendezvous-signature"] = signatureHeader(p.secret, raw, Date.now());
      return h;
    };
  }

  async #send(ev: EventLog, redelivery: boolean): Promise<void> {
    const body = {
      id: ev.id,
      type: ev.type ?? EVENT_TYPE,
      correlationId: ev.correlationId,
      payload: { scenario: ev.scenario },
    };
    const at = Date.now();
    const r = await this.#o.http.call("POST", "/v1/events", {
      headers: this.#producerHeaders(ev.producer),
      json: body,
    });
    if (r.status === 202 && r.attempts.length === 1 && r.body?.event?.acceptedAt) {
      const took = Date.parse(r.body.event.acceptedAt) - at;
      if (took >= 0 && took < 5000) this.#acceptLatency = 0.8 * this.#acceptLatency + 0.2 * took;
    }
    ev.sends.push({
      at,
      status: r.status,
      attempts: r.attempts.length,
      failedAttempts: r.attempts.filter((a) => a.error !== undefined || a.status !== r.status).length,
      acceptedAt: r.body?.event?.acceptedAt,
      streamId: r.body?.event?.streamId,
      redelivery,
    });
  }

  /** One event of a scenario, redelivered 30% of the time (at once, concurrently, or later). */
  async #event(scenario: number, correlationId: string, suffix = "a", type = EVENT_TYPE): Promise<void> {
    const ev: EventLog = {
      // (only p1 may send types other than EVENT_TYPE)
      producer: type !== EVENT_TYPE || this.#chance(0.5) ? "p1" : "p2",
      id: `e${scenario}-${suffix}`,
      correlationId,
      scenario,
      sends: [],
    };
    if (type !== EVENT_TYPE) ev.type = type;
    this.log.events.push(ev);
    if (this.#chance(0.3)) {
      const mode = this.#o.random();
      if (mode < 0.3) {
        await Promise.all([this.#send(ev, false), this.#send(ev, true)]);
      } else {
        await this.#send(ev, false);
        await sleep(mode < 0.7 ? this.#rand(0, 50) : this.#rand(200, 3000));
        await this.#send(ev, true);
      }
    } else {
      await this.#send(ev, false);
    }
  }

  async #register(
    scenario: number,
    kind: ScenarioKind,
    correlationId: string,
    timeoutMs: number | null,
    extra: Record<string, unknown> = {},
    shape?: WaitLog["shape"],
  ) {
    const log: WaitLog = {
      id: "",
      scenario,
      kind,
      runId: `run-${scenario}`,
      position: "step#1",
      correlationId,
      timeoutMs,
      registerStatus: 0,
      observations: [],
      grants: [],
    };
    const spec: Record<string, unknown> = {
      runId: log.runId,
      position: log.position,
      eventType: EVENT_TYPE,
      correlationId,
      metadata: { scenario, kind },
      ...extra,
    };
    if (shape) {
      log.shape = shape;
      if (shape.types.length > 1) {
        delete spec.eventType;
        spec.eventTypes = shape.types;
      }
      if (shape.count > 1) spec.count = shape.count;
      if (shape.failureTypes.length > 0) spec.failureTypes = shape.failureTypes;
    }
    if (timeoutMs !== null) spec.timeoutMs = Math.round(timeoutMs);
    const r = await this.#o.http.call("POST", "/v1/waits", {
      headers: { authorization: `Bearer ${HOST_KEY}` },
      json: spec,
    });
    log.registerStatus = r.status;
    if (r.status === 200 || r.status === 201) {
      const w = r.body.wait;
      log.id = w.id;
      log.createdAt = w.createdAt;
      log.deadline = w.deadline;
      log.observations.push({
        at: Date.now(),
        start: r.attempts.at(-1)?.at,
        state: w.state,
        source: `register:${r.status}`,
      });
      this.#waitsById.set(w.id, log);
      log.observations.push(...(this.#early.get(w.id) ?? []));
      this.#early.delete(w.id);
    }
    this.log.waits.push(log);
    // (a token is kept in memory only; a retried registration answers 200 without one)
    this.#tokens.set(log, r.status === 201 ? r.body.token?.value : undefined);
    return log;
  }

  readonly #tokens = new Map<WaitLog, string | undefined>();

  /** The wait's token: from its registration, else a rotation by the host. */
  async #tokenOf(log: WaitLog): Promise<string | undefined> {
    const known = this.#tokens.get(log);
    if (known || !log.id) return known;
    const r = await this.#o.http.call("POST", `/v1/waits/${log.id}/token`, {
      headers: { authorization: `Bearer ${HOST_KEY}` },
    });
    const token = r.status === 200 ? (r.body.token.value as string) : undefined;
    this.#tokens.set(log, token);
    return token;
  }

  async #byToken(log: WaitLog, token: string, what: TokenCallLog["what"]): Promise<void> {
    const json =
      what === "fail" ? { error: { message: "chaos" } } : what === "complete" ? { payload: { by: "token" } } : {};
    const at = Date.now();
    const r = await this.#o.http.call("POST", `/v1/tokens/${encodeURIComponent(token)}/${what}`, { json });
    const call: TokenCallLog = { what, at, status: r.status, attempts: r.attempts.length };
    if (r.status >= 400) call.code = r.body?.error?.code;
    log.tokenCalls = [...(log.tokenCalls ?? []), call];
    if (r.status === 200 && what !== "heartbeat") {
      log.observations.push({
        at: Date.now(),
        start: r.attempts.at(-1)?.at,
        state: "resolved",
        source: `token:${what}`,
      });
    }
  }

  async #get(log: WaitLog, source: string): Promise<string | undefined> {
    if (!log.id) return undefined;
    const r = await this.#o.http.call("GET", `/v1/waits/${log.id}`, {
      headers: { authorization: `Bearer ${HOST_KEY}` },
    });
    if (r.status !== 200) return undefined;
    log.observations.push({ at: Date.now(), start: r.attempts.at(-1)?.at, state: r.body.wait.state, source });
    return r.body.wait.state as string;
  }

  /** Polls until the wait is settled or `ms` passed; then maybe races explicit consumers. */
  async #settle(log: WaitLog, ms: number): Promise<void> {
    if (!log.id) return;
    const end = Date.now() + ms;
    let state = await this.#get(log, "poll");
    while (state === "waiting" && Date.now() < end) {
      await sleep(this.#rand(300, 900));
      state = await this.#get(log, "poll");
    }
    if (state && state !== "waiting" && this.#chance(0.4)) await this.#consumers(log);
  }

  /** Two or three workers call `consume` at once; each `first: true` is a grant. */
  async #consumers(log: WaitLog): Promise<void> {
    const names = ["x-1", "x-2", "x-3"].slice(0, this.#chance(0.5) ? 2 : 3);
    await Promise.all(
      names.map(async (name) => {
        const r = await this.#o.http.call("POST", `/v1/waits/${log.id}/consume`, {
          headers: { authorization: `Bearer ${HOST_KEY}` },
          json: { worker: name },
        });
        if (r.status !== 200) return;
        log.observations.push({
          at: Date.now(),
          start: r.attempts.at(-1)?.at,
          state: r.body.wait.state,
          source: `consume:${name}`,
        });
        // a retried consume whose first answer was lost reads first=false, by=me: that grant was mine
        if (r.body.first || (r.attempts.length > 1 && r.body.consumption?.by === name)) {
          log.grants.push({ by: name, at: Date.now(), via: "consume" });
        }
      }),
    );
  }

  async #scenario(i: number): Promise<void> {
    const kind = this.#pick();
    const corr = `c${i}`;
    switch (kind) {
      case "event_after": {
        const t = this.#rand(2000, 15_000);
        const w = await this.#register(i, kind, corr, this.#chance(0.1) ? null : t);
        await sleep(this.#rand(20, t * 0.6));
        await this.#event(i, corr);
        await this.#settle(w, t + 30_000);
        return;
      }
      case "event_before": {
        await this.#event(i, corr);
        await sleep(this.#rand(0, 400));
        const w = await this.#register(i, kind, corr, this.#rand(1000, 10_000));
        await this.#settle(w, 40_000);
        return;
      }
      case "timeout": {
        const t = this.#rand(300, 8000);
        const w = await this.#register(i, kind, corr, t);
        await sleep(t);
        await this.#settle(w, 30_000);
        return;
      }
      case "race": {
        const t = this.#rand(800, 5000);
        const w = await this.#register(i, kind, corr, t);
        if (!w.deadline) return;
        // the deadline is on the Redis clock, the same machine's clock as ours; aim the
        // acceptance a few ms either side of it
        const offset = this.#rand(-15, 15) - this.#acceptLatency;
        await sleep(Math.max(0, Date.parse(w.deadline) + offset - Date.now()));
        await this.#event(i, corr);
        await this.#settle(w, 30_000);
        return;
      }
      case "cancel": {
        const w = await this.#register(i, kind, corr, this.#chance(0.3) ? null : this.#rand(3000, 20_000));
        await sleep(this.#rand(50, 2000));
        if (w.id) {
          const r = await this.#o.http.call("DELETE", `/v1/waits/${w.id}`, {
            headers: { authorization: `Bearer ${HOST_KEY}` },
          });
          w.cancelStatus = r.status;
          if (r.status === 200) {
            w.observations.push({
              at: Date.now(),
              start: r.attempts.at(-1)?.at,
              state: r.body.wait.state,
              source: "cancel:200",
            });
          }
        }
        if (this.#chance(0.5)) await this.#event(i, corr);
        await this.#settle(w, 30_000);
        return;
      }
      case "two_events": {
        const t = this.#rand(2000, 12_000);
        const w = await this.#register(i, kind, corr, t);
        await sleep(this.#rand(20, t * 0.5));
        if (this.#chance(0.5)) await Promise.all([this.#event(i, corr, "a"), this.#event(i, corr, "b")]);
        else {
          await this.#event(i, corr, "a");
          await sleep(this.#rand(0, 500));
          await this.#event(i, corr, "b");
        }
        await this.#settle(w, t + 30_000);
        return;
      }
      case "orphan_event": {
        await this.#event(i, corr);
        return;
      }
      case "token_race": {
        const t = this.#rand(800, 3000);
        const w = await this.#register(i, kind, corr, t, { token: true, heartbeatMs: 1000 });
        const token = await this.#tokenOf(w);
        if (!token || !w.deadline) return;
        // a few heartbeats (each moves the deadline to now + 1 s), then several callers at
        // once, aimed a few ms either side of the deadline in force, or well before it
        let deadline = Date.parse(w.deadline);
        const beats = Math.floor(this.#rand(0, 4));
        for (let b = 0; b < beats && Date.now() < deadline - 100; b++) {
          await sleep(this.#rand(100, Math.max(150, (deadline - Date.now()) * 0.8)));
          await this.#byToken(w, token, "heartbeat");
          const last = w.tokenCalls?.at(-1);
          if (last?.status === 200) deadline = Date.now() + 1000;
        }
        const aim = this.#chance(0.5)
          ? deadline + this.#rand(-15, 15) - this.#acceptLatency
          : deadline - this.#rand(200, 600);
        await sleep(Math.max(0, aim - Date.now()));
        const callers = 2 + Math.floor(this.#rand(0, 4));
        await Promise.all(
          Array.from({ length: callers }, () => {
            const r = this.#o.random();
            return this.#byToken(w, token, r < 0.2 ? "heartbeat" : r < 0.6 ? "complete" : "fail");
          }),
        );
        await this.#settle(w, 30_000);
        return;
      }
      case "any_of": {
        // both outcomes racing: exactly one wins, the other is late
        const t = this.#rand(1000, 10_000);
        const shape = { types: [EVENT_TYPE, FAILURE_TYPE], count: 1, failureTypes: [FAILURE_TYPE] };
        const w = await this.#register(i, kind, corr, t, {}, shape);
        await sleep(this.#rand(20, t * 0.5));
        await Promise.all([this.#event(i, corr, "a"), this.#event(i, corr, "b", FAILURE_TYPE)]);
        await this.#settle(w, t + 30_000);
        return;
      }
      case "count_3": {
        // three distinct events (or two: a timeout with two collected), the last near the deadline at times
        const t = this.#rand(1500, 8000);
        const w = await this.#register(i, kind, corr, t, {}, { types: [EVENT_TYPE], count: 3, failureTypes: [] });
        const n = this.#chance(0.25) ? 2 : 3;
        for (let k = 0; k < n; k++) {
          const last = k === n - 1;
          if (last && w.deadline && this.#chance(0.5)) {
            const offset = this.#rand(-15, 15) - this.#acceptLatency;
            await sleep(Math.max(0, Date.parse(w.deadline) + offset - Date.now()));
          } else {
            await sleep(this.#rand(10, t * 0.2));
          }
          await this.#event(i, corr, String.fromCharCode(97 + k));
        }
        await this.#settle(w, t + 30_000);
        return;
      }
      case "far_deadline": {
        const w = await this.#register(
          i,
          kind,
          corr,
          this.#chance(0.5) ? null : this.#rand(FAR_TIMEOUT_MS[0], FAR_TIMEOUT_MS[1]),
        );
        await sleep(this.#rand(100, 4000));
        await this.#event(i, corr);
        await this.#settle(w, 30_000);
        return;
      }
    }
  }
}
