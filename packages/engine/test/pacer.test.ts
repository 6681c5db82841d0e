import { setTimeout as sleep } from "node:timers/promises";
import { describe, expect, it } from "vitest";
import { MAX_REST_MS, Pacer } from "../src/pacer.js";

/** a step that keeps the event loop busy for `ms` (as handing out a batch does) */
function busy(ms: number): () => Promise<number> {
  return async () => {
    const t0 = performance.now();
    while (performance.now() - t0 < ms) {
      /* spin */
    }
    return performance.now();
  };
}

describe("Pacer", () => {
  it("rests after a full step about as long as it took, and not after a partial one", async () => {
    const pacer = new Pacer(1);
    const endFull = await pacer.run(true, busy(20));
    const afterFull = await pacer.run(false, async () => performance.now());
    // the step after a full 20 ms step starts ~20 ms after it, never sooner
    expect(afterFull - endFull).toBeGreaterThanOrEqual(18);
    const endPartial = await pacer.run(false, busy(20));
    const afterPartial = await pacer.run(false, async () => performance.now());
    expect(afterPartial - endPartial).toBeLessThan(10); // the partial step owed no rest
  });

  it("does not delay a lone step once the rest is over", async () => {
    const pacer = new Pacer(1);
    await pacer.run(true, busy(40));
    await sleep(60);
    const t0 = performance.now();
    const started = await pacer.run(false, async () => performance.now());
    expect(started - t0).toBeLessThan(10);
  });

  it("caps the rest at MAX_REST_MS", async () => {
    const pacer = new Pacer(10);
    const end = await pacer.run(true, busy(20));
    const started = await pacer.run(false, async () => performance.now());
    expect(started - end).toBeGreaterThanOrEqual(MAX_REST_MS - 2);
    expect(started - end).toBeLessThan(MAX_REST_MS + 30);
  });

  it("runs one step at a time, and two lanes take turns however many steps one queues", async () => {
    const pacer = new Pacer(0);
    const a = pacer.lane();
    const b = pacer.lane();
    const order: string[] = [];
    let running = 0;
    const step = (name: string) => async () => {
      running++;
      expect(running).toBe(1);
      await sleep(1);
      order.push(name);
      running--;
    };
    // five partitions of lane a queue their steps at once, lane b (a sequential loop) one after another
    const many = Promise.all([1, 2, 3, 4, 5].map((i) => a(true, step(`a${i}`))));
    const loop = (async () => {
      for (let i = 1; i <= 3; i++) await b(true, step(`b${i}`));
    })();
    await Promise.all([many, loop]);
    expect(order.slice(0, 6)).toEqual(["a1", "b1", "a2", "b2", "a3", "b3"]);
    expect(order).toHaveLength(8);
  });

  it("a failed step does not stop the ones behind it", async () => {
    const pacer = new Pacer(1);
    const failed = pacer.run(true, async () => {
      throw new Error("boom");
    });
    const next = pacer.run(false, async () => "ran");
    await expect(failed).rejects.toThrow("boom");
    await expect(next).resolves.toBe("ran");
  });
});
