/**
 * `npm run demo`: the product in one minute, against a real `rendezvous start`
 * (embedded Redis, fresh data dir) and a fake payment provider. Needs redis-server
 * on PATH.
 *
 *  1. a run launches a charge with `launchAndWait` (wait registered first, the
 *     correlation id is the charge's idempotency key) and lets go of its worker;
 *     re-running the same step after a "crash" launches nothing twice;
 *  2. the provider settles the charge by publishing a signed event;
 *     a relay re-sends it (duplicate);
 *  3. a host worker takes the continuation and claims it once;
 *  4. a charge that never settles: the wait times out;
 *  5. an event with the wrong correlation id: explain says why.
 */
import { spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { type Continuation, ContinuationWorker, HostClient, ProducerClient } from "@rendezvous/client";
import { startProvider } from "./provider.js";

const bin = fileURLToPath(new URL("../../packages/server/bin/rendezvous.js", import.meta.url));
const dataDir = mkdtempSync(join(tmpdir(), "rendezvous-demo-"));
const say = (line: string) => process.stdout.write(`${line}\n`);

say(`starting rendezvous (embedded Redis under ${dataDir})…`);
const server = spawn(process.execPath, [bin, "start", "--port", "0", "--data-dir", dataDir], {
  env: { ...process.env, LOG_LEVEL: "info" },
  stdio: ["ignore", "pipe", "pipe"],
});
let log = "";
server.stdout.on("data", (d) => {
  log += d;
});
server.stderr.on("data", (d) => {
  log += d;
});
const exited = new Promise<number | null>((resolve) => server.on("exit", (code) => resolve(code)));

async function until<T>(what: string, check: () => T | undefined | Promise<T | undefined>, ms = 30_000): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const v = await check();
    if (v !== undefined) return v;
    if (Date.now() > end || server.exitCode !== null) throw new Error(`demo: ${what} did not happen:\n${log}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

let worker: ContinuationWorker | undefined;
try {
  const url = await until("the server listening", () => /listening on (http:\/\/[\d.:]+)/.exec(log)?.[1]);
  const redisUrl = await until("the embedded redis", () => /"redis":"(redis:\/\/[^"]+)"/.exec(log)?.[1]);
  const config = JSON.parse(readFileSync(join(dataDir, "config.json"), "utf8"));
  const hostKey: string = config.tenants.demo.hostKeys[0];
  const secret: string = config.tenants.demo.producers.demo.secrets[0];
  say(`rendezvous is up at ${url}\n`);

  const host = new HostClient({ baseUrl: url, token: hostKey });
  const producer = new ProducerClient({ baseUrl: url, tenant: "demo", producer: "demo", secret });
  const continued: Continuation[] = [];
  worker = new ContinuationWorker({
    tenant: "demo",
    host,
    name: "demo-worker-1",
    connection: { url: redisUrl, maxRetriesPerRequest: null },
    handler: async (c) => {
      continued.push(c);
    },
  });

  const provider = await startProvider(producer);
  const charge = async (amount: number, idempotencyKey: string) => {
    const res = await fetch(`${provider.url}/charges`, {
      method: "POST",
      body: JSON.stringify({ amount, idempotencyKey }),
    });
    return ((await res.json()) as { chargeId: string }).chargeId;
  };

  say("1. run order-42 charges 42.00 and waits for payment.settled / pay_42 (60 s)");
  const step = () =>
    host.launchAndWait({
      runId: "order-42",
      position: "charge#1",
      eventType: "payment.settled",
      correlationId: "pay_42",
      timeoutMs: 60_000,
      launch: ({ idempotencyKey }) => charge(4200, idempotencyKey),
    });
  const wait = await step();
  const rerun = await step(); // the worker "crashed" and the step runs again
  say(`   wait ${wait.id} is ${wait.state}, job ${wait.externalJobId}; the run's worker is free`);
  say(`   re-running the step: same wait ${rerun.id === wait.id}, charges started ${provider.charges.size}\n`);

  say("2. the provider settles the charge (signed event); a relay delivers it twice");
  const settled = await until("the settlement", async () => {
    try {
      return await host.getEvent("demo", `${wait.externalJobId}.settled`);
    } catch {
      return undefined;
    }
  });
  const resent = await producer.publish({
    id: settled.id,
    type: "payment.settled",
    correlationId: "pay_42",
    payload: { chargeId: wait.externalJobId, amount: 4200 },
  });
  say(`   ${settled.id}: ${settled.status} (stream ${settled.streamId}); the re-send: ${resent.status}\n`);

  say("3. a host worker takes the continuation and claims it");
  const done = await until("the continuation", () => continued.find((c) => c.wait.id === wait.id));
  say(`   ${done.wait.id} consumed by ${done.wait.consumption?.by}: payload ${JSON.stringify(done.payload)}`);
  say(`   resolved by event ${done.wait.resolution?.event?.producer}/${done.wait.resolution?.event?.id}`);
  say(`   timeline: ${done.wait.history.map((h) => h.what).join(" → ")}\n`);

  say("4. run order-43 charges an amount the provider never settles, and waits 1.5 s");
  const lonely = await host.launchAndWait({
    runId: "order-43",
    position: "charge#1",
    eventType: "payment.settled",
    correlationId: "pay_43",
    timeoutMs: 1500,
    launch: ({ idempotencyKey }) => charge(0, idempotencyKey),
  });
  const timedOut = await until("the timeout", () => continued.find((c) => c.wait.id === lonely.id));
  say(`   ${lonely.id}: timed out = ${timedOut.timedOut}, deadline ${timedOut.wait.resolution?.deadline}\n`);

  say("5. run order-44 waits for pay_44, but the producer sends pay_44x");
  const { wait: pending } = await host.registerWait({
    runId: "order-44",
    position: "charge#1",
    eventType: "payment.settled",
    correlationId: "pay_44",
  });
  await producer.publish({ id: "evt-pay-44", type: "payment.settled", correlationId: "pay_44x" });
  const why = await until("the near miss", async () => {
    const e = await host.explain(pending.id);
    return e.verdict === "correlation_mismatch" ? e : undefined;
  });
  const miss = (why.details.nearMisses as Array<{ correlationId: string }>)[0];
  say(`   explain: ${why.verdict} (an event arrived for ${miss?.correlationId})\n`);
  say("demo finished: one resolution per wait, each claimed once.");
  await provider.close();
} finally {
  await worker?.close();
  server.kill("SIGTERM");
  const code = await exited;
  rmSync(dataDir, { recursive: true, force: true });
  say(`rendezvous stopped (exit ${code})`);
  process.exitCode = code === 0 ? process.exitCode : 1;
}
