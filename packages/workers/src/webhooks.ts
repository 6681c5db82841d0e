/**
 * Webhook deliveries: where a tenant has `"webhook": {"url","secret"}`, the dispatcher
 * adds a job to the internal `webhooks` queue per resolution (job id `wh.<wait id>`), and
 * this worker POSTs the wait, signed (`Rendezvous-Signature`), with retries and backoff,
 * then records the delivery as a `continuation_dispatched` (webhook, status).
 */
import { createHmac } from "node:crypto";
import { type Resources, type Store, traceOfBullmqMetadata } from "@rendezvous/engine";
import { type Job, Worker } from "bullmq";

/** Internal queue of webhook deliveries. */
export const WEBHOOK_QUEUE = "webhooks";

/** A webhook delivery job's data: the wait is read when the request is sent. */
interface WebhookJob {
  tenant: string;
  waitId: string;
}

/** `Rendezvous-Signature` header value for a webhook body. */
export function signWebhook(secret: string, body: string, unixSeconds = Math.floor(Date.now() / 1000)): string {
  const mac = createHmac("sha256", secret).update(`${unixSeconds}.${body}`).digest("hex");
  return `t=${unixSeconds},v1=${mac}`;
}

export interface WebhookOptions {
  /** worker concurrency; 0 = no worker in this process */
  concurrency: number;
  /** request timeout */
  timeoutMs: number;
}

/** The worker of the `webhooks` queue, started once some tenant has a webhook. */
export class WebhookDeliveries {
  readonly #res: Resources;
  readonly #store: Store;
  readonly #opts: WebhookOptions;
  #worker: Worker<WebhookJob> | undefined;
  #stopped = false;

  constructor(res: Resources, store: Store, opts: WebhookOptions) {
    this.#res = res;
    this.#store = store;
    this.#opts = opts;
  }

  /** Starts the worker, once some tenant has a webhook (and concurrency allows it). */
  start(): void {
    const concurrency = this.#opts.concurrency;
    if (this.#worker || this.#stopped || concurrency <= 0) return;
    if (!Object.values(this.#res.config.tenants).some((t) => t.webhook)) return;
    this.#worker = new Worker<WebhookJob>(WEBHOOK_QUEUE, (job) => this.#send(job), {
      connection: this.#res.connect("dispatcher-webhooks", { blocking: true }),
      prefix: this.#res.queuePrefix,
      concurrency,
    });
    this.#worker.on("error", (err) => this.#res.logger.warn({ err }, "webhook worker error"));
    this.#worker.on("failed", (job, err) =>
      this.#res.logger.warn({ err, waitId: job?.data.waitId, attempt: job?.attemptsMade }, "webhook delivery failed"),
    );
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    await this.#worker?.close();
  }

  async #send(job: Job<WebhookJob>): Promise<void> {
    const hook = this.#res.config.tenants[job.data.tenant]?.webhook;
    if (!hook) return;
    const wait = await this.#store.getWait(job.data.tenant, job.data.waitId);
    if (!wait) return;
    const body = JSON.stringify({ wait });
    const received = traceOfBullmqMetadata(job.opts.telemetry?.metadata);
    const span = this.#res.tracing.enabled
      ? this.#res.tracing.start("rendezvous.webhook", {
          kind: "client",
          parent: received,
          attributes: {
            "http.request.method": "POST",
            "rendezvous.wait.id": wait.id,
            "rendezvous.tenant": wait.tenant,
          },
        })
      : undefined;
    const trace = span?.carrier ?? received;
    const headers: Record<string, string> = {
      "content-type": "application/json",
      "rendezvous-signature": signWebhook(hook.secret, body),
      "rendezvous-delivery": job.id ?? wait.id,
    };
    if (trace) headers.traceparent = trace.traceparent;
    if (trace?.tracestate) headers.tracestate = trace.tracestate;
    let res: Response;
    try {
      res = await fetch(hook.url, {
        method: "POST",
        headers,
        body,
        signal: AbortSignal.timeout(this.#opts.timeoutMs),
      });
      span?.setAttributes({ "http.response.status_code": res.status });
      if (!res.ok) throw new Error(`webhook answered ${res.status}`);
    } catch (err) {
      span?.fail(err);
      throw err;
    } finally {
      span?.end();
    }
    await this.#store.annotate(null, wait.id, "continuation_dispatched", { webhook: hook.url, status: res.status });
    this.#res.metrics.continuationsDispatched.inc({ channel: "webhook" });
  }
}
