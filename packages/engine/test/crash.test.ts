import { spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import { redisUrl } from "@rendezvous/testkit";
import { describe, expect, it } from "vitest";
import { event, makeStore } from "./helpers.js";

const child = fileURLToPath(new URL("./fixtures/ingest-child.ts", import.meta.url));

function runChild(args: string[], env: Record<string, string>) {
  return new Promise<{ code: number | null; signal: NodeJS.Signals | null; stdout: string; stderr: string }>(
    (resolve) => {
      const p = spawn(process.execPath, ["--conditions=@rendezvous/source", "--import", "tsx", child, ...args], {
        env: { ...process.env, ...env },
        stdio: ["ignore", "pipe", "pipe"],
      });
      let stdout = "";
      let stderr = "";
      p.stdout.on("data", (d) => {
        stdout += d;
      });
      p.stderr.on("data", (d) => {
        stderr += d;
      });
      p.on("exit", (code, signal) => resolve({ code, signal, stdout, stderr }));
    },
  );
}

describe("failpoint ingest.after-append (real process, SIGKILL)", () => {
  it("a producer retry after the crash appends nothing twice: it is a duplicate of the stream entry", async () => {
    const h = makeStore({}, false);
    const crashed = await runChild([redisUrl(), h.prefix, "e1"], {
      RENDEZVOUS_FAILPOINTS: "ingest.after-append=crash",
    });
    expect(crashed.signal).toBe("SIGKILL");
    expect(crashed.stderr).toContain("failpoint ingest.after-append");
    expect(crashed.stdout).toBe("");

    const k = h.store.keys;
    const stream = k.partition(k.matchPartition("acme", "job.done", "job-1")).stream;
    const ek = k.eventKey("acme", "svc", "e1");
    const claim = await h.redis.hget(k.partition(k.eventPartition("acme", "svc", "e1")).events, `d:${ek}`);
    expect(claim).toMatch(/\|/); // claimed, then appended; the process died before answering
    const entries = await h.redis.xrange(stream, "-", "+");
    expect(entries).toHaveLength(1);

    const [retry] = await h.store.ingest("acme", "svc", [event("e1", "job-1", { payload: { ok: true } })]);
    expect(retry).toMatchObject({ status: "duplicate", event: { streamId: entries[0]?.[0] } });
    expect(await h.redis.xlen(stream)).toBe(1);
    const [again] = await h.store.ingest("acme", "svc", [event("e1", "job-1", { payload: { ok: true } })]);
    expect(again?.status).toBe("duplicate");

    const clean = await runChild([redisUrl(), h.prefix, "e2"], {});
    expect(clean.code).toBe(0);
    expect(JSON.parse(clean.stdout)[0].status).toBe("accepted");
  });
});
