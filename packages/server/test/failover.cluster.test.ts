/**
 * Failover on a Redis Cluster with real role processes: 3 masters + 1 replica each,
 * AOF `appendfsync always` on every node, `cluster-node-timeout` 1000 ms. A workload
 * registers waits and publishes their events; one master is SIGKILLed mid-workload
 * (the one holding the BullMQ queues and some partitions); the cluster promotes its
 * replica; the roles reconnect by themselves; every wait is resolved exactly once and
 * has exactly one continuation job.
 */
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type ConfigInput, createResources, parseConfig, type Resources } from "@rendezvous/engine";
import type { Wait } from "@rendezvous/protocol";
import { type RedisCluster, spawnCli, startRedisCluster, trackOpen, uniquePrefix } from "@rendezvous/testkit";
import { continuationQueueName } from "@rendezvous/workers";
import { Queue } from "bullmq";
import { pino } from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

const CONFIG: ConfigInput = { partitions: 8, claimIdleMs: 1000, tenants: { acme: { hostKeys: ["hk_acme_test"] } } };
const WAITS = 240;
const BATCH = 12;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Retries an idempotent call through the failover window (as a producer or host would). */
async function retrying<T>(fn: () => Promise<T>, ms = 60_000): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    try {
      return await fn();
    } catch (err) {
      if (Date.now() > end) throw err;
      await sleep(200);
    }
  }
}

async function until<T>(check: () => Promise<T | undefined | false | null>, ms: number): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const v = await check().catch(() => undefined);
    if (v) return v;
    if (Date.now() > end) throw new Error("condition not met in time");
    await sleep(200);
  }
}

