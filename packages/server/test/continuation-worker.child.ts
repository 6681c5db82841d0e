/**
 * A host process for continuations-http.test.ts: a `ContinuationWorker` over HTTP (host key
 * only) that prints one JSON line per lease it takes (`leased`) and per handler run (`ran`).
 * It claims without `consume` (the worker's claims ask for it; this host takes it out), so that
 * it consumes each lease itself: after its first CONSUME_LIMIT consumes, its consume calls hang
 * (never sent): it keeps leasing and holds those leases, unconsumed, until the test SIGKILLs it.
 * Env: RDV_URL, RDV_TOKEN, RDV_NAME, RDV_LEASE_MS, RDV_CONSUME_LIMIT.
 */
import { ContinuationWorker, HostClient } from "@rendezvous/client";

const env = (k: string) => {
  const v = process.env[k];
  if (!v) throw new Error(`${k} is not set`);
  return v;
};
const name = env("RDV_NAME");
const limit = Number(env("RDV_CONSUME_LIMIT"));
const say = (line: Record<string, unknown>) => process.stdout.write(`${JSON.stringify({ worker: name, ...line })}\n`);
let consumes = 0;

const host = new HostClient({
  baseUrl: env("RDV_URL"),
  token: env("RDV_TOKEN"),
  fetch: async (input, init) => {
    const url = String(input);
    if (url.endsWith("/consume") && ++consumes > limit) return new Promise<Response>(() => undefined);
    if (url.includes("/v1/continuations/claim") && typeof init?.body === "string") {
      const { consume: _, ...claim } = JSON.parse(init.body) as Record<string, unknown>;
      init = { ...init, body: JSON.stringify(claim) };
    }
    const res = await fetch(input, init);
    if (url.includes("/v1/continuations/claim") && res.ok) {
      const body = (await res.clone().json()) as { continuations: Array<{ waitId: string; wait: { tenant: string } }> };
      for (const c of body.continuations) say({ leased: c.waitId, tenant: c.wait.tenant });
    }
    return res;
  },
});
new ContinuationWorker({
  host,
  name,
  concurrency: 4,
  leaseMs: Number(env("RDV_LEASE_MS")),
  pollMs: 2000,
  handler: async ({ wait }) => {
    say({ ran: wait.id, tenant: wait.tenant });
  },
});
say({ ready: true });
