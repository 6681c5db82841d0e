import { isRendezvousError } from "@rendezvous/protocol";
import { describe, expect, it } from "vitest";
import { makeStore } from "./helpers.js";

const wait = (runId: string, correlationId: string, extra: Record<string, unknown> = {}) => ({
  runId,
  position: "approve",
  eventType: "human.approval",
  correlationId,
  ...extra,
});

describe("deliver", () => {
  it("zero matches is a reported outcome, not an error", async () => {
    const h = makeStore();
    expect(await h.store.deliver("acme", { eventType: "human.approval" })).toEqual({ delivered: [], matched: 0 });
  });

  it("resolves the one waiting wait of a type without a correlation id", async () => {
    const h = makeStore({ partitions: 8 });
    const { wait: w } = await h.store.register("acme", wait("run-1", "c-1"));
    const r = await h.store.deliver("acme", { eventType: "human.approval", payload: { ok: true } });
    expect(r).toEqual({ delivered: [w.id], matched: 1 });
    const after = await h.store.getWait("acme", w.id);
    expect(after?.resolution).toMatchObject({ kind: "deliver", payload: { ok: true } });
  });

  it("refuses ambiguity with the candidates and resolves nothing, unless all", async () => {
    const h = makeStore({ partitions: 8 });
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) ids.push((await h.store.register("acme", wait(`run-${i}`, `c-${i}`))).wait.id);
    const err = await h.store.deliver("acme", { eventType: "human.approval" }).catch((e) => e);
    expect(isRendezvousError(err, "ambiguous")).toBe(true);
    expect([...(err.details.candidates as string[])].sort()).toEqual([...ids].sort());
    for (const id of ids) expect((await h.store.getWait("acme", id))?.state).toBe("waiting");

    const narrowed = await h.store.deliver("acme", { eventType: "human.approval", correlationId: "c-3" });
    expect(narrowed).toEqual({ delivered: [ids[3]], matched: 1 });

    const all = await h.store.deliver("acme", { eventType: "human.approval", all: true });
    expect(all.matched).toBe(4);
    expect([...all.delivered].sort()).toEqual(ids.filter((_, i) => i !== 3).sort());
  });

  it("never resolves a wait past its deadline, nor another tenant's", async () => {
    const h = makeStore();
    const { wait: expired } = await h.store.register("acme", wait("run-1", "c-1", { timeoutMs: 100 }));
    await h.store.register("globex", wait("run-2", "c-1"));
    h.tick(101);
    expect(await h.store.deliver("acme", { eventType: "human.approval" })).toEqual({ delivered: [], matched: 0 });
    expect((await h.store.getWait("acme", expired.id))?.state).toBe("waiting");
    expect((await h.store.timeout(expired.id)).outcome).toBe("timed_out");
  });
});
