/**
 * Seeded fuzz: thousands of requests that are each wrong in at least one way (the
 * credential or the event) answer 4xx — never 5xx —, store nothing but the capped
 * refusal records, and leave the server healthy. Replay: RENDEZVOUS_SEED=<seed>.
 */
import { seedFromEnv } from "@rendezvous/testkit";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { ev, MAX_BYTES, makeApp, nowSec, publish, signature, snapshot } from "./helpers.js";

const ascii = (max: number) => fc.string({ unit: "grapheme-ascii", maxLength: max });
const anyJson = fc.jsonValue({ maxDepth: 3 });

/** A valid event of acme/billing. */
const validEvent = fc.record({
  id: fc.string({ minLength: 1, maxLength: 200 }),
  type: fc.constantFrom("job.done", "job.failed", "job.x-y_z.9"),
  correlationId: fc.string({ minLength: 1, maxLength: 256 }),
  payload: fc.dictionary(ascii(10), anyJson, { maxKeys: 4 }),
});

type Ev = Record<string, unknown>;
const FIELDS = ["id", "type", "correlationId"] as const;

/** A valid event broken in one way that makes it invalid whatever the rest. */
const brokenEvent: fc.Arbitrary<unknown> = fc.oneof(
  // a required field missing
  fc.tuple(validEvent, fc.constantFrom(...FIELDS)).map(([e, f]): Ev => {
    const copy: Ev = { ...e };
    delete copy[f];
    return copy;
  }),
  // a field of the wrong type
  fc
    .tuple(
      validEvent,
      fc.constantFrom(...FIELDS, "payload", "occurredAt"),
      fc.oneof(fc.integer(), fc.boolean(), fc.constant(null), fc.array(fc.nat(), { maxLength: 3 })),
    )
    .map(([e, f, v]): Ev => ({ ...e, [f]: v })),
  fc
    .tuple(validEvent, fc.oneof(fc.string(), fc.integer(), fc.constant([])))
    .map(([e, v]): Ev => ({ ...e, payload: typeof v === "object" ? v : String(v) })),
  // an unknown top-level key (tenant, producer, anything)
  fc
    .tuple(validEvent, fc.oneof(fc.constantFrom("tenant", "producer", "streamId", "acceptedAt"), ascii(12)), anyJson)
    .filter(([, k]) => !["id", "type", "correlationId", "payload", "occurredAt", "__proto__"].includes(k))
    .map(([e, k, v]): Ev => ({ ...e, [k]: v })),
  // out-of-range strings
  validEvent.map((e): Ev => ({ ...e, id: "" })),
  fc.tuple(validEvent, fc.integer({ min: 201, max: 400 })).map(([e, n]): Ev => ({ ...e, id: "i".repeat(n) })),
  validEvent.map((e): Ev => ({ ...e, correlationId: "" })),
  fc
    .tuple(validEvent, fc.integer({ min: 257, max: 600 }))
    .map(([e, n]): Ev => ({ ...e, correlationId: "c".repeat(n) })),
  fc.tuple(validEvent, ascii(20)).map(([e, s]): Ev => ({ ...e, occurredAt: `not-a-date ${s}` })),
  // a type that breaks the pattern, or one the producer may not send
  fc.tuple(validEvent, ascii(30)).map(([e, s]): Ev => ({ ...e, type: `Bad ${s}` })),
  fc
    .tuple(validEvent, fc.constantFrom("order.refunded", "jobs.done", "other", "job"))
    .map(([e, t]): Ev => ({ ...e, type: t })),
  // a payload breaking its schema
  fc.tuple(validEvent, fc.oneof(fc.string(), fc.boolean(), fc.constant(null))).map(
    ([e, amount]): Ev => ({
      ...e,
      type: "order.paid",
      payload: { amount },
    }),
  ),
  validEvent.map((e): Ev => ({ ...e, type: "order.paid", payload: {} })),
  // a lone surrogate (valid JSON as a \udXXX escape, not valid Unicode) in a string or a key
  fc
    .tuple(
      validEvent,
      fc.constantFrom("id", "correlationId", "payload value", "payload key"),
      fc.integer({ min: 0xd800, max: 0xdfff }),
    )
    .map(([e, where, unit]): Ev => {
      const lone = String.fromCharCode(unit);
      if (where === "payload value") return { ...e, payload: { ...(e.payload as object), s: `a${lone}b` } };
      if (where === "payload key") return { ...e, payload: { ...(e.payload as object), [`k${lone}`]: 1 } };
      return { ...e, [where]: `${String(e[where]).slice(0, 100)}${lone}` };
    }),
);

