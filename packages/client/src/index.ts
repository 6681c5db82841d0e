export {
  type Continuation,
  ContinuationWorker,
  type ContinuationWorkerOptions,
  continuationQueue,
} from "./continuations.js";
export {
  type ApiErrorBody,
  type ApiIssue,
  isRetryableStatus,
  RendezvousApiError,
  RendezvousNetworkError,
} from "./errors.js";
export { type ConsumeResult, HostClient, type HostClientOptions, type ListFilter } from "./host.js";
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
