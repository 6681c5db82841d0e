/**
 * The two entries: the main one loads no bullmq (its `ContinuationWorker` is the HTTP
 * worker; given a `connection` it loads the BullMQ one), `./bullmq` is the BullMQ
 * transport with its full types.
 */

import * as main from "@rendezvous/client";
import * as bullmqEntry from "@rendezvous/client/bullmq";
import type { ConnectionOptions } from "bullmq";
import { describe, expect, expectTypeOf, it } from "vitest";

describe("entries", () => {
  it("./bullmq has the BullMQ worker and the queue name; the main entry has the HTTP worker", () => {
    expect(bullmqEntry.continuationQueue("acme")).toBe("continuations.acme");
    expect(typeof bullmqEntry.ContinuationWorker).toBe("function");
    expect(typeof main.ContinuationWorker).toBe("function");
    expect(main).not.toHaveProperty("continuationQueue");
    expectTypeOf<bullmqEntry.ContinuationWorkerOptions["connection"]>().toEqualTypeOf<ConnectionOptions>();
    expectTypeOf<main.Continuation>().toEqualTypeOf<bullmqEntry.Continuation>();
  });
});
