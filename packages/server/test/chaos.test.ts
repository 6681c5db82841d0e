/**
 * CI's chaos run (issue #8): `chaos/run.ts --duration 60s` as a child process — its own
 * redis-server (AOF, appendfsync always), the roles as separate processes SIGKILLed
 * and restarted every few seconds, Redis restarted from its AOF, the mixed workload —
 * and its report must show zero violations. The seed is printed (RENDEZVOUS_SEED
 * replays it); the report's text is printed on failure.
 */
import { spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { seedFromEnv } from "@rendezvous/testkit";
import { describe, expect, it } from "vitest";

const root = fileURLToPath(new URL("../../..", import.meta.url));
const tsx = join(root, "node_modules", "tsx", "dist", "cli.mjs");

describe("chaos: 60 s of SIGKILLs and Redis restarts", () => {
  it("nothing is lost and nothing advances twice (zero violations in the report)", async () => {
    const seed = seedFromEnv("chaos");
    const dir = mkdtempSync(join(tmpdir(), "rdv-chaos-ci-"));
    const report = join(dir, "report.json");
    const child = spawn(
      process.execPath,
      [
        tsx,
        "--tsconfig",
        "tsconfig.source.json",
        "chaos/run.ts",
        "--duration",
        "60s",
        "--seed",
        String(seed),
        "--report",
        report,
      ],
      { cwd: root, stdio: ["ignore", "pipe", "pipe"] },
    );
    let out = "";
    child.stdout.on("data", (d) => {
      out += d.toString();
    });
    child.stderr.on("data", (d) => {
      out += d.toString();
    });
    const code = await new Promise<number | null>((resolve) => child.once("exit", (c) => resolve(c)));
    try {
      expect(code, out.slice(-20_000)).toBe(0);
      const r = JSON.parse(readFileSync(report, "utf8"));
      expect(r.format).toBe("rendezvous-chaos/1");
      expect(r.ok).toBe(true);
      expect(r.violations).toEqual([]);
      expect(r.settings.workloadErrors).toEqual([]);
      for (const n of Object.values(r.violationCounts)) expect(n).toBe(0);
      // the run did what it claims: faults of every kind and every outcome
      expect(r.faults.redisRestarts).toBeGreaterThanOrEqual(1);
      expect(
        Object.values(r.faults.roleKills as Record<string, number>).reduce((a, b) => a + b, 0),
      ).toBeGreaterThanOrEqual(5);
      expect(r.counts.waits.registered).toBeGreaterThan(100);
      expect(r.counts.waits.resolvedByEvent).toBeGreaterThan(0);
      expect(r.counts.waits.timedOut).toBeGreaterThan(0);
      expect(r.counts.waits.cancelled).toBeGreaterThan(0);
      expect(r.counts.events.duplicate).toBeGreaterThan(0);
      expect(r.counts.events.late).toBeGreaterThan(0);
      expect(r.counts.events.buffered).toBeGreaterThan(0);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 300_000);
});
