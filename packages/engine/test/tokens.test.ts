import { isRendezvousError, type Wait } from "@rendezvous/protocol";
import { describe, expect, it } from "vitest";
import { tokenHash } from "../src/formats/completion-token.js";
import { type Harness, makeStore } from "./helpers.js";

const spec = (runId: string, extra: Record<string, unknown> = {}) => ({
  runId,
  position: "approve",
  eventType: "human.approval",
  correlationId: `c-${runId}`,
  ...extra,
});

async function codeOf(p: Promise<unknown>): Promise<string> {
  try {
    await p;
    return "ok";
  } catch (err) {
    if (isRendezvousError(err)) return err.code;
    throw err;
  }
}

async function rawRecord(h: Harness, waitId: string): Promise<string | null> {
  const p = h.store.keys.waitPartition(waitId) as number;
  return h.redis.hget(h.store.keys.partition(p).waits, waitId);
}

async function outboxEntriesFor(h: Harness, waitId: string): Promise<number> {
  const p = h.store.keys.waitPartition(waitId) as number;
  const entries = await h.redis.xrange(h.store.keys.partition(p).outbox, "-", "+");
  return entries.filter(([, fields]) => fields[1] === waitId).length;
}

async function deadlineScore(h: Harness, waitId: string): Promise<string | null> {
  const p = h.store.keys.waitPartition(waitId) as number;
  return h.redis.zscore(h.store.keys.partition(p).deadlines, waitId);
}

