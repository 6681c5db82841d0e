/**
 * `npm run demo`: the product in one minute, against a real `rendezvous start`
 * (embedded Redis, fresh data dir). Needs redis-server on PATH.
 *
 *  1. a run registers a wait and lets go of its worker;
 *  2. a producer publishes the result (signed), then publishes it again (duplicate);
 *  3. a host worker takes the continuation and claims it once;
 *  4. a second wait gets no event and times out;
 *  5. a third wait gets an event with the wrong correlation id: explain says why.
 */
import { spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { type Continuation, ContinuationWorker, HostClient, ProducerClient } from "@rendezvous/client";

const bin = fileURLToPath(new URL("../packages/server/bin/rendezvous.js", import.meta.url));
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

  say("1. run order-42 starts a payment and waits for payment.settled / pay_42 (60 s)");
  const { wait } = await host.register({
    runId: "order-42",
    position: "charge#1",
    eventType: "payment.settled",
    correlationId: "pay_42",
    timeoutMs: 60_000,
  });
  say(`   wait ${wait.id} is ${wait.state}; the run's worker is free\n`);

  say("2. the payment service publishes the result, signed with its secret — twice");
  const event = { id: "evt-pay-42", type: "payment.settled", correlationId: "pay_42", payload: { amount: 4200 } };
  const first = await producer.publish(event);
  const again = await producer.publish(event);
  say(`   first send: ${first.status} (stream ${first.event.streamId}); second send: ${again.status}\n`);

  say("3. a host worker takes the continuation and claims it");
  const done = await until("the continuation", () => continued.find((c) => c.wait.id === wait.id));
  say(`   ${done.wait.id} consumed by ${done.wait.consumption?.by}: payload ${JSON.stringify(done.payload)}`);
  say(`   resolved by event ${done.wait.resolution?.event?.producer}/${done.wait.resolution?.event?.id}`);
  say(`   timeline: ${done.wait.history.map((h) => h.what).join(" → ")}\n`);

  say("4. run order-43 waits 1.5 s for an event that never comes");
  const { wait: lonely } = await host.register({
    runId: "order-43",
    position: "charge#1",
    eventType: "payment.settled",
    correlationId: "pay_43",
    timeoutMs: 1500,
  });
  const timedOut = await until("the timeout", () => continued.find((c) => c.wait.id === lonely.id));
  say(`   ${lonely.id}: timed out = ${timedOut.timedOut}, deadline ${timedOut.wait.resolution?.deadline}\n`);

  say("5. run order-44 waits for pay_44, but the producer sends pay_44x");
  const { wait: pending } = await host.register({
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
} finally {
  await worker?.close();
  server.kill("SIGTERM");
  const code = await exited;
  rmSync(dataDir, { recursive: true, force: true });
  say(`rendezvous stopped (exit ${code})`);
  process.exitCode = code === 0 ? process.exitCode : 1;
}
