/**
 * The console's tenants page in headless Chromium against a real `rendezvous start`:
 * tenants, producers and key ids with their last use, never a key or secret; only
 * the admin sees it.
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
  tenants: { acme: { hostKeys: [HOST], producers: { billing: { keys: [PRODUCER_KEY], eventTypes: ["order.*"] } } } },
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

  it("a host key does not get the page", async () => {
    const page: Page = await browser.context.newPage();
    await signIn(page, server.url, HOST, "/tenants");
    await expect.poll(() => page.getByRole("heading", { name: "Tenants" }).count(), P).toBe(1);
    expect(await page.getByText("The tenants page needs the admin token.").count()).toBe(1);
    expect(await page.getByRole("link", { name: "Tenants" }).count()).toBe(0);
    await page.close();
  });
});
