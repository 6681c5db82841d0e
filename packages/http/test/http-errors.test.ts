/**
 * Redis trouble as the API answers it: `503 unavailable` with a `reason` and `retryAfter`,
 * never `500`. The replies are Redis's own texts (see the e2e redis-trouble test for them
 * coming from a real redis-server).
 */
import { describe, expect, it } from "vitest";
import { redisTrouble, toApiError } from "../src/http-errors.js";

const err = (message: string, extra: Record<string, unknown> = {}) => Object.assign(new Error(message), extra);

describe("redis trouble", () => {
  it.each([
    ["OOM command not allowed when used memory > 'maxmemory'.", "redis_oom"],
    ["OOM command not allowed when used memory > 'maxmemory'. script: b0e7, on @user_script:1.", "redis_oom"],
    ["Command timed out", "redis_timeout"],
    ["Connection is closed.", "redis_down"],
    ['Reached the max retries per request limit (which is 20). Refer to "maxRetriesPerRequest"', "redis_down"],
    ["LOADING Redis is loading the dataset in memory", "redis_down"],
    ["READONLY You can't write against a read only replica.", "redis_down"],
    ["CLUSTERDOWN The cluster is down", "redis_down"],
    ["MISCONF Redis is configured to save RDB snapshots, but it's currently unable to persist to disk.", "redis_down"],
    ["NOREPLICAS Not enough good replicas to write.", "redis_down"],
    ["BUSY Redis is busy running a script.", "redis_down"],
  ])("%s → %s", (message, reason) => {
    expect(redisTrouble(err(message))).toBe(reason);
    const apiError = toApiError(err(message));
    expect(apiError.statusCode).toBe(503);
    expect(apiError.toJSON().error).toMatchObject({ code: "unavailable", reason });
    expect(apiError.details.retryAfter).toBeGreaterThanOrEqual(1);
  });

  it("socket errors are redis_down; anything else stays a bare internal", () => {
    expect(redisTrouble(err("connect ECONNREFUSED 127.0.0.1:1", { code: "ECONNREFUSED" }))).toBe("redis_down");
    expect(redisTrouble(err("ERR unknown command"))).toBeUndefined();
    expect(toApiError(err("ERR unknown command")).toJSON()).toEqual({
      error: { code: "internal", message: "internal error" },
    });
  });
});
