export {
  ACCESS_LOG_MODES,
  type AccessLine,
  AccessLog,
  type AccessLogMode,
  accessLine,
  ERRORS_4XX_PER_SEC,
} from "./access-log.js";
export * from "./admin.js";
export { adminProducerRoutes } from "./admin-producer-routes.js";
export { type AdminRoutesOptions, adminRoutes } from "./admin-routes.js";
export { adminActorId } from "./admin-schemas.js";
export * from "./app.js";
export {
  authenticateHost,
  authenticateProducerHeaders,
  bearerToken,
  type CredentialIndex,
  computeSignature,
  type HostIdentity,
  indexCredentials,
  indexView,
  liveCredentials,
  type ProducerHeaders,
  type ProducerIdentity,
  parseSignatureHeader,
  type RequestHeaders,
  readTenant,
  SIGNATURE_TOLERANCE_SEC,
  verifyProducerBody,
} from "./auth.js";
export * from "./bodies.js";
export {
  BODY_BUDGET_RETRY_AFTER_SEC,
  BodyBudget,
  type BodyBudgetOptions,
  clientKey,
  limitBodies,
} from "./body-budget.js";
export * from "./connections.js";
export * from "./console.js";
export * from "./console-api.js";
export * from "./console-stats.js";
export * from "./continuation-claims.js";
export * from "./continuation-routes.js";
export * from "./host-routes.js";
export {
  frameworkErrors,
  lingerAfterTooLarge,
  type RedisTrouble,
  redisTrouble,
  redisUnavailable,
  sendApiError,
  toApiError,
} from "./http-errors.js";
export { HttpMetrics, methodOf, routeOf, UNMATCHED_ROUTE } from "./http-metrics.js";
export { jsonBytesOver } from "./json-bounds.js";
export * from "./limits.js";
export * from "./openapi.js";
export * from "./openapi-components.js";
export * from "./ops.js";
export { MAX_BATCH, ProducerIngest, type ProducerIngestDeps } from "./producers/ingest.js";
export { type IngestRoutesOptions, ingestRoutes } from "./producers/routes.js";
export {
  type Checked,
  EventValidator,
  type Issue,
  MAX_JSON_DEPTH,
  nestedDeeperThan,
  parseJsonBody,
  type Refused,
} from "./producers/validation.js";
export * from "./queue-metrics.js";
export { QuotaGate } from "./rate-limit.js";
export * from "./readiness.js";
export { type Admission, WindowLimiter } from "./token-limits.js";
export { issuedToken, redactTokenUrl, type TokenRoutesOptions, tokenRoutes } from "./token-routes.js";
export { clientAborted, closeUnreadBodies } from "./unread-body.js";
export { type WaitTokenRoutesOptions, waitTokenRoutes } from "./wait-token-routes.js";
