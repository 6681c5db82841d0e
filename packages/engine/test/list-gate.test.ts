/**
 * The process-wide gate on wait records held by list requests: holders never wait (they
 * get fewer records), a lease that holds nothing waits first come first served, a wait
 * that lasts too long is `unavailable` (`list_busy`, `retryAfter`), and a lease released
 * while it waits leaves nothing held.
 */

import { isRendezvousError } from "@rendezvous/protocol";
import { describe, expect, it } from "vitest";
import { ListGate, listWaits } from "../src/index.js";
import { makeStore } from "./helpers.js";

describe("ListGate", () => {
  it("lets a lease take what fits; a holder gets fewer records without waiting", async () => {
    const gate = new ListGate(100, 1000);
    const a = gate.lease();
    expect(await a.admit([40, 40, 40])).toBe(2);
    expect(gate.held).toBe(80);
    // holding some: what fits now, never a wait
    expect(await a.admit([30])).toBe(0);
    expect(await a.admit([20, 5])).toBe(1);
    expect(gate.held).toBe(100);
    a.release();
    a.release(); // idempotent
    expect(gate.held).toBe(0);
    // a record larger than the gate goes through alone
    const big = gate.lease();
    expect(await big.admit([500, 1])).toBe(1);
    big.release();
    expect(gate.held).toBe(0);
  });

  it("a lease holding nothing waits its turn, first come first served, and later holders yield to it", async () => {
    const gate = new ListGate(100, 2000);
    const a = gate.lease();
    expect(await a.admit([90])).toBe(1);
    const order: string[] = [];
    const b = gate.lease();
    const c = gate.lease();
    const bDone = b.admit([50]).then((n) => order.push(`b${n}`));
    const cDone = c.admit([10]).then((n) => order.push(`c${n}`));
    await new Promise((r) => setTimeout(r, 20));
    expect(order).toEqual([]); // c's 10 bytes would fit, but b came first
    expect(gate.waiting).toBe(2);
    // a holder does not take room while others wait
    expect(await a.admit([1])).toBe(0);
    a.release();
    await Promise.all([bDone, cDone]);
    expect(order).toEqual(["b1", "c1"]);
    expect(gate.held).toBe(60);
    b.release();
    c.release();
    expect(gate.held).toBe(0);
  });

  it("a wait past waitMs is unavailable with reason list_busy and retryAfter; a lease released while waiting holds nothing", async () => {
    const gate = new ListGate(100, 50);
    const a = gate.lease();
    await a.admit([100]);
    const started = Date.now();
    await expect(gate.lease().admit([10])).rejects.toSatisfy(
      (e) => isRendezvousError(e, "unavailable") && e.details.reason === "list_busy" && e.details.retryAfter === 1,
    );
    expect(Date.now() - started).toBeLessThan(1000);
    expect(gate.waiting).toBe(0);

    const gone = new ListGate(100, 2000);
    const holder = gone.lease();
    await holder.admit([100]);
    const waiter = gone.lease();
    const pending = waiter.admit([30]);
    waiter.release(); // its client went away
    holder.release();
    expect(await pending).toBe(0);
    expect(gone.held).toBe(0);
  });

  it("a list request whose lease finds no room ends its page early, with a cursor that continues", async () => {
    const h = makeStore({ partitions: 2 });
    const made: string[] = [];
    for (let i = 0; i < 6; i++) {
      const { wait } = await h.store.register("acme", {
        runId: "run-g",
        position: `p${i}`,
        eventType: "job.done",
        correlationId: `g${i}`,
        metadata: { x: "g".repeat(1000) },
      });
      made.push(wait.id);
    }
    // room for about two of these records
    const gate = new ListGate(2500, 1000);
    const seen: string[] = [];
    let cursor: string | undefined;
    let pages = 0;
    do {
      const lease = gate.lease();
      const page = await listWaits(h.store, "acme", { runId: "run-g" }, { limit: 500, cursor, lease });
      expect(page.waits.length).toBeLessThanOrEqual(2);
      expect(page.waits.length).toBeGreaterThanOrEqual(1);
      lease.release();
      seen.push(...page.waits.map((w) => w.id));
      cursor = page.nextCursor ?? undefined;
      pages++;
    } while (cursor && pages < 20);
    expect(seen.sort()).toEqual([...made].sort());
    expect(gate.held).toBe(0);
  });
});
