export { type OpsOptions, opsRoutes } from "@rendezvous/http";
export { Env, parseEnv } from "./env.js";
export { type RunningRoles, startRoles, WORKER_ROLES, type WorkerRole } from "./roles.js";