describe("completion tokens", () => {
  it("is issued once on creation, stored only as its hash, and not shown again on re-registration", async () => {
    const h = makeStore();
    const first = await h.store.register("acme", spec("run-1", { token: true, timeoutMs: 60_000 }));
    expect(first.created).toBe(true);
    const token = first.token as string;
    expect(token).toMatch(/^[A-Za-z0-9._~-]{1,300}$/);
    expect(first.wait.token).toEqual({ issuedAt: first.wait.createdAt });
    expect(first.wait.history.map((e) => e.what)).toEqual(["registered", "token_issued"]);
    const raw = (await rawRecord(h, first.wait.id)) as string;
    expect(raw).not.toContain(token.split("~")[2]);
    expect(raw).toContain(tokenHash(token));

    const again = await h.store.register("acme", spec("run-1", { token: true, timeoutMs: 60_000 }));
    expect(again.created).toBe(false);
    expect(again.token).toBeUndefined();
    // `token` is not part of the definition
    const without = await h.store.register("acme", spec("run-1", { timeoutMs: 60_000 }));
    expect(without.created).toBe(false);
  });

  it("completes the wait with a payload (kind token, outcome success), once", async () => {
    const h = makeStore();
    const { wait, token } = await h.store.register("acme", spec("run-1", { token: true, timeoutMs: 60_000 }));
    h.tick(5);
    const done = await h.store.completeByToken(token as string, { outcome: "success", payload: { ok: 1 } });
    expect(done.state).toBe("resolved");
    expect(done.resolution).toMatchObject({ kind: "token", outcome: "success", payload: { ok: 1 } });
    expect(done.history.at(-1)).toMatchObject({ what: "resolved", kind: "token", outcome: "success" });
    expect(await outboxEntriesFor(h, wait.id)).toBe(1);
    expect(await deadlineScore(h, wait.id)).toBeNull();
    const before = await rawRecord(h, wait.id);
    expect(await codeOf(h.store.completeByToken(token as string, { outcome: "success" }))).toBe("not_waiting");
    expect(
      await codeOf(h.store.completeByToken(token as string, { outcome: "failure", error: { message: "x" } })),
    ).toBe("not_waiting");
    expect(await rawRecord(h, wait.id)).toBe(before);
  });

  it("fails the wait with an error object (resolved, outcome failure)", async () => {
    const h = makeStore();
    const { token } = await h.store.register("acme", spec("run-1", { token: true }));
    const failed = await h.store.completeByToken(token as string, {
      outcome: "failure",
      error: { message: "card declined", code: "E42" },
    });
    expect(failed.state).toBe("resolved");
    expect(failed.resolution).toMatchObject({
      kind: "token",
      outcome: "failure",
      error: { message: "card declined", code: "E42" },
    });
  });

  it("refuses a malformed, tampered, rotated or foreign token alike (token_invalid), changing nothing", async () => {
    const h = makeStore();
    const { wait, token } = await h.store.register("acme", spec("run-1", { token: true }));
    const t = token as string;
    const tampered = `${t.slice(0, -1)}${t.endsWith("A") ? "B" : "A"}`;
    const before = await rawRecord(h, wait.id);
    for (const bad of ["", "nope", tampered, `rt1~w999.x~${t.split("~")[2]}`, `${t}x`]) {
      expect(await codeOf(h.store.completeByToken(bad, { outcome: "success" })), bad).toBe("token_invalid");
      expect(await codeOf(h.store.heartbeatByToken(bad)), bad).toBe("token_invalid");
    }
    expect(await rawRecord(h, wait.id)).toBe(before);

    const rotated = await h.store.rotateToken("acme", wait.id);
    expect(rotated.token).not.toBe(t);
    expect(rotated.wait.history.filter((e) => e.what === "token_issued")).toHaveLength(2);
    expect(await codeOf(h.store.completeByToken(t, { outcome: "success" }))).toBe("token_invalid");
    expect(await codeOf(h.store.rotateToken("globex", wait.id))).toBe("not_found");
    const done = await h.store.completeByToken(rotated.token, { outcome: "success" });
    expect(done.state).toBe("resolved");
    expect(await codeOf(h.store.rotateToken("acme", wait.id))).toBe("not_waiting");
  });

  it("a wait registered without a token gets its first one by rotation", async () => {
    const h = makeStore();
    const { wait, token } = await h.store.register("acme", spec("run-1"));
    expect(token).toBeUndefined();
    expect(wait.token).toBeNull();
    const { token: issued } = await h.store.rotateToken(null, wait.id);
    expect((await h.store.completeByToken(issued, { outcome: "success" })).resolution?.kind).toBe("token");
  });

  it("used twice concurrently by 20 callers: exactly one completes", async () => {
    const h = makeStore();
    for (let round = 0; round < 5; round++) {
      const { wait, token } = await h.store.register("acme", spec(`run-${round}`, { token: true, timeoutMs: 60_000 }));
      const answers = await Promise.all(
        Array.from({ length: 20 }, (_, i) =>
          codeOf(
            i % 2 === 0
              ? h.store.completeByToken(token as string, { outcome: "success", payload: { i } })
              : h.store.completeByToken(token as string, { outcome: "failure", error: { message: `e${i}` } }),
          ),
        ),
      );
      expect(answers.filter((a) => a === "ok")).toHaveLength(1);
      expect(answers.filter((a) => a === "not_waiting")).toHaveLength(19);
      const after = (await h.store.getWait("acme", wait.id)) as Wait;
      expect(after.state).toBe("resolved");
      expect(after.history.filter((e) => e.what === "resolved")).toHaveLength(1);
      expect(await outboxEntriesFor(h, wait.id)).toBe(1);
    }
  });

  it("after the timeout is refused and changes nothing; past the deadline before it, too", async () => {
    const h = makeStore();
    const { wait, token } = await h.store.register("acme", spec("run-1", { token: true, timeoutMs: 100 }));
    h.tick(101);
    // the deadline has passed; no scheduler has run: left to its timeout
    const pending = await rawRecord(h, wait.id);
    expect(await codeOf(h.store.completeByToken(token as string, { outcome: "success" }))).toBe("deadline_passed");
    expect(await rawRecord(h, wait.id)).toBe(pending);
    expect((await h.store.timeout(wait.id)).outcome).toBe("timed_out");
    const settled = await rawRecord(h, wait.id);
    for (const call of [
      h.store.completeByToken(token as string, { outcome: "success", payload: { late: true } }),
      h.store.completeByToken(token as string, { outcome: "failure", error: { message: "late" } }),
      h.store.heartbeatByToken(token as string),
    ]) {
      expect(await codeOf(call)).toBe("not_waiting");
    }
    expect(await rawRecord(h, wait.id)).toBe(settled);
    expect(await outboxEntriesFor(h, wait.id)).toBe(1);
    expect((await h.store.getWait("acme", wait.id))?.state).toBe("timed_out");
  });
});

describe("completion tokens after retention", () => {
  it("a settled wait removed after retention: its token is token_invalid, nothing is created", async () => {
    const h = makeStore({ partitions: 1, retentionMs: 1000 });
    const { wait, token } = await h.store.register("acme", spec("run-1", { token: true, heartbeatMs: 1000 }));
    await h.store.completeByToken(token as string, { outcome: "success" });
    h.tick(1001);
    await h.store.expire(0);
    expect(await h.store.getWait("acme", wait.id)).toBeNull();
    expect(await codeOf(h.store.completeByToken(token as string, { outcome: "success" }))).toBe("token_invalid");
    expect(await codeOf(h.store.heartbeatByToken(token as string))).toBe("token_invalid");
    expect(await codeOf(h.store.heartbeat("acme", wait.id))).toBe("not_found");
    expect(await codeOf(h.store.rotateToken("acme", wait.id))).toBe("not_found");
    expect(await rawRecord(h, wait.id)).toBeNull();
  });
});

