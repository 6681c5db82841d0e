/**
 * End to end, `rendezvous start` as a newcomer runs it: no --redis-url, no
 * --config. It creates <data-dir>/config.json (and prints the keys), starts an
 * embedded redis-server with AOF under <data-dir>/redis, serves the API with every
 * role; SIGTERM drains (requests in flight get a proper answer) and exits 0 with
 * the redis-server gone; started again on the same data dir, what it stored is
 * still there.
 */
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { createConnection } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type CliProcess, spawnCli, uniquePrefix } from "@rendezvous/testkit";
import { afterAll, describe, expect, it } from "vitest";
import { bearer, client, expectWait, type Json, LISTENING, producerKey, request, settled } from "./e2e-helpers.js";

const dataDir = mkdtempSync(join(tmpdir(), "rdv-e2e-start-"));
const prefix = uniquePrefix("s");
const live: CliProcess[] = [];

function startEmbedded(): CliProcess {
  const proc = spawnCli(["start", "--port", "0", "--data-dir", dataDir], {
    RENDEZVOUS_PREFIX: prefix,
    REDIS_URL: undefined,
    RENDEZVOUS_CONFIG: undefined,
    RENDEZVOUS_PORT: undefined,
    PORT: undefined,
  });
  live.push(proc);
  return proc;
}

/** Whether something accepts TCP connections on 127.0.0.1:port. */
function accepts(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = createConnection({ host: "127.0.0.1", port });
    socket.once("connect", () => {
      socket.destroy();
      resolve(true);
    });
    socket.once("error", () => resolve(false));
  });
}

/** The embedded redis-server's pid and port, from the process's log line. */
function embedded(proc: CliProcess): { pid: number; port: number } | undefined {
  const line = proc.output().match(/^.*embedded redis-server started.*$/m)?.[0];
  const pid = line?.match(/"dir":"[^"]*","pid":(\d+)/)?.[1];
  const port = line?.match(/"redis":"redis:\/\/127\.0\.0\.1:(\d+)"/)?.[1];
  return pid === undefined || port === undefined ? undefined : { pid: Number(pid), port: Number(port) };
}

afterAll(async () => {
  for (const p of live) {
    await p.terminate();
    // a process that failed its drain leaves its redis-server child behind: stop it by its pid
    const child = embedded(p);
    if (child && (await accepts(child.port))) process.kill(child.pid, "SIGKILL");
  }
  rmSync(dataDir, { recursive: true, force: true });
});