/** An event whose payload holds a number JSON reads as Infinity (JSON.stringify cannot write it: raw text). */
const infiniteNumber: fc.Arbitrary<string> = fc
  .tuple(validEvent, fc.integer({ min: 309, max: 9999 }), fc.boolean())
  .map(([e, exp, negative]) =>
    JSON.stringify({ ...e, payload: { ...(e.payload as object), n: 0 } }).replace(
      '"n":0',
      `"n":${negative ? "-" : ""}1e${exp}`,
    ),
  );

/** Raw bodies that are not an event envelope at all. */
const brokenRaw: fc.Arbitrary<string | Buffer> = fc.oneof(
  infiniteNumber,
  anyJson.filter((v) => typeof v !== "object" || v === null || Array.isArray(v)).map((v) => JSON.stringify(v)),
  fc.string({ maxLength: 200 }).filter((s) => !s.trim().startsWith("{")),
  fc.uint8Array({ maxLength: 200 }).map((b) => Buffer.from(b)),
  validEvent.map((e) => JSON.stringify(e).slice(0, -1)), // truncated
  fc.integer({ min: 1, max: 3 }).map((n) => `{"a":${"[".repeat(n * 1000)}`), // deep nesting
  fc.constant(JSON.stringify({ ...ev("p1"), payload: { big: "x".repeat(MAX_BYTES) } })), // too large
  fc.constant('{"id":"x","type":"job.done","correlationId":"c","payload":{"__proto__":{"admin":true}}}'),
  fc.constant('{"id":"x","type":"job.done","correlationId":"c","payload":{"constructor":{"prototype":{"a":1}}}}'),
);

type Auth =
  | { kind: "good"; how: "key" | "sig" }
  | { kind: "bad"; headers: (body: string | Buffer) => Record<string, string> };

const bodyText = (b: string | Buffer) => (typeof b === "string" ? b : b.toString("latin1"));

/** Credentials that must fail, each in its own way. */
const badAuth: fc.Arbitrary<Auth> = fc.oneof(
  fc.constant<Auth>({ kind: "bad", headers: () => ({}) }),
  ascii(40).map(
    (k): Auth => ({
      kind: "bad",
      headers: () => ({ "rendezvous-producer": "acme/billing", authorization: `Bearer x${k}` }),
    }),
  ),
  fc
    .constantFrom("acme/ship", "globex/billing", "acme", "acme/billing/", "/billing", "__proto__/x")
    .map(
      (p): Auth => ({ kind: "bad", headers: () => ({ "rendezvous-producer": p, authorization: "Bearer pk_billing" }) }),
    ),
  ascii(40).map(
    (p): Auth => ({ kind: "bad", headers: () => ({ "rendezvous-producer": p, authorization: "Bearer pk_nope" }) }),
  ),
  fc.integer({ min: 301, max: 10_000_000 }).map(
    (skew): Auth => ({
      kind: "bad",
      headers: (b) => ({
        "rendezvous-producer": "acme/billing",
        "rendezvous-signature": signature("whsec_new", bodyText(b), nowSec() - skew),
      }),
    }),
  ),
  fc.constantFrom("whsec_globex", "whsec_other", "").map(
    (secret): Auth => ({
      kind: "bad",
      headers: (b) => ({
        "rendezvous-producer": "acme/billing",
        "rendezvous-signature": signature(secret || "x", `${bodyText(b)} `),
      }),
    }),
  ),
  ascii(120).map(
    (s): Auth => ({
      kind: "bad",
      headers: () => ({ "rendezvous-producer": "acme/billing", "rendezvous-signature": s }),
    }),
  ),
  fc.constant<Auth>({
    kind: "bad",
    headers: (b) => ({
      "rendezvous-producer": "acme/billing",
      authorization: "Bearer pk_billing",
      "rendezvous-signature": signature("whsec_wrong", bodyText(b)),
    }),
  }),
);

const goodAuth: fc.Arbitrary<Auth> = fc.constantFrom<Auth>({ kind: "good", how: "key" }, { kind: "good", how: "sig" });

const contentType = fc.constantFrom(
  "application/json",
  "text/plain",
  "application/x-www-form-urlencoded",
  "",
  "application/json; charset=latin1",
);

/** A request that is wrong in at least one way. */
const badRequest = fc.oneof(
  // bad credential, any body (even a valid one)
  fc.record({
    auth: badAuth,
    body: fc.oneof(
      validEvent.map((e) => JSON.stringify(e)),
      brokenEvent.map((e) => JSON.stringify(e)),
      brokenRaw,
    ),
    batch: fc.boolean(),
    ct: contentType,
  }),
  // good credential, bad body
  fc.record({
    auth: goodAuth,
    body: fc.oneof(
      brokenEvent.map((e) => JSON.stringify(e)),
      brokenRaw,
    ),
    batch: fc.constant(false),
    ct: contentType,
  }),
  // good credential, a batch body that is not {events: [...]} or holds too many
  fc.record({
    auth: goodAuth,
    body: fc.oneof(
      brokenRaw,
      brokenEvent.map((e) => JSON.stringify(e)),
      fc.array(brokenEvent, { maxLength: 3 }).map((events) => JSON.stringify({ events, extra: 1 })),
      anyJson.map((events) =>
        JSON.stringify({
          events: typeof events === "object" && Array.isArray(events) ? { notAnArray: events } : events,
        }),
      ),
      fc.constant(JSON.stringify({ events: Array.from({ length: 501 }, (_, i) => ({ id: `e${i}` })) })),
    ),
    batch: fc.constant(true),
    ct: contentType,
  }),
);

