/**
 * Request loggers made when first used. Fastify gives every request a child logger (its
 * `reqId` bound); a pino child serializes and redacts its bindings when it is made, and
 * nearly every request logs nothing (request logging is off): `lazyChildLogger` makes
 * the child only when the request logs, with the same bindings and options.
 */
import type { FastifyBaseLogger } from "fastify";

type Bindings = Parameters<FastifyBaseLogger["child"]>[0];
type ChildOptions = Parameters<FastifyBaseLogger["child"]>[1];
type Method = "fatal" | "error" | "warn" | "info" | "debug" | "trace" | "silent";

function call(logger: FastifyBaseLogger, method: Method, args: unknown[]): void {
  (logger[method] as (...a: unknown[]) => void).apply(logger, args);
}

/** A child logger that is made at the first call that may log. */
class LazyChild {
  #child: FastifyBaseLogger | null = null;

  constructor(
    private readonly parent: FastifyBaseLogger,
    private readonly bindings: Bindings,
    private readonly options: ChildOptions,
  ) {}

  get logger(): FastifyBaseLogger {
    this.#child ??= this.parent.child(this.bindings, this.options);
    return this.#child;
  }

  get level(): string {
    return this.#child?.level ?? this.options?.level ?? this.parent.level;
  }

  set level(level: string) {
    this.logger.level = level;
  }

  // methods on the prototype, not closures per request; pino's overloads forwarded as they are
  fatal(...args: unknown[]): void {
    call(this.logger, "fatal", args);
  }
  error(...args: unknown[]): void {
    call(this.logger, "error", args);
  }
  warn(...args: unknown[]): void {
    call(this.logger, "warn", args);
  }
  info(...args: unknown[]): void {
    call(this.logger, "info", args);
  }
  debug(...args: unknown[]): void {
    call(this.logger, "debug", args);
  }
  trace(...args: unknown[]): void {
    call(this.logger, "trace", args);
  }
  silent(...args: unknown[]): void {
    call(this.logger, "silent", args);
  }

  child(bindings: Bindings, options?: ChildOptions): FastifyBaseLogger {
    return this.logger.child(bindings, options);
  }
}

/** Fastify's `childLoggerFactory`: the request's child logger, made at its first use. */
export function lazyChildLogger(
  logger: FastifyBaseLogger,
  bindings: Bindings,
  options: ChildOptions,
): FastifyBaseLogger {
  return new LazyChild(logger, bindings, options) as unknown as FastifyBaseLogger;
}