describe("rendezvous start with the embedded redis-server", () => {
  const first: { wait?: Json; host?: string; producer?: string; accepted: string[] } = { accepted: [] };

  it("creates the dev config, prints the keys, runs redis-server with AOF under <data-dir>/redis and serves the API", async () => {
    const proc = startEmbedded();
    const url = (await proc.waitFor(LISTENING, 30_000))[1] as string;
    const printed = await proc.waitFor(/producer secret/);
    expect(printed).toBeTruthy();
    const out = proc.output();
    expect(out).toContain(join(dataDir, "config.json"));
    const hostKey = out.match(/host key\s+(\S+)/)?.[1] as string;
    const producerKeyValue = out.match(/producer key\s+(\S+)/)?.[1] as string;
    const adminToken = out.match(/admin token\s+(\S+)/)?.[1] as string;
    const config = JSON.parse(readFileSync(join(dataDir, "config.json"), "utf8"));
    expect(config.tenants.demo.hostKeys).toEqual([hostKey]);
    expect(config.tenants.demo.producers.demo.keys).toEqual([producerKeyValue]);
    expect(config.adminToken).toBe(adminToken);

    const redisPort = Number(out.match(/"redis":"redis:\/\/127\.0\.0\.1:(\d+)"/)?.[1]);
    expect(redisPort).toBeGreaterThan(0);
    expect(await accepts(redisPort)).toBe(true);
    const redisDir = join(dataDir, "redis");
    expect(existsSync(redisDir)).toBe(true);
    const files = readdirSync(redisDir, { recursive: true }).map(String);
    expect(
      files.some((f) => /appendonly/.test(f)),
      files.join(", "),
    ).toBe(true);

    const host = client(url, bearer(hostKey));
    const producer = client(url, producerKey("demo/demo", producerKeyValue));
    expect((await request(url, "GET", "/readyz")).status).toBe(200);
    const reg = await host.post("/v1/waits", {
      runId: "run-embedded",
      position: "step-1",
      eventType: "job.done",
      correlationId: "job-1",
    });
    expect(reg.status).toBe(201);
    expectWait(reg.body.wait);
    const pub = await producer.post("/v1/events", {
      id: "evt-1",
      type: "job.done",
      correlationId: "job-1",
      payload: {},
    });
    expect(pub.status).toBe(202);
    const resolved = await settled(host, reg.body.wait.id);
    expect(resolved.state).toBe("resolved");
    expect(resolved.resolution.event).toMatchObject({ producer: "demo", id: "evt-1" });
    // a second wait, still waiting, for the restart
    const pending = await host.post("/v1/waits", {
      runId: "run-embedded",
      position: "step-2",
      eventType: "job.done",
      correlationId: "job-2",
      timeoutMs: 3_600_000,
    });
    expect(pending.status).toBe(201);
    Object.assign(first, { wait: pending.body.wait, host: hostKey, producer: producerKeyValue });

    // SIGTERM with a burst of publishes in flight: each answer is a proper one, the exit is 0
    const answers: Array<{ id: string; status: number; body: Json } | { id: string; error: string }> = [];
    const send = async (id: string) => {
      try {
        const r = await producer.post("/v1/events", { id, type: "job.burst", correlationId: id, payload: { id } });
        answers.push({ id, status: r.status, body: r.body });
        return r.status;
      } catch (err) {
        answers.push({ id, error: String(err) });
        return 0;
      }
    };
    let stop = false;
    let k = 0;
    const loopers = Array.from({ length: 6 }, async () => {
      while (!stop) if ((await send(`loop-${k++}`)) !== 202) break;
    });
    const burst = Array.from({ length: 150 }, (_, i) => send(`burst-${i}`));
    await new Promise((r) => setTimeout(r, 150));
    const exit = proc.terminate();
    const code = (await exit).code;
    stop = true;
    await Promise.all([...burst, ...loopers]);
    expect(code).toBe(0);
    expect(proc.output()).toContain('"msg":"stopped"');

    let ok = 0;
    for (const a of answers) {
      if ("error" in a) continue; // no answer: the connection was refused or closed, nothing was promised
      if (a.status === 202) {
        expect(a.body).toMatchObject({ status: "accepted", event: { id: a.id } });
        first.accepted.push(a.id);
        ok++;
      } else {
        expect(a.status, JSON.stringify(a.body)).toBe(503);
        expect(a.body).toMatchObject({ error: { code: "unavailable", message: expect.any(String) } });
      }
    }
    expect(ok).toBeGreaterThan(0);

    // the embedded redis-server is gone with it
    expect(await accepts(redisPort)).toBe(false);
  });

  it("started again on the same data dir: same config, the stored waits and events are still there (AOF)", async () => {
    expect(first.wait).toBeDefined();
    const proc = startEmbedded();
    const url = (await proc.waitFor(LISTENING, 30_000))[1] as string;
    expect(proc.output()).not.toContain("Created a development config");
    const host = client(url, bearer(first.host as string));
    const read = await host.get(`/v1/waits/${first.wait.id}`);
    expect(read.status).toBe(200);
    expect(read.body.wait).toMatchObject({ id: first.wait.id, state: "waiting", createdAt: first.wait.createdAt });
    const listed = await host.get("/v1/waits?runId=run-embedded");
    expect(listed.body.waits.map((w: Json) => w.position).sort()).toEqual(["step-1", "step-2"]);
    for (const id of first.accepted) {
      const r = await host.get(`/v1/events/demo/${id}`);
      expect(r.status, `accepted ${id} before SIGTERM`).toBe(200);
    }
    // and it keeps working: the waiting wait resolves
    const producer = client(url, producerKey("demo/demo", first.producer as string));
    expect((await producer.post("/v1/events", { id: "evt-2", type: "job.done", correlationId: "job-2" })).status).toBe(
      202,
    );
    expect((await settled(host, first.wait.id)).state).toBe("resolved");
    const redisPort = Number(proc.output().match(/"redis":"redis:\/\/127\.0\.0\.1:(\d+)"/)?.[1]);
    expect((await proc.terminate()).code).toBe(0);
    expect(await accepts(redisPort)).toBe(false);
  });
});