describe("fuzz: bad requests", () => {
  it("≥ 2,000 bad bodies and headers: all 4xx, never 5xx; nothing stored; healthy after", async () => {
    const seed = seedFromEnv("ingest fuzz");
    const h = await makeApp();
    // some real data first, so "unchanged" is about more than an empty keyspace
    expect((await publish(h, ev("seed-1"))).statusCode).toBe(202);
    expect((await publish(h, ev("seed-2"), { secret: "whsec_old" })).statusCode).toBe(202);
    const before = await snapshot(h);
    const statuses = new Map<number, number>();
    let runs = 0;

    await fc.assert(
      fc.asyncProperty(badRequest, async ({ auth, body, batch, ct }) => {
        runs++;
        const headers: Record<string, string> =
          auth.kind === "bad"
            ? auth.headers(body)
            : auth.how === "key"
              ? { "rendezvous-producer": "acme/billing", authorization: "Bearer pk_billing" }
              : {
                  "rendezvous-producer": "acme/billing",
                  "rendezvous-signature": signature("whsec_new", bodyText(body)),
                };
        if (ct) headers["content-type"] = ct;
        const res = await h.app.inject({
          method: "POST",
          url: batch ? "/v1/events/batch" : "/v1/events",
          payload: typeof body === "string" ? Buffer.from(bodyText(body), "latin1") : body,
          headers,
        });
        statuses.set(res.statusCode, (statuses.get(res.statusCode) ?? 0) + 1);
        expect(res.statusCode, res.body).toBeGreaterThanOrEqual(400);
        expect(res.statusCode, res.body).toBeLessThan(500);
        const json = res.json() as { error?: { code?: unknown; message?: unknown } };
        expect(typeof json.error?.code).toBe("string");
        expect(typeof json.error?.message).toBe("string");
      }),
      { seed, numRuns: 2200 },
    );

    // batches whose events are all bad: 200, every result rejected
    await fc.assert(
      fc.asyncProperty(fc.array(brokenEvent, { minLength: 1, maxLength: 20 }), async (events) => {
        runs++;
        const res = await h.app.inject({
          method: "POST",
          url: "/v1/events/batch",
          payload: { events },
          headers: { "rendezvous-producer": "acme/billing", authorization: "Bearer pk_billing" },
        });
        expect(res.statusCode, res.body).toBe(200);
        const { results } = res.json() as { results: Array<{ status: string; error: { code: string } }> };
        expect(results).toHaveLength(events.length);
        for (const r of results) {
          expect(r.status).toBe("rejected");
          expect(["invalid_event", "forbidden_event_type", "payload_too_large"]).toContain(r.error.code);
        }
      }),
      { seed: seed + 1, numRuns: 300 },
    );

    // bad reads
    await fc.assert(
      fc.asyncProperty(
        fc.string({ maxLength: 80 }),
        fc.string({ maxLength: 250 }),
        fc.option(ascii(30)),
        async (p, id, token) => {
          runs++;
          const res = await h.app.inject({
            method: "GET",
            url: `/v1/events/${encodeURIComponent(p)}/${encodeURIComponent(id)}`,
            headers: token === null ? {} : { authorization: `Bearer ${token}` },
          });
          expect(res.statusCode, res.body).toBeGreaterThanOrEqual(400);
          expect(res.statusCode, res.body).toBeLessThan(500);
        },
      ),
      { seed: seed + 2, numRuns: 300 },
    );

    expect(runs).toBeGreaterThanOrEqual(2000);
    expect([...statuses.keys()].every((s) => s >= 400 && s < 500)).toBe(true);
    expect(statuses.get(401)).toBeGreaterThan(100);
    expect(statuses.get(400)).toBeGreaterThan(100);
    expect(await snapshot(h)).toEqual(before);
    // healthy: a valid event is still accepted and read back
    const ok = await publish(h, ev("after"));
    expect(ok.statusCode).toBe(202);
    const read = await h.app.inject({ url: "/v1/events/billing/after", headers: { authorization: "Bearer hk_acme" } });
    expect(read.statusCode).toBe(200);
  }, 120_000); // ~5 s alone; generous for a busy machine
});
