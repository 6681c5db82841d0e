/**
 * The environment, parsed once at boot (API.md, Starting it). A bad value stops
 * startup with the variable's name.
 */
import { RendezvousError } from "@rendezvous/core";
import { z } from "zod";

export const Env = z.object({
  /** config file path */
  RENDEZVOUS_CONFIG: z.string().min(1).optional(),
  /** HTTP port (RENDEZVOUS_PORT wins over PORT) */
  RENDEZVOUS_PORT: z.coerce.number().int().min(0).max(65535).optional(),
  PORT: z.coerce.number().int().min(0).max(65535).optional(),
  /** HTTP bind address @defaultValue "127.0.0.1" */
  HOST: z.string().min(1).optional(),
  /** Redis URL; absent = embedded redis-server (start only) */
  REDIS_URL: z.string().min(1).optional(),
  /**
   * Prefix of every Redis key and BullMQ queue.
   * @defaultValue "rdv"
   */
  RENDEZVOUS_PREFIX: z
    .string()
    .regex(/^[A-Za-z0-9._-]{1,64}$/)
    .default("rdv"),
  /**
   * pino level.
   * @defaultValue "info"
   */
  LOG_LEVEL: z.enum(["trace", "debug", "info", "warn", "error", "fatal", "silent"]).default("info"),
});
export type Env = z.infer<typeof Env>;

export function parseEnv(source: NodeJS.ProcessEnv = process.env): Env {
  const result = Env.safeParse(source);
  if (!result.success) {
    const problems = result.error.issues.map((i) => `${i.path.join(".")}: ${i.message}`);
    throw new RendezvousError("invalid_config", `invalid environment: ${problems.join("; ")}`, { problems });
  }
  return result.data;
}
