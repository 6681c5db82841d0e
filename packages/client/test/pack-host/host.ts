/**
 * A host program as a user writes it in their own project: it imports only the
 * installed `@rendezvous/client` (the pack test copies it into a temp project outside
 * the workspace, type-checks it strictly and runs it with plain node). It registers a
 * wait, publishes the event, receives the continuation, consumes it once, and prints
 * one JSON line of what it saw.
 *
 * Env: RDV_URL, RDV_HOST_KEY, RDV_SECRET (producer demo/demo), RDV_RUN (unique per run).
 */
import {
  type Continuation,
  ContinuationWorker,
  type ErrorCode,
  HostClient,
  ProducerClient,
  RendezvousApiError,
  type Wait,
} from "@rendezvous/client";

function env(name: string): string {
  const v = process.env[name];
  if (!v) throw new Error(`${name} is not set`);
  return v;
}

const baseUrl = env("RDV_URL");
const run = env("RDV_RUN");
const host = new HostClient({ baseUrl, token: env("RDV_HOST_KEY") });
const producer = new ProducerClient({ baseUrl, tenant: "demo", producer: "demo", secret: env("RDV_SECRET") });

const spec = {
  runId: `order-${run}`,
  position: "charge#1",
  eventType: "payment.settled",
  correlationId: `pay-${run}`,
  timeoutMs: 60_000,
};
const { created, wait } = await host.registerWait(spec);
const published = await producer.publish({
  id: `evt-${run}`,
  type: "payment.settled",
  correlationId: spec.correlationId,
  payload: { amount: 4200 },
});

/** The continuation of `waitId` through the HTTP ContinuationWorker (which consumes it). */
async function overHttp(waitId: string): Promise<Continuation> {
  let worker: ContinuationWorker | undefined;
  const got = await new Promise<Continuation>((resolve) => {
    worker = new ContinuationWorker({
      host,
      name: "pack-host",
      handler: async (c) => {
        if (c.wait.id === waitId) resolve(c);
      },
    });
  });
  await worker?.close();
  return got;
}

const transport = "http";
const continuation = await overHttp(wait.id);
const again = await host.consume(wait.id, "someone-else");
const explained = await host.explain(wait.id);

let missing: ErrorCode | undefined;
try {
  await host.getWait("w_does_not_exist");
} catch (err) {
  if (err instanceof RendezvousApiError) missing = err.code;
}

const state: Wait["state"] = continuation.wait.state;
console.log(
  JSON.stringify({
    node: process.version,
    transport,
    created,
    published: published.status,
    state,
    payload: continuation.payload,
    consumedBy: continuation.wait.consumption?.by ?? null,
    again: { first: again.first, by: again.consumption.by },
    verdict: explained.verdict,
    missing,
  }),
);
