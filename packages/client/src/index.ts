export type { BullmqContinuationWorker, BullmqContinuationWorkerOptions } from "./bullmq-worker.js";
export { type Continuation, type ContinuationHandler, continuationQueue } from "./continuation.js";
export {
  ContinuationWorker,
  type ContinuationWorkerOptions,
  type HttpContinuationWorkerOptions,
} from "./continuation-worker.js";
export {
  type ApiErrorBody,
  type ApiIssue,
  isRetryableStatus,
  RendezvousApiError,
  RendezvousNetworkError,
} from "./errors.js";
export {
  type ClaimRequest,
  type ConsumeResult,
  type ContinuationLease,
  HostClient,
  type HostClientOptions,
  type ListFilter,
} from "./host.js";
export {
  type BatchResult,
  MAX_BATCH,
  ProducerClient,
  type ProducerClientOptions,
  type ProducerCredential,
  type PublishResult,
} from "./producer.js";
export { type Attempt, backoff, type RetryOptions, withRetry } from "./retry.js";
export { signatureHeader } from "./signing.js";
