import { type Logger, type LoggerOptions, pino } from "pino";

/** Paths redacted in every log line: credentials and signatures never reach logs. */
export const REDACT_PATHS = [
  "req.headers.authorization",
  "req.headers['rendezvous-signature']",
  "headers.authorization",
  "headers['rendezvous-signature']",
  "*.secret",
  "*.secrets",
  "*.keys",
  "*.hostKeys",
  "*.adminToken",
  "*.password",
  "config.tenants",
];

export type { Logger };

/** The root logger: pino, LOG_LEVEL (default info), secrets redacted by config. */
export function createLogger(opts: LoggerOptions = {}): Logger {
  return pino({
    level: process.env.LOG_LEVEL ?? "info",
    redact: { paths: REDACT_PATHS, censor: "[redacted]" },
    ...opts,
  });
}
