export { Env, parseEnv } from "./env.js";
export { type OpsOptions, opsRoutes } from "./ops.js";
export { type RunningRoles, startRoles, WORKER_ROLES, type WorkerRole } from "./roles.js";
