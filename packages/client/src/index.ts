/**
 * `@rendezvous/client`: the producer and host clients over HTTP, with no dependency
 * at run time beyond Node. The BullMQ transport is `@rendezvous/client/bullmq`.
 */
export type { Continuation } from "./continuation.js";
export {
  type ApiErrorBody,
  type ApiIssue,
  isRetryableStatus,
  RendezvousApiError,
  RendezvousNetworkError,
} from "./errors.js";
export { type ConsumeResult, HostClient, type HostClientOptions, type ListFilter } from "./host.js";
export {
  ContinuationWorker,
  type LegacyContinuationWorkerOptions as ContinuationWorkerOptions,
  type QueueWorker,
} from "./legacy-worker.js";
export {
  type BatchResult,
  MAX_BATCH,
  ProducerClient,
  type ProducerClientOptions,
  type ProducerCredential,
  type PublishResult,
} from "./producer.js";
export type {
  DeliverRequest,
  EventTypeField,
  LaunchAndWaitRequest,
  WaitFields,
  WaitForRequest,
} from "./requests.js";
export { type Attempt, backoff, type RetryOptions, withRetry } from "./retry.js";
export { signatureHeader } from "./signing.js";
export type * from "./wire.js";
