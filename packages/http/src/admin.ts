/**
 * Bull Board at /admin/queues for the timeout, webhook and continuation queues,
 * behind the admin token (Bearer, or the password of basic auth).
 */
import { createHash, timingSafeEqual } from "node:crypto";
import { createBullBoard } from "@bull-board/api";
import { BullMQAdapter } from "@bull-board/api/bullMQAdapter";
import { FastifyAdapter } from "@bull-board/fastify";
import type { Resources } from "@rendezvous/engine";
import { isContinuationQueueName, RendezvousError } from "@rendezvous/protocol";
import { Queue } from "bullmq";
import type { FastifyPluginAsync, FastifyRequest } from "fastify";
import { currentQueueNames, type QueueNames } from "./queue-metrics.js";

export interface AdminQueuesOptions {
  res: Resources;
  /** a function: the queues as they are now (a tenant created at run time shows on its next request) */
  queueNames: QueueNames;
}

const BASE = "/admin/queues";
/** Where Bull Board is mounted. */
export const BOARD_PATH = BASE;

function digest(value: string): Buffer {
  return createHash("sha256").update(value).digest();
}

/** The admin token presented as Bearer or as the basic-auth password, if any. */
function presentedToken(request: FastifyRequest): string | undefined {
  const header = request.headers.authorization;
  if (typeof header !== "string") return undefined;
  const [scheme, value] = header.split(" ", 2);
  if (!value) return undefined;
  if (scheme?.toLowerCase() === "bearer") return value.trim();
  if (scheme?.toLowerCase() === "basic") {
    const decoded = Buffer.from(value, "base64").toString();
    const colon = decoded.indexOf(":");
    return colon >= 0 ? decoded.slice(colon + 1) : undefined;
  }
  return undefined;
}

/**
 * The Bull Board API request that may re-run completed jobs: all of a queue's
 * (`…/retry/completed`) or one job (`…/<jobId>/retry`, whatever its state).
 */
function retryRequest(method: string, url: string): { queue: string; jobId?: string } | undefined {
  if (method !== "PUT") return undefined;
  const all = /^\/admin\/queues\/api\/queues\/([^/?]+)\/retry\/completed(?:[?]|$)/.exec(url);
  const one = all ? undefined : /^\/admin\/queues\/api\/queues\/([^/?]+)\/([^/?]+)\/retry(?:[?]|$)/.exec(url);
  const m = all ?? one;
  if (!m?.[1]) return undefined;
  try {
    return { queue: decodeURIComponent(m[1]), jobId: one?.[2] ? decodeURIComponent(one[2]) : undefined };
  } catch {
    return undefined;
  }
}

/** Hides the board's retry of completed jobs (an option the adapter reads, not in its options type). */
const NO_COMPLETED_RETRIES = { allowRetries: true, allowCompletedRetries: false };

/** A queue's board adapter: no retry of completed jobs on a continuation queue. */
function adapterOf(q: Queue): BullMQAdapter {
  return new BullMQAdapter(q, isContinuationQueueName(q.name) ? NO_COMPLETED_RETRIES : {});
}

export const adminQueues: FastifyPluginAsync<AdminQueuesOptions> = async (app, opts) => {
  const { res } = opts;
  const expected = res.config.adminToken ? digest(res.config.adminToken) : undefined;
  const connection = res.connect("bull-board", { blocking: true });
  const queues = new Map<string, Queue>();
  const newQueues = (): Queue[] => {
    const added: Queue[] = [];
    for (const name of currentQueueNames(opts.queueNames)) {
      if (queues.has(name)) continue;
      const q = new Queue(name, { connection, prefix: res.queuePrefix });
      queues.set(name, q);
      added.push(q);
    }
    return added;
  };
  app.addHook("onClose", async () => {
    await Promise.all([...queues.values()].map((q) => q.close()));
  });

  await app.register(async (scope) => {
    scope.addHook("onRequest", async (request, reply) => {
      const token = presentedToken(request);
      if (!expected || token === undefined || !timingSafeEqual(digest(token), expected)) {
        reply.header("www-authenticate", 'Basic realm="rendezvous admin"');
        const err = new RendezvousError("unauthorized");
        return reply.code(401).send(err.toJSON());
      }
    });
    // a completed continuation is compacted (docs/api.md, Continuations): re-running it would
    // hand the host a stub, so neither the board's button nor its API re-runs one
    scope.addHook("onRequest", async (request, reply) => {
      const retry = retryRequest(request.method, request.url);
      if (!retry || !isContinuationQueueName(retry.queue)) return;
      // one job: refused only when it is completed (a failed one keeps its Wait and is retried)
      const q = retry.jobId === undefined ? undefined : queues.get(retry.queue);
      if (retry.jobId !== undefined && (!q || (await q.getJobState(retry.jobId)) !== "completed")) return;
      const err = new RendezvousError("retry_not_allowed");
      return reply.code(409).send(err.toJSON());
    });
    const serverAdapter = new FastifyAdapter();
    serverAdapter.setBasePath(BASE);
    const board = createBullBoard({
      queues: newQueues().map(adapterOf),
      serverAdapter,
      // the way back: waits are not jobs, the console explains them
      options: { uiConfig: { miscLinks: [{ text: "Rendezvous console", url: "/console/" }] } },
    });
    // queues of tenants created since (the registry): added before the board answers
    scope.addHook("preHandler", async () => {
      for (const q of newQueues()) board.addQueue(adapterOf(q));
    });
    await scope.register(serverAdapter.registerPlugin(), { prefix: BASE });
  });
};
