/**
 * A deadline already past at registration (here 1970), through a real `rendezvous
 * start`: accepted, timed out at once, and counted in the lateness metric (and so the
 * console's mean lateness) from its registration, not from 1970.
 */
import { eventually } from "@rendezvous/testkit";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { bearer, type Client, client, type Json, type Started, startServer } from "./e2e-helpers.js";

const ADMIN = "adm_past_deadline_e2e";
const CONFIG = { partitions: 4, adminToken: ADMIN, tenants: { acme: { hostKeys: ["hk_acme_past"] } } };

let server: Started;
let host: Client;

beforeAll(async () => {
  server = await startServer({ config: CONFIG });
  host = client(server.url, bearer("hk_acme_past"));
});

afterAll(async () => {
  if (server) expect((await server.proc.terminate()).code).toBe(0);
});

/** `rendezvous_timeout_lateness_seconds` sum and count from /metrics (summed over its label sets, if any). */
async function latenessMetric(): Promise<{ sum: number; count: number }> {
  const text = await (await fetch(`${server.url}/metrics`)).text();
  const read = (suffix: string) =>
    [
      ...text.matchAll(new RegExp(`^rendezvous_timeout_lateness_seconds_${suffix}(?:\\{[^}]*\\})? (\\S+)$`, "gm")),
    ].reduce((n, m) => n + Number(m[1]), 0);
  return { sum: read("sum"), count: read("count") };
}

describe("a deadline already past at registration", () => {
  it("is accepted, times out at once, and adds seconds (not decades) to the lateness metric and the console's mean", async () => {
    const before = await latenessMetric();
    const r = await host.post("/v1/waits", {
      runId: "run-1970",
      position: "step",
      eventType: "job.done",
      correlationId: "job-1970",
      deadline: "1970-01-01T00:00:00.000Z",
    });
    expect(r.status, r.text).toBe(201);
    const id = r.body.wait.id as string;
    const done: Json = await eventually(async () => {
      const w = await host.get(`/v1/waits/${id}`);
      return w.body.wait?.state === "timed_out" ? w.body.wait : undefined;
    }, 10_000);
    expect(done.resolution.kind).toBe("timeout");
    expect(Date.parse(done.resolution.at) - Date.parse(done.createdAt)).toBeLessThan(10_000);
    const after = await eventually(async () => {
      const m = await latenessMetric();
      return m.count > before.count ? m : undefined;
    });
    expect(after.count - before.count).toBe(1);
    expect(after.sum - before.sum).toBeLessThan(60);
    // the console's overview reads the same histogram
    const overview = await client(server.url, bearer(ADMIN)).get("/console/api/overview");
    expect(overview.status, overview.text).toBe(200);
    expect(overview.body.totals.latenessMeanMs).not.toBeNull();
    expect(overview.body.totals.latenessMeanMs).toBeLessThan(60_000);
  });
});
