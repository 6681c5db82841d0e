export * from "./api-schemas.js";
export * from "./continuation-groups.js";
export * from "./errors.js";
export * from "./explain.js";
export * from "./schemas.js";
export * from "./token-schemas.js";
export * from "./type-patterns.js";
