/**
 * `@rendezvous/client`: the producer and host clients over HTTP and the continuation
 * worker over HTTP, with no dependency at run time beyond Node. The BullMQ transport is
 * `@rendezvous/client/bullmq` (optional peers `bullmq` and `ioredis`).
 */
export type { Continuation, ContinuationHandler } from "./continuation.js";
export {
  ContinuationWorker,
  type ContinuationWorkerOptions,
  type HttpContinuationWorkerOptions,
  type QueueContinuationWorkerOptions,
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
export type {
  DeliverRequest,
  EventTypeField,
  LaunchAndWaitRequest,
  WaitFields,
  WaitForRequest,
} from "./requests.js";
export { type Attempt, backoff, type RetryOptions, withRetry } from "./retry.js";
export { signatureHeader } from "./signing.js";
export { resultOf, TokenClient, type TokenClientOptions, type TokenResult, type WaitResult } from "./tokens.js";
export type * from "./wire.js";
