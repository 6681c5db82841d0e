/**
 * `@rendezvous/client/bullmq`: the BullMQ continuation transport, for trusted
 * deployments whose hosts may hold the rendezvous Redis credentials. Needs the
 * optional peers `bullmq` (and `ioredis`, which bullmq brings) installed.
 */
/** The BullMQ transport's worker under the name hosts know from the main entry. */
export {
  BullmqContinuationWorker,
  BullmqContinuationWorker as ContinuationWorker,
  type BullmqContinuationWorkerOptions,
  type BullmqContinuationWorkerOptions as ContinuationWorkerOptions,
} from "./bullmq-worker.js";
export { type Continuation, type ContinuationHandler, continuationQueue } from "./continuation.js";
