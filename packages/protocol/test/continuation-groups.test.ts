/**
 * Named continuation groups in the config (docs/api.md, Config file): the schema, the
 * routing (first matching group wins, exact or `prefix*`, none = the default queue), the
 * queue names, and the refusal of two queues with one name.
 */

import { parseConfig } from "@rendezvous/engine";
import { describe, expect, it } from "vitest";
import { continuationGroupOf, continuationQueueName, continuationQueues, isRendezvousError } from "../src/index.js";

function problem(input: unknown): string {
  try {
    parseConfig(input);
  } catch (err) {
    if (isRendezvousError(err, "invalid_config")) return err.message;
    throw err;
  }
  throw new Error("config was accepted");
}

const tenant = (continuationGroups: unknown) => ({ tenants: { acme: { hostKeys: ["hk_a"], continuationGroups } } });

describe("continuation groups: config", () => {
  it("accepts groups and keeps their order; a tenant without groups has none", () => {
    const config = parseConfig({
      tenants: {
        acme: {
          continuationGroups: {
            payments: { eventTypes: ["payment.*"] },
            "slow_reports-2.x": { eventTypes: ["report.daily", "*"] },
          },
        },
        globex: {},
      },
    });
    expect(Object.keys(config.tenants.acme?.continuationGroups ?? {})).toEqual(["payments", "slow_reports-2.x"]);
    expect(config.tenants.globex?.continuationGroups).toBeUndefined();
  });

  it("refuses bad group names and patterns, naming the field", () => {
    for (const name of ["", "pay ments", "a/b", "x".repeat(65), "é"]) {
      expect(problem(tenant({ [name]: { eventTypes: ["payment.*"] } }))).toContain("tenants.acme.continuationGroups");
    }
    expect(problem(tenant({ payments: { eventTypes: [] } }))).toContain(
      "tenants.acme.continuationGroups.payments.eventTypes",
    );
    expect(problem(tenant({ payments: { eventTypes: ["Payment.*"] } }))).toContain(
      "continuationGroups.payments.eventTypes",
    );
    expect(problem(tenant({ payments: { eventTypes: ["pay*ment"] } }))).toContain(
      "continuationGroups.payments.eventTypes",
    );
    expect(problem(tenant({ payments: { eventTypes: ["a"], extra: 1 } }))).toContain("continuationGroups.payments");
    expect(problem(tenant({ payments: {} }))).toContain("continuationGroups.payments.eventTypes");
  });

  it("refuses a group whose queue is another tenant's queue, naming the group", () => {
    const msg = problem({
      tenants: { a: { continuationGroups: { b: { eventTypes: ["x"] } } }, "a.b": {} },
    });
    expect(msg).toContain("tenants.a.continuationGroups.b");
    expect(msg).toContain("continuations.a.b");
    // two tenants' groups can collide too: tenant a's group "b.c" and tenant a.b's group "c"
    expect(
      problem({
        tenants: {
          a: { continuationGroups: { "b.c": { eventTypes: ["x"] } } },
          "a.b": { continuationGroups: { c: { eventTypes: ["x"] } } },
        },
      }),
    ).toContain("continuations.a.b.c");
  });
});

describe("continuation groups: routing and names", () => {
  const groups = {
    refunds: { eventTypes: ["payment.refund"] },
    payments: { eventTypes: ["payment.*", "invoice.paid"] },
    late: { eventTypes: ["payment.refund", "report.*"] },
  };

  it("the first group whose patterns match wins; exact or prefix; none = the default queue", () => {
    expect(continuationGroupOf(groups, "payment.refund")).toBe("refunds");
    expect(continuationGroupOf(groups, "payment.settled")).toBe("payments");
    expect(continuationGroupOf(groups, "invoice.paid")).toBe("payments");
    expect(continuationGroupOf(groups, "invoice.paid.late")).toBeUndefined();
    expect(continuationGroupOf(groups, "report.daily")).toBe("late");
    expect(continuationGroupOf(groups, "order.shipped")).toBeUndefined();
    expect(continuationGroupOf(groups, "payment")).toBeUndefined(); // "payment.*" needs the dot
    expect(continuationGroupOf(undefined, "payment.settled")).toBeUndefined();
    expect(continuationGroupOf({ all: { eventTypes: ["*"] } }, "anything")).toBe("all");
  });

  it("names the queues: the default one unchanged, a group's after it; every queue once", () => {
    expect(continuationQueueName("acme")).toBe("continuations.acme");
    expect(continuationQueueName("acme", "payments")).toBe("continuations.acme.payments");
    expect(
      continuationQueues({ acme: { continuationGroups: { payments: { eventTypes: ["payment.*"] } } }, globex: {} }),
    ).toEqual(["continuations.acme", "continuations.globex", "continuations.acme.payments"]);
  });
});
