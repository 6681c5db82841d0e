/**
 * The HTTP `ContinuationWorker` against a stand-in server (HostClient's `fetch`), to see
 * which requests it makes: a claim with `consume: true` and no consume call of its own when a
 * lease carries `consumed`; acks of handlers finishing together in one
 * `POST /v1/continuations/ack`; against an older server (no `consume`, no batch ack route) one
 * consume and one ack per lease, every handler still run once.
 */
import { describe, expect, it } from "vitest";
import { ContinuationWorker, HostClient } from "../src/index.js";

const wait = (id: string, consumption?: { by: string; at: string }) => ({
  id,
  tenant: "acme",
  runId: `run-${id}`,
  position: "p",
  eventType: "job.done",
  correlationId: id,
  state: "resolved",
  createdAt: "2026-01-01T00:00:00.000Z",
  resolution: { kind: "deliver", at: "2026-01-01T00:00:01.000Z", payload: { n: id } },
  ...(consumption ? { consumption } : {}),
  timeline: [],
});

interface Stand {
  fetch: typeof fetch;
  requests: Array<{ path: string; body: Record<string, unknown> | undefined }>;
  acked: string[];
}

/** `n` continuations, handed out in claims of up to `max`; `old` answers as a server without consume and batch acks. */
function standIn(n: number, old: boolean): Stand {
  const pending = Array.from({ length: n }, (_, i) => `w${i}`);
  const stand: Stand = { requests: [], acked: [], fetch: undefined as unknown as typeof fetch };
  const json = (status: number, body: unknown) =>
    new Response(JSON.stringify(body), { status, headers: { "content-type": "application/json" } });
  stand.fetch = (async (input: string | URL | Request, init?: RequestInit) => {
    const path = new URL(String(input)).pathname;
    const body = typeof init?.body === "string" ? (JSON.parse(init.body) as Record<string, unknown>) : undefined;
    stand.requests.push({ path, body });
    if (path === "/v1/continuations/claim") {
      if (old && body?.consume !== undefined) {
        return json(400, {
          error: {
            code: "invalid_request",
            message: "bad",
            issues: [{ path: [], message: 'Unrecognized key: "consume"' }],
          },
        });
      }
      if (pending.length === 0) {
        await new Promise((r) => setTimeout(r, 20));
        return json(200, { continuations: [] });
      }
      const at = new Date().toISOString();
      const leases = pending.splice(0, Number(body?.max ?? 10)).map((id) => ({
        leaseId: `lease-${id}`,
        waitId: id,
        attempt: 1,
        leaseExpiresAt: at,
        ...(body?.consume
          ? {
              wait: wait(id, { by: String(body.worker), at }),
              consumed: { first: true, consumption: { by: body.worker, at } },
            }
          : { wait: wait(id) }),
      }));
      return json(200, { continuations: leases });
    }
    const consume = /^\/v1\/waits\/([^/]+)\/consume$/.exec(path);
    if (consume) {
      const consumption = { by: String(body?.worker), at: new Date().toISOString() };
      return json(200, { first: true, consumption, wait: wait(consume[1] as string, consumption) });
    }
    if (path === "/v1/continuations/ack") {
      if (old) return json(404, { error: { code: "not_found", message: "Route not found" } });
      const ids = (body?.leaseIds as string[]) ?? [];
      stand.acked.push(...ids);
      return json(200, { acked: ids, expired: [] });
    }
    const ack = /^\/v1\/continuations\/([^/]+)\/ack$/.exec(path);
    if (ack) {
      stand.acked.push(ack[1] as string);
      return json(200, { acked: true });
    }
    return json(404, { error: { code: "not_found", message: path } });
  }) as typeof fetch;
  return stand;
}

async function runAll(stand: Stand, n: number): Promise<{ ran: string[]; errors: unknown[] }> {
  const ran: string[] = [];
  const errors: unknown[] = [];
  const worker = new ContinuationWorker({
    host: new HostClient({ baseUrl: "http://stand.in", token: "hk", fetch: stand.fetch, retries: 0 }),
    name: "w",
    concurrency: 20,
    pollMs: 100,
    onError: (err) => errors.push(err),
    handler: async ({ wait: w, payload }) => {
      expect(payload).toEqual({ n: w.id });
      ran.push(w.id);
    },
  });
  const end = Date.now() + 10_000;
  while (stand.acked.length < n && Date.now() < end) await new Promise((r) => setTimeout(r, 10));
  await worker.close();
  return { ran, errors };
}

const count = (stand: Stand, re: RegExp) => stand.requests.filter((r) => re.test(r.path)).length;

describe("ContinuationWorker over HTTP", () => {
  it("claims with consume: true, makes no consume call of its own, acks handlers finishing together in one request", async () => {
    const n = 60;
    const stand = standIn(n, false);
    const { ran, errors } = await runAll(stand, n);
    expect(errors).toEqual([]);
    expect(ran.sort()).toEqual(Array.from({ length: n }, (_, i) => `w${i}`).sort());
    expect(stand.acked.sort()).toEqual(ran.map((id) => `lease-${id}`).sort());
    const claims = stand.requests.filter((r) => r.path === "/v1/continuations/claim");
    expect(claims.every((c) => c.body?.consume === true)).toBe(true);
    expect(count(stand, /\/consume$/)).toBe(0);
    expect(count(stand, /^\/v1\/continuations\/[^/]+\/ack$/)).toBe(0);
    // 20 handlers of a claim finish in the same turn: far fewer ack requests than acks
    expect(count(stand, /^\/v1\/continuations\/ack$/)).toBeLessThanOrEqual(n / 10);
  });

  it("against an older server: one consume and one ack per lease, every handler run once", async () => {
    const n = 25;
    const stand = standIn(n, true);
    const { ran, errors } = await runAll(stand, n);
    expect(errors).toEqual([]);
    expect(ran.sort()).toEqual(Array.from({ length: n }, (_, i) => `w${i}`).sort());
    expect(count(stand, /\/consume$/)).toBe(n);
    expect(count(stand, /^\/v1\/continuations\/[^/]+\/ack$/)).toBe(n);
    expect(stand.acked.sort()).toEqual(ran.map((id) => `lease-${id}`).sort());
    // asked once each, then not again
    expect(stand.requests.filter((r) => r.path === "/v1/continuations/claim" && r.body?.consume).length).toBe(1);
    expect(count(stand, /^\/v1\/continuations\/ack$/)).toBe(1);
  });
});
