/**
 * `npm run console:screenshots`: starts `rendezvous start` (embedded redis-server in a
 * temporary directory, a config with two tenants), seeds waits and events over HTTP,
 * and captures each console page with headless Chromium (the Debian `chromium`
 * package through playwright-core) into docs/screenshots/console-*.png.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { chromium, type Page } from "playwright-core";

const root = fileURLToPath(new URL("../../../", import.meta.url));
const out = join(root, "docs/screenshots");
const ADMIN = "adm_screenshots";
const HOST = "hk_acme_screenshots";
const PRODUCER = "pk_billing_screenshots";
const config = {
  partitions: 8,
  adminToken: ADMIN,
  tenants: {
    acme: { hostKeys: [HOST], producers: { billing: { keys: [PRODUCER], eventTypes: ["order.*", "invoice.*"] } } },
    globex: {
      hostKeys: ["hk_globex_screenshots"],
      producers: { shop: { keys: ["pk_shop"], eventTypes: ["order.*"] } },
    },
  },
  eventTypes: {
    "order.paid": {
      payloadSchema: { type: "object", required: ["amount"], properties: { amount: { type: "number" } } },
    },
  },
};

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function start(dir: string): Promise<{ url: string; child: ChildProcess }> {
  const file = join(dir, "config.json");
  writeFileSync(file, JSON.stringify(config));
  const child = spawn(
    process.execPath,
    [join(root, "packages/server/bin/rendezvous.js"), "start", "--config", file, "--port", "0"],
    {
      cwd: dir,
      env: { ...process.env, LOG_LEVEL: "info", RENDEZVOUS_PREFIX: "shots" },
      stdio: ["ignore", "pipe", "pipe"],
    },
  );
  let text = "";
  const url = await new Promise<string>((resolve, reject) => {
    const onData = (d: Buffer) => {
      text += d.toString();
      const m = /listening on (http:\/\/127\.0\.0\.1:\d+)/.exec(text);
      if (m) resolve(m[1] as string);
    };
    child.stdout?.on("data", onData);
    child.stderr?.on("data", onData);
    child.once("exit", () => reject(new Error(`rendezvous exited:\n${text}`)));
  });
  return { url, child };
}

async function api(url: string, method: string, path: string, token: string, body?: unknown, producer?: string) {
  const headers: Record<string, string> = { authorization: `Bearer ${token}` };
  if (producer) headers["rendezvous-producer"] = producer;
  if (body !== undefined) headers["content-type"] = "application/json";
  const r = await fetch(`${url}${path}`, {
    method,
    headers,
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: r.status, body: (await r.json()) as { wait: { id: string } } };
}

async function seed(url: string): Promise<{ mismatch: string; resolved: string }> {
  const wait = (
    runId: string,
    position: string,
    correlationId: string,
    eventType = "order.paid",
    timeoutMs = 3_600_000,
  ) => api(url, "POST", "/v1/waits", HOST, { runId, position, eventType, correlationId, timeoutMs });
  const publish = (id: string, type: string, correlationId: string, payload: Record<string, unknown>) =>
    api(url, "POST", "/v1/events", PRODUCER, { id, type, correlationId, payload }, "acme/billing");

  for (let i = 0; i < 24; i++) await wait(`order-${1000 + i}`, "charge#1", `pay_${1000 + i}`);
  for (let i = 0; i < 6; i++) await wait(`order-${2000 + i}`, "ship#1", `shp_${2000 + i}`, "order.shipped");
  for (let i = 0; i < 4; i++) await wait(`order-${3000 + i}`, "invoice#1", `inv_${3000 + i}`, "invoice.settled", 1500);
  await api(url, "POST", "/v1/waits?tenant=globex", ADMIN, {
    runId: "g-1",
    position: "a#1",
    eventType: "order.paid",
    correlationId: "g_1",
  });
  const mismatch = (await wait("order-4242", "charge#1", "pay_4242")).body.wait;
  const resolved = (await wait("order-4343", "charge#1", "pay_4343")).body.wait;
  // traffic for the charts: matches, duplicates, refusals, a near miss
  for (let round = 0; round < 5; round++) {
    for (let i = 0; i < 4; i++) {
      const n = 1000 + round * 4 + i;
      await publish(`evt-${n}`, "order.paid", `pay_${n}`, { amount: n });
      if (i % 2 === 0) await publish(`evt-${n}`, "order.paid", `pay_${n}`, { amount: n });
    }
    await publish(`evt-bad-${round}`, "order.paid", `pay_x${round}`, { amount: "ten" });
    await sleep(1100);
  }
  await publish("evt-4242-typo", "order.paid", "pay_4224", { amount: 4242 });
  await publish("evt-4343", "order.paid", "pay_4343", { amount: 4343, currency: "EUR" });
  await api(url, "POST", `/v1/waits/${resolved.id}/consume`, HOST, { worker: "worker-7" });
  await sleep(2500);
  return { mismatch: mismatch.id, resolved: resolved.id };
}

async function shoot(
  page: Page,
  url: string,
  name: string,
  ready: () => Promise<unknown>,
  fullPage = true,
): Promise<void> {
  await page.goto(url);
  await ready();
  await sleep(300);
  await page.screenshot({ path: join(out, `console-${name}.png`), fullPage });
  process.stderr.write(`  docs/screenshots/console-${name}.png\n`);
}

async function main(): Promise<void> {
  mkdirSync(out, { recursive: true });
  const dir = mkdtempSync(join(tmpdir(), "rdv-shots-"));
  const profile = mkdtempSync(join(tmpdir(), "rdv-shots-chromium-"));
  const { url, child } = await start(dir);
  try {
    const { mismatch, resolved } = await seed(url);
    const context = await chromium.launchPersistentContext(profile, {
      executablePath: process.env.CHROMIUM_PATH ?? "/usr/bin/chromium",
      headless: true,
      args: ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking"],
      viewport: { width: 1280, height: 800 },
      httpCredentials: { username: "admin", password: ADMIN },
    });
    const page = await context.newPage();
    await shoot(page, `${url}/console/`, "signin", () => page.getByLabel("Admin token or host key").waitFor());
    await page.getByLabel("Admin token or host key").fill(ADMIN);
    await page.getByRole("button", { name: "Sign in" }).click();
    await page.getByTestId("identity").waitFor();
    await sleep(4500); // a few samples for the charts
    await shoot(page, `${url}/console/`, "overview", () => page.getByText("Waits by state").waitFor());
    await shoot(page, `${url}/console/waits?tenant=acme&limit=15`, "waits", () =>
      page.locator("tbody tr").first().waitFor(),
    );
    await shoot(page, `${url}/console/waits/${mismatch}`, "wait-mismatch", () =>
      page.getByRole("table", { name: "Near-miss events" }).waitFor(),
    );
    await shoot(page, `${url}/console/waits/${resolved}`, "wait-resolved", () =>
      page.getByRole("link", { name: "Open the job in Bull Board" }).waitFor(),
    );
    await shoot(page, `${url}/console/events/acme/billing/evt-4343`, "event", () =>
      page.getByTestId("event-status").waitFor(),
    );
    await shoot(page, `${url}/console/rejections`, "rejections", () => page.locator("tbody tr").first().waitFor());
    // Bull Board's header menu holds the link back to the console
    await shoot(
      page,
      `${url}/admin/queues/queue/continuations.acme`,
      "bull-board",
      async () => {
        await page.locator('header [aria-haspopup="menu"]').last().click();
        await page.getByRole("menuitem", { name: "Rendezvous console" }).waitFor();
      },
      false,
    );
    await context.close();
  } finally {
    child.kill("SIGTERM");
    await new Promise((r) => child.once("exit", r));
    rmSync(dir, { recursive: true, force: true });
    rmSync(profile, { recursive: true, force: true });
  }
}

await main();
