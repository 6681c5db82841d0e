export {
  authenticateHost,
  authenticateProducer,
  bearerToken,
  type CredentialIndex,
  computeSignature,
  type HostIdentity,
  indexCredentials,
  type ProducerIdentity,
  parseSignatureHeader,
  type RequestHeaders,
  readTenant,
  SIGNATURE_TOLERANCE_SEC,
} from "./auth.js";
export {
  frameworkErrors,
  isUnavailable,
  lingerAfterTooLarge,
  type RedisTrouble,
  redisTrouble,
  redisUnavailable,
  sendApiError,
  toApiError,
} from "./http-errors.js";
export { type EventOutcome, IngestSystem, type IngestSystemDeps, MAX_BATCH } from "./ingest.js";
export { RateLimiter, type Take } from "./rate-limit.js";
export { type IngestRoutesOptions, ingestRoutes } from "./routes.js";
export {
  type Checked,
  EventValidator,
  type Issue,
  MAX_JSON_DEPTH,
  nestedDeeperThan,
  parseJsonBody,
  type Refused,
} from "./validation.js";
