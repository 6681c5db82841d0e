/**
 * The console's tenants page in headless Chromium against a real `rendezvous start`:
 * tenants, their usage against their quotas (from the config file or the registry),
 * producers and key ids with their last use, never a key or secret; only the admin sees it.
 */
import type { Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Browser, ensureConsoleBuilt, launchBrowser, signIn } from "./console-browser.js";
import { bearer, client, type Started, startServer } from "./e2e-helpers.js";

const ADMIN = "adm_console_tenants_test";
const HOST = "hk_acme_console_tenants";
const PRODUCER_KEY = "pk_billing_console_tenants";
const CONFIG = {
  partitions: 4,
  adminToken: ADMIN,
  quotas: { bufferedEvents: 500 },
  tenants: {
    acme: {
      hostKeys: [HOST],
      producers: { billing: { keys: [PRODUCER_KEY], eventTypes: ["order.*"] } },
      quotas: { waitingWaits: 10, hostRequestsPerSec: 50 },
    },
  },
};
const P = { timeout: 15_000, interval: 100 };
let server: Started;
let browser: Browser;

beforeAll(async () => {
  ensureConsoleBuilt();
  server = await startServer({ config: CONFIG });
  browser = await launchBrowser();
}, 60_000);

afterAll(async () => {
  await browser?.close();
  await server?.proc.terminate();
});

describe("console tenants page", () => {
  it("lists tenants, producers and key ids with their last use; never a key or a secret", async () => {
    const admin = client(server.url, bearer(ADMIN));
    expect((await admin.post("/v1/admin/tenants", { name: "globex" })).status).toBe(201);
    const made = await admin.post("/v1/admin/tenants/globex/producers", {
      id: "shop",
      eventTypes: ["cart.*"],
      credentials: ["key", "secret"],
    });
    expect(made.status, made.text).toBe(201);
    const keyId = made.body.producer.keys[0].id as string;
    // a use of the host key shows as its last use
    expect((await client(server.url, bearer(HOST)).get("/v1/waits?limit=1")).status).toBe(200);

    const page: Page = await browser.context.newPage();
    await signIn(page, server.url, ADMIN, "/tenants");
    const table = page.getByRole("table", { name: "Tenants" });
    await expect.poll(() => table.textContent(), P).toContain("globex");
    const text = (await table.textContent()) as string;
    expect(text).toContain("acme");
    expect(text).toContain("billing");
    expect(text).toContain("shop");
    expect(text).toContain(keyId);
    expect(text).toContain("cart.*");
    await expect.poll(async () => (await table.textContent())?.match(/last used (?!never)/) !== null, P).toBe(true);
    const html = await page.content();
    for (const secret of [HOST, PRODUCER_KEY, ADMIN, made.body.key, made.body.secret])
      expect(html).not.toContain(secret);
    await page.close();
  });

  it("shows each tenant's usage against its quotas, from the file or set through the API, following changes", async () => {
    const admin = client(server.url, bearer(ADMIN));
    const made = await admin.post("/v1/admin/tenants", { name: "initech", limits: { waitingWaits: 1 } });
    expect(made.status, made.text).toBe(201);
    const key = (await admin.post("/v1/admin/tenants/initech/host-keys", {})).body.key as string;
    const host = client(server.url, bearer(key));
    await expect.poll(async () => (await host.get("/v1/tenant/usage")).status, P).toBe(200);
    const wait = { position: "p", eventType: "order.paid", correlationId: "c-1" };
    expect((await host.post("/v1/waits", { runId: "r1", ...wait })).status).toBe(201);
    const acmeWaits = (await client(server.url, bearer(HOST)).get("/v1/tenant/usage")).body.usage.quotas.waitingWaits;

    const page: Page = await browser.context.newPage();
    await signIn(page, server.url, ADMIN, "/tenants");
    const usage = (tenant: string) => page.getByRole("list", { name: `usage of ${tenant}` });
    // the config tenant: its file quotas over the file's defaults
    await expect.poll(() => usage("acme").textContent(), P).toContain(`waiting waits ${acmeWaits.usage} / 10`);
    let acme = (await usage("acme").textContent()) as string;
    expect(acme).toContain("buffered events 0 / 500");
    expect(acme).toContain("host requests 50/s");
    expect(acme).toContain("producer events no limit");
    // the tenant made through the API: at its quota
    await expect.poll(() => usage("initech").textContent(), P).toContain("waiting waits 1 / 1");
    expect(await usage("initech").textContent()).toContain("at quota");
    // a limit changed through the API shows at the page's next refresh
    const patched = await admin.patch("/v1/admin/tenants/initech", {
      limits: { waitingWaits: 5, producerEventsPerSec: 20 },
    });
    expect(patched.status).toBe(200);
    await expect
      .poll(() => usage("initech").textContent(), { timeout: 15_000, interval: 250 })
      .toContain("waiting waits 1 / 5");
    const initech = (await usage("initech").textContent()) as string;
    expect(initech).toContain("producer events 20/s");
    expect(initech).not.toContain("at quota");
    acme = (await usage("acme").textContent()) as string;
    expect(acme).toContain("/ 10");
    expect(await page.content()).not.toContain(key);
    await page.close();
  });

  it("a host key does not get the page", async () => {
    const page: Page = await browser.context.newPage();
    await signIn(page, server.url, HOST, "/tenants");
    await expect.poll(() => page.getByRole("heading", { name: "Tenants" }).count(), P).toBe(1);
    expect(await page.getByText("The tenants page needs the admin token.").count()).toBe(1);
    expect(await page.getByRole("link", { name: "Tenants" }).count()).toBe(0);
    await page.close();
  });
});