describe("failure by direct delivery", () => {
  it("carries outcome and error; a plain delivery is a success", async () => {
    const h = makeStore();
    const { wait: a } = await h.store.register("acme", spec("run-a"));
    const { wait: b } = await h.store.register("acme", spec("run-b"));
    await h.store.deliver("acme", {
      eventType: "human.approval",
      correlationId: a.correlationId,
      outcome: "failure",
      error: { message: "rejected" },
    });
    await h.store.deliver("acme", { eventType: "human.approval", correlationId: b.correlationId });
    const fa = (await h.store.getWait("acme", a.id)) as Wait;
    expect(fa.resolution).toMatchObject({ kind: "deliver", outcome: "failure", error: { message: "rejected" } });
    expect(fa.history.at(-1)).toMatchObject({ what: "resolved", kind: "deliver", outcome: "failure" });
    const fb = (await h.store.getWait("acme", b.id)) as Wait;
    expect(fb.resolution).toMatchObject({ kind: "deliver", outcome: "success" });
    expect(fb.resolution?.error).toBeUndefined();
  });
});

describe("heartbeats", () => {
  it("move the deadline to now + heartbeatMs, and the timeout follows", async () => {
    const h = makeStore();
    const { wait } = await h.store.register("acme", spec("run-1", { heartbeatMs: 1000, timeoutMs: 500 }));
    expect(wait.deadline).toBe(new Date(h.clock.now + 500).toISOString());
    expect(wait.heartbeat).toEqual({ intervalMs: 1000, count: 0, lastAt: null });
    h.tick(400);
    const beat = await h.store.heartbeat("acme", wait.id);
    expect(beat.deadline).toBe(new Date(h.clock.now + 1000).toISOString());
    expect(beat.heartbeat).toEqual({ intervalMs: 1000, count: 1, lastAt: new Date(h.clock.now).toISOString() });
    expect(beat.history.at(-1)).toMatchObject({ what: "heartbeat", by: "host", deadline: beat.deadline });
    // the registered entry keeps the registration's deadline
    expect(beat.history[0]).toMatchObject({ what: "registered", deadline: wait.deadline });
    expect(await deadlineScore(h, wait.id)).toBe(String(h.clock.now + 1000));
    h.tick(200); // past the first deadline
    expect((await h.store.timeout(wait.id)).outcome).toBe("not_due");
    h.tick(800); // at the new one
    const t = await h.store.timeout(wait.id);
    expect(t.outcome).toBe("timed_out");
    if (t.outcome === "timed_out") expect(t.wait.resolution?.deadline).toBe(beat.deadline);
  });

  it("without a timeout, the first deadline is registration + heartbeatMs; heartbeatMs is part of the definition", async () => {
    const h = makeStore();
    const { wait } = await h.store.register("acme", spec("run-1", { heartbeatMs: 2000 }));
    expect(wait.deadline).toBe(new Date(h.clock.now + 2000).toISOString());
    expect(await codeOf(h.store.register("acme", spec("run-1", { heartbeatMs: 3000 })))).toBe("wait_conflict");
    expect(await codeOf(h.store.register("acme", spec("run-1")))).toBe("wait_conflict");
    expect((await h.store.register("acme", spec("run-1", { heartbeatMs: 2000 }))).created).toBe(false);
  });

  it("a heartbeat after the deadline in force is late even before the timeout commits; on a settled wait it is refused", async () => {
    const h = makeStore();
    const { wait, token } = await h.store.register("acme", spec("run-1", { heartbeatMs: 1000, token: true }));
    h.tick(1000); // at the deadline: still on time
    const beat = await h.store.heartbeatByToken(token as string);
    expect(beat.history.at(-1)).toMatchObject({ what: "heartbeat", by: "token" });
    h.tick(1001); // 1 ms past it
    const before = await rawRecord(h, wait.id);
    expect(await codeOf(h.store.heartbeat("acme", wait.id))).toBe("deadline_passed");
    expect(await codeOf(h.store.heartbeatByToken(token as string))).toBe("deadline_passed");
    expect(await rawRecord(h, wait.id)).toBe(before);
    expect((await h.store.timeout(wait.id)).outcome).toBe("timed_out");
    expect(await codeOf(h.store.heartbeat("acme", wait.id))).toBe("not_waiting");
  });

  it("refuses a wait without heartbeatMs, and another tenant's wait", async () => {
    const h = makeStore();
    const { wait } = await h.store.register("acme", spec("run-1", { timeoutMs: 1000 }));
    expect(await codeOf(h.store.heartbeat("acme", wait.id))).toBe("heartbeat_disabled");
    const { wait: hb } = await h.store.register("acme", spec("run-2", { heartbeatMs: 1000 }));
    expect(await codeOf(h.store.heartbeat("globex", hb.id))).toBe("not_found");
    expect(await codeOf(h.store.heartbeat(null, hb.id))).toBe("ok");
  });

  it("an event accepted before a heartbeat moved the deadline is on time", async () => {
    const h = makeStore();
    const { wait } = await h.store.register("acme", spec("run-1", { heartbeatMs: 1000 }));
    h.tick(500);
    const [ingested] = await h.store.ingest("acme", "svc", [
      { id: "e1", type: "human.approval", correlationId: wait.correlationId },
    ]);
    h.tick(400);
    await h.store.heartbeat("acme", wait.id);
    h.tick(10);
    const partition = h.store.keys.waitPartition(wait.id) as number;
    if (!ingested || ingested.status === "rejected") throw new Error("not ingested");
    const [m] = await h.store.match(partition, [
      { streamId: ingested.event.streamId, eventKey: h.store.keys.eventKey("acme", "svc", "e1") },
    ]);
    expect(m).toMatchObject({ status: "matched" });
    expect((await h.store.getWait("acme", wait.id))?.resolution).toMatchObject({ kind: "event", outcome: "success" });
  });

  it("an event accepted after a heartbeat is judged by the deadline that heartbeat set (nearer or further)", async () => {
    const h = makeStore();
    const nearer = (await h.store.register("acme", spec("run-n", { heartbeatMs: 1000, timeoutMs: 5000 }))).wait;
    const further = (await h.store.register("acme", spec("run-f", { heartbeatMs: 1000, timeoutMs: 500 }))).wait;
    h.tick(100);
    await h.store.heartbeat("acme", nearer.id); // deadline T0 + 1100 (was T0 + 5000)
    await h.store.heartbeat("acme", further.id); // deadline T0 + 1100 (was T0 + 500)
    h.tick(950); // T0 + 1050: past the registration's 500, before the 1100 the heartbeat set
    const onTime = await h.store.ingest("acme", "svc", [
      { id: "f1", type: "human.approval", correlationId: further.correlationId },
    ]);
    h.tick(100); // T0 + 1150: past the 1100 the heartbeat set, before the registration's 5000
    const late = await h.store.ingest("acme", "svc", [
      { id: "n1", type: "human.approval", correlationId: nearer.correlationId },
    ]);
    for (const [batch, id] of [
      [late, "n1"],
      [onTime, "f1"],
    ] as const) {
      const r = batch[0];
      if (!r || r.status === "rejected") throw new Error("not ingested");
      const wait = id === "n1" ? nearer : further;
      await h.store.match(h.store.keys.waitPartition(wait.id) as number, [
        { streamId: r.event.streamId, eventKey: h.store.keys.eventKey("acme", "svc", id) },
      ]);
    }
    const n = (await h.store.getWait("acme", nearer.id)) as Wait;
    expect(n.state).toBe("waiting");
    expect(n.lateEvents.map((e) => e.id)).toEqual(["n1"]);
    const f = (await h.store.getWait("acme", further.id)) as Wait;
    expect(f.resolution).toMatchObject({ kind: "event", event: { id: "f1" } });
  });

  it("race the timeout over 200 waits: each ends in exactly one state, consistent with the rule", async () => {
    const h = makeStore({ partitions: 8 }, false); // the Redis clock
    const N = 200;
    const ids: string[] = [];
    const registered = new Map<string, number>();
    for (let i = 0; i < N; i++) {
      const { wait } = await h.store.register(
        "acme",
        spec(`race-${i}`, { heartbeatMs: 1000, timeoutMs: 300 + (i % 10) * 10 }),
      );
      ids.push(wait.id);
      registered.set(wait.id, Date.parse(wait.deadline as string));
    }
    let seed = Number(process.env.RENDEZVOUS_SEED ?? 42);
    console.log(`heartbeat race: seed ${seed} (RENDEZVOUS_SEED replays it)`);
    const random = () => {
      seed = (seed * 1103515245 + 12345) % 2147483648;
      return seed / 2147483648;
    };
    const accepted = new Map<string, number>(ids.map((id) => [id, 0]));
    // each wait: heartbeats now and then until its own stop time, then one heartbeat aimed
    // 25 ms before to 5 ms after the deadline in force (a round takes a few ms), while
    // every round also tries to time every wait out: heartbeat and timeout race at the deadline
    const started = Date.now();
    const plan = new Map(
      ids.map((id) => [
        id,
        {
          stopAt: started + random() * 900,
          deadline: registered.get(id) as number,
          aimed: false,
          aim: 0,
          aimedAnswer: "",
        },
      ]),
    );
    const aimed = new Map<string, number>();
    while (Date.now() < started + 2600) {
      const now = Date.now();
      const beats: string[] = [];
      for (const [id, p] of plan) {
        if (p.aimed) continue;
        if (now < p.stopAt) {
          if (random() < 0.15) beats.push(id);
        } else {
          if (p.aim === 0) p.aim = p.deadline - 25 + random() * 30;
          if (now >= p.aim) {
            p.aimed = true;
            beats.push(id);
          }
        }
      }
      const [answers] = await Promise.all([
        Promise.all(
          beats.map((id) =>
            h.store.heartbeat("acme", id).then(
              (w) => w,
              (e: unknown) => e,
            ),
          ),
        ),
        h.store.timeoutMany(ids),
      ]);
      answers.forEach((a, i) => {
        const id = beats[i] as string;
        const p = plan.get(id);
        if (!p) return;
        const code = isRendezvousError(a) ? a.code : "ok";
        if (code === "ok") {
          accepted.set(id, (accepted.get(id) ?? 0) + 1);
          p.deadline = Date.parse((a as Wait).deadline as string);
        } else expect(["deadline_passed", "not_waiting"], code).toContain(code);
        if (p.aimed && p.aimedAnswer === "") {
          p.aimedAnswer = code;
          aimed.set(code, (aimed.get(code) ?? 0) + 1);
        }
      });
      await new Promise((r) => setTimeout(r, 1 + random() * 3));
    }
    console.log(`heartbeat race: the aimed heartbeats were answered ${JSON.stringify(Object.fromEntries(aimed))}`);
    // the race went both ways at the deadline
    expect(aimed.get("ok") ?? 0).toBeGreaterThan(0);
    expect((aimed.get("deadline_passed") ?? 0) + (aimed.get("not_waiting") ?? 0)).toBeGreaterThan(0);
    // then no more heartbeats: every wait times out at the deadline its last heartbeat set
    await new Promise((r) => setTimeout(r, 1100));
    const final = await h.store.timeoutMany(ids);
    expect(final.every((r) => r.outcome === "timed_out" || r.outcome === "not_waiting")).toBe(true);
    let raced = 0;
    for (const id of ids) {
      const w = (await h.store.getWait("acme", id)) as Wait;
      expect(w.state).toBe("timed_out");
      const resolved = w.history.filter((e) => e.what === "resolved");
      expect(resolved).toHaveLength(1);
      const beats = w.history.filter((e) => e.what === "heartbeat");
      expect(beats).toHaveLength(accepted.get(id) ?? -1);
      expect(w.heartbeat?.count).toBe(beats.length);
      // each heartbeat at or before the deadline in force, each timeout at or after the last deadline
      let inForce = Date.parse(w.createdAt) + (Date.parse(w.history[0]?.deadline as string) - Date.parse(w.createdAt));
      for (const b of beats) {
        expect(Date.parse(b.at)).toBeLessThanOrEqual(inForce);
        inForce = Date.parse(b.deadline as string);
        expect(inForce).toBe(Date.parse(b.at) + 1000);
      }
      const res = w.resolution;
      expect(res?.kind).toBe("timeout");
      expect(Date.parse(res?.deadline as string)).toBe(inForce);
      expect(Date.parse(res?.at as string)).toBeGreaterThanOrEqual(inForce);
      expect(w.deadline).toBe(res?.deadline);
      expect(await deadlineScore(h, id)).toBeNull();
      expect(await outboxEntriesFor(h, id)).toBe(1);
      if (beats.length > 0) raced++;
    }
    // the race did happen both ways
    expect(raced).toBeGreaterThan(0);
    expect(raced).toBeLessThan(N);
  }, 20_000);
});
