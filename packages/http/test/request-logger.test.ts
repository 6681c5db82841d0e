import { type Bindings, type ChildLoggerOptions, pino } from "pino";
import { describe, expect, it } from "vitest";
import { lazyChildLogger } from "../src/request-logger.js";

function capture() {
  const lines: Array<Record<string, unknown>> = [];
  const root = pino({ level: "info" }, { write: (s: string) => lines.push(JSON.parse(s)) });
  let children = 0;
  // the parent as fastify sees it, counting the children made of it
  const logger = Object.assign(Object.create(root) as typeof root, {
    child: (bindings: Bindings, options?: ChildLoggerOptions) => {
      children++;
      return root.child(bindings, options);
    },
  });
  return { logger, lines, children: () => children };
}

describe("lazyChildLogger", () => {
  it("makes the child at the first log call, with the request's bindings and options; reading the level makes none", () => {
    const c = capture();
    const log = lazyChildLogger(c.logger, { reqId: "req-1" }, {});
    expect(log.level).toBe("info");
    expect(c.children()).toBe(0);
    log.warn({ code: "x" }, "first");
    log.error("second");
    expect(c.children()).toBe(1);
    expect(c.lines.map((l) => [l.reqId, l.msg, l.code])).toEqual([
      ["req-1", "first", "x"],
      ["req-1", "second", undefined],
    ]);
    const quiet = lazyChildLogger(c.logger, { reqId: "req-2" }, { level: "error" });
    expect(quiet.level).toBe("error");
    quiet.warn("dropped");
    expect(c.lines).toHaveLength(2);
    expect(quiet.child({ more: 1 }).level).toBe("error");
  });
});
