/**
 * The installed client names the BullMQ queues without depending on @rendezvous/protocol; its
 * `continuationQueue` must name what the server's `continuationQueueName` names.
 */
import { continuationQueueName } from "@rendezvous/protocol";
import { describe, expect, it } from "vitest";
import { continuationQueue } from "../src/bullmq.js";

describe("continuationQueue", () => {
  it("agrees with the server's continuationQueueName, with and without a group", () => {
    for (const tenant of ["acme", "a.b", "T-1_x"]) {
      expect(continuationQueue(tenant)).toBe(continuationQueueName(tenant));
      for (const group of ["payments", "b.c", "G_2-x"]) {
        expect(continuationQueue(tenant, group)).toBe(continuationQueueName(tenant, group));
      }
    }
  });
});
