/**
 * `@rendezvous/client/bullmq`: the BullMQ continuation transport, for trusted
 * deployments whose hosts may hold the rendezvous Redis credentials. Needs the
 * optional peers `bullmq` (and `ioredis`, which bullmq brings) installed.
 */
export {
  type Continuation,
  ContinuationWorker,
  type ContinuationWorkerOptions,
  continuationQueue,
} from "./continuations.js";
