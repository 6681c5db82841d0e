/**
 * `npm test`'s pretest hook (packages/testkit/scripts/preflight.mjs), run as npm runs it:
 * a real `node` process with a PATH made of fake programs, so each one can be left out.
 * Missing one: exit 1 and exactly one line naming it with the install line. All there: exit 0,
 * nothing printed. On this machine (and in CI, after .ci/run's installs) it passes as is.
 */
import { spawnSync } from "node:child_process";
import { chmodSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, describe, expect, it } from "vitest";

const script = fileURLToPath(new URL("../scripts/preflight.mjs", import.meta.url));
const root = fileURLToPath(new URL("../../../", import.meta.url));
const INSTALL = "apt-get install -y redis-server chromium docker-compose";
const dirs: string[] = [];

/** A directory holding executable stand-ins for `names`, and a fake chromium. */
function fakes(names: string[]): { path: string; chromium: string } {
  const dir = mkdtempSync(join(tmpdir(), "rdv-preflight-"));
  dirs.push(dir);
  for (const name of [...names, "chromium"]) {
    writeFileSync(join(dir, name), "#!/bin/sh\nexit 0\n");
    chmodSync(join(dir, name), 0o755);
  }
  return { path: dir, chromium: join(dir, "chromium") };
}

function preflight(env: Record<string, string | undefined>) {
  const r = spawnSync(process.execPath, [script], { env: env as NodeJS.ProcessEnv, encoding: "utf8", timeout: 10_000 });
  return { status: r.status, out: `${r.stdout}${r.stderr}`, stderr: r.stderr };
}

afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

describe("npm test's preflight", () => {
  it("is npm's pretest hook", () => {
    const pkg = JSON.parse(readFileSync(join(root, "package.json"), "utf8")) as { scripts: Record<string, string> };
    expect(pkg.scripts.pretest).toBe("node packages/testkit/scripts/preflight.mjs");
  });

  it("passes silently when redis-server, chromium and docker-compose are there", () => {
    const f = fakes(["redis-server", "docker-compose"]);
    expect(preflight({ PATH: f.path, CHROMIUM_PATH: f.chromium })).toEqual({ status: 0, out: "", stderr: "" });
  });

  it("stops with one line naming docker-compose and the install line when docker-compose is absent", () => {
    const f = fakes(["redis-server"]);
    const r = preflight({ PATH: f.path, CHROMIUM_PATH: f.chromium });
    expect(r.status).toBe(1);
    expect(r.out).toBe(r.stderr);
    expect(r.stderr.trimEnd().split("\n")).toHaveLength(1);
    expect(r.stderr).toMatch(/^npm test: docker-compose missing; install first: /);
    expect(r.stderr).toContain(INSTALL);
  });

  it("names every missing program in its one line (a non-executable file does not count)", () => {
    const f = fakes([]);
    writeFileSync(join(f.path, "redis-server"), "not a program");
    chmodSync(join(f.path, "redis-server"), 0o644);
    const r = preflight({ PATH: f.path, CHROMIUM_PATH: join(f.path, "no-chromium") });
    expect(r.status).toBe(1);
    expect(r.stderr.trimEnd().split("\n")).toHaveLength(1);
    expect(r.stderr).toMatch(
      /^npm test: redis-server, chromium \(CHROMIUM_PATH=[^)]*no-chromium\), docker-compose missing/,
    );
    expect(r.stderr).toContain(INSTALL);
  });

  it("passes on this machine as it is", () => {
    expect(preflight(process.env)).toMatchObject({ status: 0, out: "" });
  });
});
