import { readFileSync } from "node:fs";
import { isRendezvousError } from "@rendezvous/protocol";
import { describe, expect, it } from "vitest";
import { parseConfig, parseFailpoints, retentionFor } from "../src/index.js";

function problem(input: unknown): string {
  try {
    parseConfig(input);
  } catch (err) {
    if (isRendezvousError(err, "invalid_config")) return err.message;
    throw err;
  }
  throw new Error("config was accepted");
}

describe("config", () => {
  it("accepts the example of docs/api.md and fills defaults", () => {
    const api = readFileSync(new URL("../../../docs/api.md", import.meta.url), "utf8");
    const block = /## Config file \(JSON\)\n+```json\n([\s\S]*?)```/.exec(api)?.[1];
    expect(block).toBeTruthy();
    const config = parseConfig(JSON.parse(block as string));
    expect(config.partitions).toBe(16);
    expect(config.maxTimeoutMs).toBe(365 * 86_400_000);
    expect(config.tenants.acme?.producers.billing?.eventTypes).toEqual(["order.paid", "order.*"]);
    expect(retentionFor(config, "order.paid")).toBe(3_600_000);
    expect(retentionFor(config, "other")).toBe(86_400_000);
  });

  it("keeps completed continuations a day and compacts them after 10 s by default (docs/api.md, Continuations)", () => {
    const config = parseConfig({});
    expect(config.continuationRetentionMs).toBe(86_400_000);
    expect(config.continuationCompactAfterMs).toBe(10_000);
    expect(parseConfig({ continuationRetentionMs: 60_000, continuationCompactAfterMs: 0 })).toMatchObject({
      continuationRetentionMs: 60_000,
      continuationCompactAfterMs: 0,
    });
    expect(problem({ continuationRetentionMs: 59_999 })).toContain("continuationRetentionMs");
    expect(problem({ continuationCompactAfterMs: -1 })).toContain("continuationCompactAfterMs");
  });

  it("names the bad field", () => {
    expect(problem({ partitions: 0 })).toContain("partitions");
    expect(problem({ claimIdleMs: "soon" })).toContain("claimIdleMs");
    expect(problem({ tenants: { acme: { producers: { billing: { eventTypes: ["x"] } } } } })).toContain(
      "tenants.acme.producers.billing: a producer needs at least one of secrets or keys",
    );
    expect(
      problem({ tenants: { acme: { producers: { billing: { keys: ["k"], eventTypes: ["Bad Type"] } } } } }),
    ).toContain("tenants.acme.producers.billing.eventTypes.0");
    expect(problem({ tenants: { acme: { hostKey: ["k"] } } })).toContain("tenants.acme");
    expect(problem({ eventTypes: { "order.paid": { retentionMs: -1 } } })).toContain(
      "eventTypes.order.paid.retentionMs",
    );
    expect(problem({ tenants: { a: { hostKeys: ["same"] }, b: { hostKeys: ["same"] } } })).toContain(
      "tenants.b.hostKeys",
    );
  });
});

describe("config: credentials", () => {
  const ADMIN = "adm_secret_value_42";
  it("refuses a host key, producer key or secret, or webhook secret equal to adminToken, naming the field and not the value", () => {
    const cases: Array<[unknown, string]> = [
      [{ acme: { hostKeys: ["hk_ok", ADMIN] } }, "tenants.acme.hostKeys.1: equals adminToken"],
      [
        { acme: { producers: { billing: { keys: [ADMIN], eventTypes: ["*"] } } } },
        "tenants.acme.producers.billing.keys.0: equals adminToken",
      ],
      [
        { acme: { producers: { billing: { secrets: [ADMIN], eventTypes: ["*"] } } } },
        "tenants.acme.producers.billing.secrets.0: equals adminToken",
      ],
      [
        { acme: { webhook: { url: "https://h.example/c", secret: ADMIN } } },
        "tenants.acme.webhook.secret: equals adminToken",
      ],
    ];
    for (const [tenants, expected] of cases) {
      const message = problem({ adminToken: ADMIN, tenants });
      expect(message).toContain(expected);
      expect(message).not.toContain(ADMIN);
    }
    // the same values are fine without an admin token, or with another one
    expect(() => parseConfig({ tenants: { acme: { hostKeys: [ADMIN] } } })).not.toThrow();
    expect(() => parseConfig({ adminToken: "adm_other", tenants: { acme: { hostKeys: [ADMIN] } } })).not.toThrow();
  });

  it("refuses a host key shared by two tenants, naming both fields and not the key", () => {
    const message = problem({
      tenants: { a: { hostKeys: ["hk_shared_1"] }, b: { hostKeys: ["hk_x", "hk_shared_1"] } },
    });
    expect(message).toContain("tenants.b.hostKeys: key also used by tenants.a.hostKeys");
    expect(message).not.toContain("hk_shared_1");
  });
});

describe("failpoints", () => {
  it("parses armed points and refuses unknown names or actions", () => {
    expect([...parseFailpoints("matcher.after-match=crash, ingest.after-append=crash")]).toEqual([
      "matcher.after-match",
      "ingest.after-append",
    ]);
    expect(parseFailpoints(undefined).size).toBe(0);
    expect(() => parseFailpoints("matcher.after-nothing=crash")).toThrow(/unknown failpoint/);
    expect(() => parseFailpoints("matcher.after-match=sleep")).toThrow(/unknown action/);
  });
});
