export {
  authenticateHost,
  authenticateProducerHeaders,
  bearerToken,
  type CredentialIndex,
  computeSignature,
  type HostIdentity,
  indexCredentials,
  type ProducerHeaders,
  type ProducerIdentity,
  parseSignatureHeader,
  type RequestHeaders,
  readTenant,
  SIGNATURE_TOLERANCE_SEC,
  verifyProducerBody,
} from "./auth.js";
export {
  BODY_BUDGET_RETRY_AFTER_SEC,
  BodyBudget,
  type BodyBudgetOptions,
  clientKey,
  limitBodies,
} from "./body-budget.js";
export {
  frameworkErrors,
  lingerAfterTooLarge,
  type RedisTrouble,
  redisTrouble,
  redisUnavailable,
  sendApiError,
  toApiError,
} from "./http-errors.js";
export { type EventOutcome, IngestSystem, type IngestSystemDeps, MAX_BATCH } from "./ingest.js";
export { jsonBytesOver } from "./json-bounds.js";
export { RateLimiter, type Take } from "./rate-limit.js";
export { type IngestRoutesOptions, ingestRoutes } from "./routes.js";
export { clientAborted, closeUnreadBodies } from "./unread-body.js";
export {
  type Checked,
  EventValidator,
  type Issue,
  MAX_JSON_DEPTH,
  nestedDeeperThan,
  parseJsonBody,
  type Refused,
} from "./validation.js";