describe("Redis Cluster failover with real role processes", () => {
  let cluster: RedisCluster;
  beforeAll(async () => {
    cluster = await startRedisCluster({ masters: 3, replicas: 1, aof: true, fsync: "always", nodeTimeoutMs: 1000 });
  }, 60_000);
  afterAll(async () => {
    await cluster?.stop();
  });

  it("a master is SIGKILLed mid-workload: its replica takes over, the roles reconnect, every wait resolves exactly once", async () => {
    const prefix = uniquePrefix("f");
    const dir = mkdtempSync(join(tmpdir(), "rdv-failover-"));
    const configFile = join(dir, "config.json");
    writeFileSync(configFile, JSON.stringify(CONFIG));
    const res: Resources = createResources({
      redisUrl: cluster.url,
      prefix,
      config: parseConfig(CONFIG),
      logger: pino({ level: "silent" }),
    });
    trackOpen({ quit: () => res.close() });
    expect(res.cluster).toBe(true);
    expect(res.queuePrefix).toBe(`{${prefix}}`);
    const role = (name: string) =>
      spawnCli([name, "--config", configFile, "--redis-url", cluster.url, "--port", "0"], {
        RENDEZVOUS_PREFIX: prefix,
      });
    // every role in one process, plus a second matcher: competing consumers
    const roles = [role("start"), role("matcher")];
    const urls = await Promise.all(roles.map(async (r) => (await r.waitFor(/listening on (http:\S+?)"/, 30_000))[1]));

    const specs = Array.from({ length: WAITS }, (_, i) => ({
      runId: `run-${i}`,
      position: "step#1",
      eventType: "job.done",
      correlationId: `job-${i}`,
    }));
    const waitIds: string[] = [];
    for (let i = 0; i < WAITS; i += BATCH) {
      const chunk = specs.slice(i, i + BATCH);
      const made = await Promise.all(chunk.map((s) => retrying(() => res.store.register("acme", s))));
      waitIds.push(...made.map((m) => m.wait.id));
    }

    // the master holding the BullMQ queues (slot of `{prefix}`) also serves some partitions
    const victim = await cluster.masterOf(`${res.queuePrefix}:continuations.acme:id`);
    const partitionMasters = await Promise.all(
      res.store.keys.allPartitions().map((p) => cluster.masterOf(res.store.keys.partition(p).stream)),
    );
    expect(partitionMasters).toContain(victim);
    let killedAt = -1;
    let stalledMs = 0;
    for (let i = 0; i < WAITS; i += BATCH) {
      const t0 = Date.now();
      if (killedAt < 0 && i >= WAITS / 3) {
        // the events acknowledged so far are on the replica first: rendezvous does not WAIT,
        // so an acknowledged write can be lost when its master dies before replicating it
        // (docs/operations.md, "Failover, and what it can lose"); the roles' own writes in
        // flight at the kill are not waited for, and are what the failover must redo
        await cluster.replicated(victim);
        killedAt = Date.now();
        await cluster.kill(victim);
      }
      const events = specs.slice(i, i + BATCH).map((s, j) => ({
        id: `evt-${i + j}`,
        type: s.eventType,
        correlationId: s.correlationId,
        payload: { n: i + j },
      }));
      const results = await retrying(() => res.store.ingest("acme", "svc", events));
      expect(results.map((r) => r.status).every((s) => s === "accepted" || s === "duplicate")).toBe(true);
      stalledMs = Math.max(stalledMs, Date.now() - t0);
    }
    await cluster.waitHealthy(30_000, 3);
    expect(await cluster.masters()).not.toContain(victim);
    const healthyAfterMs = Date.now() - killedAt;

    const dispatched = (w: Wait | null) => w?.history.some((h) => h.what === "continuation_dispatched");
    const final = await until(async () => {
      const waits = await res.store.getWaits(waitIds);
      return waits.every(dispatched) ? (waits as Wait[]) : undefined;
    }, 60_000).catch(async (err: Error) => {
      // say where the pipeline stopped: wait states, and each partition's stream and group
      const waits = await res.store.getWaits(waitIds).catch(() => []);
      const states: Record<string, number> = {};
      const undispatched: string[] = [];
      for (const [n, w] of waits.entries()) {
        const k = `${w?.state ?? "missing"}${dispatched(w) ? "+dispatched" : ""}`;
        states[k] = (states[k] ?? 0) + 1;
        if (!dispatched(w) && undispatched.length < 10) {
          // its event as the store has it: missing (its append lost), or its status
          // (waitIds are in the order of specs, whose event n is evt-n)
          const event = await res.store.getEvent("acme", "svc", `evt-${n}`).catch((e: Error) => e.message);
          undispatched.push(
            `${w?.id ?? waitIds[n]}: event ${typeof event === "string" ? event : (event?.status ?? "missing")}`,
          );
        }
      }
      const streams = await Promise.all(
        res.store.keys.allPartitions().map(async (p) => {
          const k = res.store.keys.partition(p);
          const info = await res.redis.xinfo("GROUPS", k.stream).catch((e: Error) => e.message);
          const outbox = await res.redis.xinfo("GROUPS", k.outbox).catch((e: Error) => e.message);
          return `p${p}: stream groups ${JSON.stringify(info)}, outbox groups ${JSON.stringify(outbox)}`;
        }),
      );
      throw new Error(
        `${err.message}: waits ${JSON.stringify(states)}; not dispatched ${undispatched.join(", ")}; ${streams.join("; ")}`,
      );
    });
    for (const w of final) {
      expect(w.state).toBe("resolved");
      expect(w.history.filter((h) => h.what === "resolved")).toHaveLength(1);
      expect(w.resolution?.event?.id).toBe(`evt-${w.runId.slice(4)}`);
    }

    const queue = new Queue(continuationQueueName("acme"), {
      connection: res.connect("check"),
      prefix: res.queuePrefix,
    });
    try {
      const jobs = await retrying(() => queue.getJobs(["waiting", "active", "completed", "delayed", "failed"]));
      expect(jobs).toHaveLength(WAITS);
      expect(new Set(jobs.map((j) => j.id))).toEqual(new Set(waitIds));
    } finally {
      await queue.close();
    }

    // the roles survived the failover on their own and are ready again
    for (const url of urls) {
      await until(async () => (await fetch(`${url}/readyz`)).status === 200, 20_000);
    }
    const complaints = roles.map(
      (r) =>
        r
          .output()
          .split("\n")
          .filter((l) => /"level":(40|50)/.test(l)).length,
    );
    console.log(
      `failover: killed master :${victim} (${partitionMasters.filter((m) => m === victim).length}/${partitionMasters.length} partitions + the BullMQ slot) after ${WAITS / 3} of ${WAITS} events; ` +
        `longest ingest stall ${stalledMs} ms; cluster healthy again ${healthyAfterMs} ms after the kill; ` +
        `all ${WAITS} waits resolved once and dispatched ${Date.now() - killedAt} ms after it; warn/error log lines per role: ${complaints.join(", ")}`,
    );
    // every role terminated before any exit is judged: a role left running after a failed
    // assertion would outlive the cluster (and the test run)
    const exits = [];
    for (const r of roles) {
      const t = Date.now();
      exits.push({ r, exit: await r.terminate(25_000), ms: Date.now() - t });
    }
    for (const { r, exit, ms } of exits) {
      expect(exit.code, `exit ${JSON.stringify(exit)} after ${ms} ms:\n${r.output().slice(-4000)}`).toBe(0);
    }
  }, 150_000);
});
